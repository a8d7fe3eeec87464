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
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { serve(); });
}

SpawnPool::~SpawnPool() {
  stop();
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  for (auto& t : threads_) t.join();
  close(wake_);
}

void SpawnPool::submit(uint32_t seq, std::string text, std::vector<Fd> fds) {
  order_.push_back(seq);
  {
    std::lock_guard lock(mu_);
    requests_.push_back(Request{seq, std::move(text), std::move(fds)});
  }
  work_.notify_one();
}

std::vector<SpawnPool::Result> SpawnPool::take() {
  uint64_t n;
  while (read(wake_, &n, sizeof n) < 0 && errno == EINTR) {
  }
  {
    std::lock_guard lock(mu_);
    for (auto& r : results_) held_.emplace(r.seq, std::move(r));
    results_.clear();
  }
  std::vector<Result> out;
  while (!order_.empty()) {
    auto it = held_.find(order_.front());
    if (it == held_.end()) break;
    out.push_back(std::move(it->second));
    held_.erase(it);
    order_.pop_front();
  }
  return out;
}

void SpawnPool::stop() {
  std::unique_lock lock(mu_);
  for (const auto& r : requests_) std::erase(order_, r.seq);
  requests_.clear();
  idle_.wait(lock, [this] { return busy_ == 0; });
}

void SpawnPool::serve() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_.wait(lock, [this] { return stopping_ || !requests_.empty(); });
    if (requests_.empty()) return;  // stopping
    Request r = std::move(requests_.front());
    requests_.pop_front();
    ++busy_;
    lock.unlock();
    Result result{r.seq, -1, 0, {}};
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
    --busy_;
    const uint64_t one = 1;
    ssize_t ignored = write(wake_, &one, sizeof one);
    (void)ignored;
    if (busy_ == 0) idle_.notify_all();
  }
}

}  // namespace jobctl::exec
