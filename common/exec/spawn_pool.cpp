#include "common/exec/spawn_pool.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <exception>
#include <utility>

#include "common/util/error.hpp"

namespace jobctl::exec {

SpawnPool::SpawnPool(size_t threads, Start start) : start_(std::move(start)) {
  wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_ < 0) throw Error(ExitCode::internal, "cannot create the job supervisor's eventfd");
  try {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { serve(); });
  } catch (...) {  // no thread to be had: those started end before this throws
    end_threads();
    throw;
  }
}

SpawnPool::~SpawnPool() { end_threads(); }

void SpawnPool::end_threads() {
  {
    std::lock_guard lock(mu_);
    requests_.clear();
    stopping_ = true;
  }
  work_.notify_all();
  for (auto& t : threads_) t.join();
  close(wake_);
}

void SpawnPool::submit(uint32_t seq, std::string text, std::vector<Fd> fds) {
  const uint64_t nth = ++submitted_;
  {
    std::lock_guard lock(mu_);
    if (!taking_) return;  // its descriptors close here
    requests_.push_back(Request{seq, nth, std::move(text), std::move(fds)});
  }
  unanswered_.insert(nth);
  work_.notify_one();
}

std::vector<SpawnPool::Result> SpawnPool::take() {
  uint64_t n;
  while (read(wake_, &n, sizeof n) < 0 && errno == EINTR) {
  }
  std::vector<Result> out;
  {
    std::lock_guard lock(mu_);
    out.swap(results_);
  }
  for (const auto& r : out) unanswered_.erase(r.nth);
  return out;
}

uint64_t SpawnPool::oldest_unanswered() const {
  return unanswered_.empty() ? submitted_ + 1 : *unanswered_.begin();
}

void SpawnPool::stop_taking() {
  std::lock_guard lock(mu_);
  taking_ = false;
  for (const auto& r : requests_) unanswered_.erase(r.nth);
  requests_.clear();
}

void SpawnPool::serve() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_.wait(lock, [this] { return stopping_ || !requests_.empty(); });
    if (requests_.empty()) return;  // stopping
    Request r = std::move(requests_.front());
    requests_.pop_front();
    lock.unlock();
    Result result{r.seq, r.nth, -1, 0, {}};
    try {
      result.pid = start_(r.text, r.fds);
    } catch (const Error& e) {
      result.code = static_cast<int32_t>(e.code());
      result.error = e.what();
    } catch (const std::exception& e) {
      result.code = static_cast<int32_t>(ExitCode::internal);
      result.error = e.what();
    }
    r.fds.clear();  // the supervisor keeps none of the job's descriptors: its pipes end with it
    lock.lock();
    results_.push_back(std::move(result));
    const uint64_t one = 1;
    ssize_t ignored = write(wake_, &one, sizeof one);
    (void)ignored;
  }
}

}  // namespace jobctl::exec
