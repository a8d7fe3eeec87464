#pragma once
// The job supervisor's starters: a few threads that start processes side
// by side. A start waits for its child until the child executes (it is a
// vfork), and on a busy host that child waits its turn for a CPU among the
// jobs already running: one start at a time made the supervisor the
// bottleneck of a flood of short jobs (it spent 92 % of its time inside
// the start, 440 µs a job, beside 300 µs in a bare spawn loop). And a
// start that hangs (an exec waiting on a file's lease, a user looked up in
// a directory that does not answer) holds up no other.
//
// The supervisor's thread submits requests and takes their results as they
// finish; it alone answers the agent, and alone reaps. Each request gets a
// number, counted from 1 in the order of submit().
#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/exec/process.hpp"

namespace jobctl::exec {

class SpawnPool {
 public:
  // Starts one request: its text and descriptors as they came. Returns the
  // process's pid or throws jobctl::Error with the reason. Runs on a
  // starter thread, so it must touch nothing shared.
  using Start = std::function<pid_t(const std::string& text, std::vector<Fd>& fds)>;

  struct Result {
    uint32_t seq = 0;   // the caller's, as submitted
    uint64_t nth = 0;   // the request's number
    pid_t pid = -1;     // started: its pid
    int32_t code = 0;   // else the ExitCode, with `error`
    std::string error;
  };

  SpawnPool(size_t threads, Start start);
  // Drops the requests no starter took, waits for the starts under way,
  // and joins the threads.
  ~SpawnPool();
  SpawnPool(const SpawnPool&) = delete;
  SpawnPool& operator=(const SpawnPool&) = delete;

  void submit(uint32_t seq, std::string text, std::vector<Fd> fds);
  // Readable while results wait (an eventfd).
  int fd() const { return wake_; }
  // The results finished since the last call, in the order they finished.
  std::vector<Result> take();
  // How many requests were submitted, and the number of the oldest one
  // whose result take() has not returned (submitted() + 1 when none).
  uint64_t submitted() const { return submitted_; }
  uint64_t oldest_unanswered() const;
  // Whether any request waits for its result.
  bool under_way() const { return !unanswered_.empty(); }
  // Starts nothing more: the requests no starter took are dropped (their
  // descriptors closed) and later ones ignored. Starts under way go on;
  // take() returns their results as they finish.
  void stop_taking();

 private:
  struct Request {
    uint32_t seq;
    uint64_t nth;
    std::string text;
    std::vector<Fd> fds;
  };
  void serve();
  // Drops the requests not taken, waits for the starts under way, joins.
  void end_threads();

  Start start_;
  int wake_ = -1;
  uint64_t submitted_ = 0;          // the supervisor's thread's, as is unanswered_
  std::set<uint64_t> unanswered_;   // numbers submitted whose results take() has not returned
  std::mutex mu_;
  std::condition_variable work_;
  std::deque<Request> requests_;
  std::vector<Result> results_;
  bool taking_ = true;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace jobctl::exec
