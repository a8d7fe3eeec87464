#include "cli/run_status.hpp"

#include <fmt/format.h>

#include "common/util/duration.hpp"

namespace jobctl::cli {

std::string status_text(const model::Run& r) {
  std::string status(model::to_string(r.status));
  if (r.status == model::RunStatus::pending && r.failures > 0)
    status += fmt::format(" (retry after {} failure{})", r.failures, r.failures == 1 ? "" : "s");
  return status;
}

std::string duration_text(const model::Run& r) {
  if (r.status == model::RunStatus::running) return "running";
  if (!r.started_at || !r.finished_at) return "-";
  return util::format_duration(util::Micros(*r.finished_at - *r.started_at));
}

}  // namespace jobctl::cli
