#include "cli/wait_display.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "common/ops/waiting_reasons.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::cli {

ProgressLine::ProgressLine() : on_(isatty(STDERR_FILENO) == 1) {}

void ProgressLine::show(const model::Run& run) {
  if (!run.progress || run.status != model::RunStatus::running) return;
  show(*run.progress, run.progress_message);
}

void ProgressLine::show(double fraction, const std::string& message) {
  if (!on_) return;
  constexpr int kWidth = 30;
  int filled = static_cast<int>(fraction * kWidth + 0.5);
  std::string bar = std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(kWidth - filled), '-');
  std::string line = fmt::format("[{}] {:3.0f}%  {}", bar, fraction * 100, util::one_line(message));
  if (line.size() > 100) line = line.substr(0, 100);
  if (line == last_) return;
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  last_ = line;
}

void ProgressLine::clear() {
  if (last_.empty()) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  last_.clear();
}

WaitingNote::WaitingNote(Context& ctx) : ctx_(ctx), on_(isatty(STDERR_FILENO) == 1) {}

void WaitingNote::check(const model::JobView& view, const std::vector<model::Run>& runs, ProgressLine& progress) {
  using Clock = std::chrono::steady_clock;
  if (!on_ || Clock::now() < next_) return;
  next_ = Clock::now() + std::chrono::seconds(5);
  ops::WaitingReasons reasons(ctx_.store());
  std::string detail;
  for (const auto& run : runs)
    if (auto why = reasons(view.job, run); !why.empty()) {
      detail = why.detail;
      break;
    }
  if (detail == shown_) return;
  shown_ = detail;
  if (detail.empty()) return;
  progress.clear();
  std::fprintf(stderr, "jobctl: job %s is waiting: %s\n", view.job.id.c_str(), detail.c_str());
}

Backoff::Backoff(std::optional<util::Micros> timeout, std::chrono::milliseconds first, std::chrono::milliseconds most)
    : give_up_(timeout ? Clock::now() + *timeout : Clock::time_point::max()), pause_(first), most_(most) {}

void Backoff::sleep() {
  std::this_thread::sleep_for(std::min<Clock::duration>(pause_, give_up_ - Clock::now()));
  pause_ = std::min(pause_ * 2, most_);
}

}  // namespace jobctl::cli
