#pragma once
// What a waiting command shows while it waits (wait, submit --wait, dag
// wait, logs --follow, run): a progress line, a note when a run may wait
// for ever, and the pause between two reads of the store.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "cli/context.hpp"
#include "common/model/job.hpp"
#include "common/util/duration.hpp"

namespace jobctl::cli {

// A progress bar on the terminal's last line, redrawn in place:
//   [##########----------] 50%  copying table 3 of 6
class ProgressLine {
 public:
  ProgressLine();
  ~ProgressLine() { clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void show(const model::Run& run);
  void show(double fraction, const std::string& message);
  void clear();

 private:
  bool on_;
  std::string last_;
};

// On a terminal, says once why a pending run may wait for ever (no live
// agent serves its queue, ...), and again whenever the reason changes. The
// agents are read at most every few seconds.
class WaitingNote {
 public:
  explicit WaitingNote(Context& ctx);

  void check(const model::JobView& view, const std::vector<model::Run>& runs, ProgressLine& progress);
  // Whether check() would look now (a caller may skip reading the job).
  bool due() const { return on_ && std::chrono::steady_clock::now() >= next_; }

 private:
  Context& ctx_;
  bool on_;
  std::chrono::steady_clock::time_point next_{};
  std::string shown_;
};

// Sleeps between polls: from `first` doubling to `most`, never past the deadline.
class Backoff {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Backoff(std::optional<util::Micros> timeout, std::chrono::milliseconds first = std::chrono::milliseconds(20),
                   std::chrono::milliseconds most = std::chrono::milliseconds(500));
  bool expired() const { return Clock::now() >= give_up_; }
  // When the wait gives up; nothing without a timeout.
  std::optional<Clock::time_point> deadline() const {
    return give_up_ == Clock::time_point::max() ? std::nullopt : std::optional<Clock::time_point>(give_up_);
  }
  void sleep();

 private:
  Clock::time_point give_up_;
  std::chrono::milliseconds pause_;
  std::chrono::milliseconds most_;
};

}  // namespace jobctl::cli
