#include "agent/store_thread.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace jobctl::agent {

struct Call {
  const char* step;
  StoreThread::Work work;
  StoreThread::Done done;
  std::optional<Error> error;
  std::exception_ptr bug;
};

// Shared with the thread, so a thread left behind in a stuck call still
// owns everything it touches.
struct StoreThread::State {
  std::unique_ptr<store::Store> store;
  int event_fd = -1;
  mutable std::mutex mu;
  std::condition_variable wake;     // the thread: work queued, or stop
  std::condition_variable settled;  // the destructor: the thread has ended
  std::deque<Call> queued;
  std::deque<Call> finished;
  std::optional<Running> running;
  size_t outstanding = 0;
  bool stop = false;
  bool ended = false;

  ~State() {
    if (event_fd >= 0) close(event_fd);
  }

  void serve() {
    std::unique_lock lock(mu);
    for (;;) {
      wake.wait(lock, [&] { return stop || !queued.empty(); });
      if (stop) break;
      Call call = std::move(queued.front());
      queued.pop_front();
      running = Running{call.step, Clock::now()};
      lock.unlock();
      try {
        call.work(*store);
      } catch (const Error& e) {
        call.error = e;
      } catch (...) {
        call.bug = std::current_exception();
      }
      call.work = nullptr;  // what it captured goes now, on this thread
      lock.lock();
      running.reset();
      finished.push_back(std::move(call));
      uint64_t one = 1;
      ssize_t n = write(event_fd, &one, sizeof one);
      (void)n;  // a full counter is still readable
    }
    running.reset();
  }
};

StoreThread::StoreThread(std::unique_ptr<store::Store> store) : state_(std::make_shared<State>()) {
  state_->store = std::move(store);
  state_->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (state_->event_fd < 0) throw Error(ExitCode::internal, "eventfd failed for the store thread");
  thread_ = std::thread([s = state_] {
    s->serve();
    {
      std::lock_guard lock(s->mu);
      s->ended = true;
    }
    s->settled.notify_all();
  });
}

StoreThread::~StoreThread() {
  std::unique_lock lock(state_->mu);
  state_->stop = true;
  state_->queued.clear();
  state_->wake.notify_all();
  // The thread finishes the call it is in, then ends; it holds its own
  // reference to the state, so leaving it behind in a stuck call is safe.
  const bool ended = state_->settled.wait_for(lock, leave_after, [&] { return state_->ended; });
  lock.unlock();
  // A thread that ended is joined: its exit frees its thread-local state
  // (OpenSSL's error queue, under a TLS connection) before this process
  // exits, not while LeakSanitizer looks (CI saw 904 bytes of libcrypto
  // "leaked" so, once). One stuck in a call is left behind.
  if (ended)
    thread_.join();
  else
    thread_.detach();
}

void StoreThread::submit(const char* step, Work work, Done done) {
  std::lock_guard lock(state_->mu);
  state_->queued.push_back(Call{step, std::move(work), std::move(done), std::nullopt, nullptr});
  ++state_->outstanding;
  state_->wake.notify_one();
}

int StoreThread::fd() const { return state_->event_fd; }

void StoreThread::deliver() {
  uint64_t count;
  while (read(state_->event_fd, &count, sizeof count) > 0) {
  }
  for (;;) {
    Call call;
    {
      std::lock_guard lock(state_->mu);
      if (state_->finished.empty()) return;
      call = std::move(state_->finished.front());
      state_->finished.pop_front();
      --state_->outstanding;
    }
    if (call.bug) std::rethrow_exception(call.bug);
    if (call.done) call.done(call.error);
  }
}

size_t StoreThread::outstanding() const {
  std::lock_guard lock(state_->mu);
  return state_->outstanding;
}

std::optional<StoreThread::Running> StoreThread::running() const {
  std::lock_guard lock(state_->mu);
  return state_->running;
}

bool StoreThread::settle(Clock::time_point deadline) {
  for (;;) {
    deliver();
    if (outstanding() == 0) return true;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{state_->event_fd, POLLIN, 0};
    poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)) + 1);
  }
}

}  // namespace jobctl::agent
