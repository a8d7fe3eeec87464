#pragma once
// Group commit for the API's submissions (POST /jobs, POST /schedules):
// requests that arrive together are written by one thread in one
// transaction, so N concurrent requests pay one commit (and, on
// PostgreSQL, one NOTIFY, which otherwise serialises commits) instead of N.
// A request still succeeds or fails alone: when the group is refused for
// one request's jobs, each request of it is tried again by itself. A store
// failure (the connection lost, a statement timeout) fails every request
// of the group with it. submit() may be called from any thread; it blocks
// until the group is written, for no longer than the store's own timeouts.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/config/dsn.hpp"
#include "common/model/job.hpp"
#include "common/store/jobs.hpp"
#include "common/store/store.hpp"

namespace jobctl::server {

class GroupCommit {
 public:
  explicit GroupCommit(config::Dsn dsn);
  ~GroupCommit();  // after every request under way is answered
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  using Submitted = store::Submitted;
  // Submits `specs` all or nothing, recorded as `actor`, together with
  // whatever other requests wait. Throws the Error that refused them.
  Submitted submit(std::string actor, std::vector<model::JobSpec> specs);

  // Since the start: requests submitted, and the transactions that wrote
  // them (fewer when requests shared one). For GET /metrics.
  uint64_t requests() const { return requests_; }
  uint64_t commits() const { return commits_; }

 private:
  struct Pending {
    store::Submission submission;
    std::promise<Submitted> promise;
  };
  void run();
  void commit(std::vector<Pending>& group);
  // Writes the group or throws; on success fulfils every promise.
  void write(std::vector<Pending>& group);

  config::Dsn dsn_;
  std::unique_ptr<store::Store> store_;  // the committer's own, reopened after a store error
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  std::thread thread_;
  std::atomic<uint64_t> requests_{0}, commits_{0};
};

}  // namespace jobctl::server
