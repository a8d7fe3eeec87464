#pragma once
// Group commit for the API's submissions (POST /jobs, POST /schedules):
// requests that arrive together are written in one transaction, so N
// concurrent requests pay one commit (and, on PostgreSQL, one NOTIFY,
// which otherwise serialises commits) instead of N. A request still
// succeeds or fails alone: when the group is refused for one request's
// jobs, each request of it is tried again by itself. A store failure (the
// connection lost, a statement timeout) fails every request of the group
// with it. submit() may be called from any thread; it blocks until the
// group is written, for no longer than the store's own timeouts.
//
// A request that finds no group being written writes its own, on its own
// thread, with whatever else waits by then: on a quiet server each request
// is written where it arrived, with no hand-over to another thread and
// back (two wake-ups of an idle core in every POST). Requests that arrive
// meanwhile wait; the committing thread (started at the first such) then
// writes group after group while requests keep waiting, as it does under
// load.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
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
  // A request, on its thread's stack while it waits: its jobs, then its
  // answer or error once its group is written. Its thread sleeps on `woken`
  // alone, so a group's end wakes only its own requests.
  struct Pending {
    explicit Pending(store::Submission s) : submission(std::move(s)) {}
    store::Submission submission;
    std::optional<Submitted> answer;
    std::exception_ptr error;
    std::binary_semaphore woken{0};
  };
  // The committing thread: groups while requests wait, then sleep.
  void run();
  // Writes the next group from the queue (the caller is the writer) and
  // wakes its requests, but for `own`, the caller's. Returns whether more
  // wait, under `lock`, which it unlocks while it writes.
  bool write_next(std::unique_lock<std::mutex>& lock, const Pending* own);
  // The next group from the queue, its first request always (under mutex_).
  std::vector<Pending*> next_group();
  // Gives each request of `group` its answer or its error.
  void commit(const std::vector<Pending*>& group);
  // Writes the group or throws; on success gives every request its answer.
  void write(const std::vector<Pending*>& group);

  config::Dsn dsn_;
  std::unique_ptr<store::Store> store_;  // the leader's, reopened after a store error
  std::mutex mutex_;
  std::condition_variable handed_over_;  // wakes the committing thread
  std::deque<Pending*> queue_;
  bool writing_ = false;    // a group is being written, by a request's thread or the committing one
  bool committer_ = false;  // the committing thread is to write (what waits)
  bool stopping_ = false;
  std::thread thread_;
  std::atomic<uint64_t> requests_{0}, commits_{0};
};

}  // namespace jobctl::server
