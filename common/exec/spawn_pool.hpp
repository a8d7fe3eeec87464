#pragma once
// The job supervisor's starters: a few threads that start processes side
// by side. A start waits for its child until the child executes (it is a
// vfork), and on a busy host that child waits its turn for a CPU
// among the jobs already running: one start at a time made the supervisor
// the bottleneck of a flood of short jobs (it spent 92 % of its time inside
// the start, 440 µs a job, beside 300 µs in a bare spawn loop).
//
// The supervisor's thread submits requests and takes their results, in the
// order the requests came: a result waits for those before it. That thread
// alone answers the agent, and alone reaps.
#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
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
    uint32_t seq = 0;
    pid_t pid = -1;    // started: its pid
    int32_t code = 0;  // else the ExitCode, with `error`
    std::string error;
  };

  SpawnPool(size_t threads, Start start);
  // Drops what no starter has taken, waits for the starts under way, and
  // joins the threads (the results left are dropped: call stop() and
  // take() first to learn of them).
  ~SpawnPool();
  SpawnPool(const SpawnPool&) = delete;
  SpawnPool& operator=(const SpawnPool&) = delete;

  void submit(uint32_t seq, std::string text, std::vector<Fd> fds);
  // Readable while results wait (an eventfd).
  int fd() const { return wake_; }
  // The results whose turn has come, in the order of their requests.
  std::vector<Result> take();
  // Requests submitted whose results take() has not returned yet.
  size_t unanswered() const { return order_.size(); }
  // Starts nothing more (requests not yet taken are dropped, their
  // descriptors closed) and waits for the starts under way, whose results
  // take() then returns.
  void stop();

 private:
  struct Request {
    uint32_t seq;
    std::string text;
    std::vector<Fd> fds;
  };
  void serve();

  Start start_;
  int wake_ = -1;
  std::deque<uint32_t> order_;              // the supervisor's thread's: requests not taken, as they came
  std::map<uint32_t, Result> held_;         // its results finished ahead of their turn
  std::mutex mu_;
  std::condition_variable work_;
  std::deque<Request> requests_;
  std::vector<Result> results_;
  size_t busy_ = 0;
  bool stopping_ = false;
  std::condition_variable idle_;
  std::vector<std::thread> threads_;
};

}  // namespace jobctl::exec
