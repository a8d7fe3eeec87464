#include "cli/waiting.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "cli/output.hpp"
#include "common/model/job_json.hpp"
#include "common/util/error.hpp"

namespace jobctl::cli {

int wait_for_job(Context& ctx, const std::string& job_id, std::optional<util::Micros> timeout, WaitReport report) {
  using Clock = std::chrono::steady_clock;
  auto give_up = timeout ? Clock::now() + *timeout : Clock::time_point::max();
  auto pause = std::chrono::milliseconds(20);
  for (;;) {
    auto view = ctx.store().get_job(job_id);
    if (!view) throw Error(ExitCode::not_found, fmt::format("no job with id '{}'", job_id), "list jobs with `jobctl ls`");
    if (view->latest_run && model::is_final(view->latest_run->status)) {
      const auto& run = *view->latest_run;
      if (ctx.output == "json" && report == WaitReport::with_json) print_json(model::to_json(*view));
      std::string detail = run.error.empty() ? "" : ": " + run.error;
      std::fprintf(stderr, "job %s %s%s\n", job_id.c_str(), std::string(model::to_string(run.status)).c_str(),
                   detail.c_str());
      return run.status == model::RunStatus::succeeded ? 0 : static_cast<int>(ExitCode::job_failed);
    }
    if (Clock::now() >= give_up) {
      std::fprintf(stderr, "jobctl: timed out waiting for job %s (still %s)\n", job_id.c_str(),
                   view->latest_run ? std::string(model::to_string(view->latest_run->status)).c_str() : "without a run");
      return static_cast<int>(ExitCode::timeout);
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, give_up - Clock::now()));
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
}

}  // namespace jobctl::cli
