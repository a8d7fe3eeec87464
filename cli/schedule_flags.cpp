#include "cli/schedule_flags.hpp"

#include <fmt/format.h>

#include "common/util/duration.hpp"

namespace jobctl::cli {

std::vector<std::string> add_schedule_flags(CLI::App& cmd, ScheduleFlags& f) {
  const model::ScheduleSpec d;  // the defaults, shown in the help
  cmd.add_option("--misfire", f.misfire,
                 fmt::format("Occurrences missed while no scheduler ran: {} (default {})",
                             model::join_or(model::names_of(model::kMisfireNames)), model::to_string(d.misfire)))
      ->check(CLI::IsMember(model::names_of(model::kMisfireNames)));
  cmd.add_option("--catchup-window", f.catchup_window,
                 fmt::format("How far back --misfire all reaches (default {})",
                             util::format_duration(util::Micros(d.catchup_window_us))));
  cmd.add_option("--overlap", f.overlap,
                 fmt::format("An occurrence due while the last still runs: {} (default {})",
                             model::join_or(model::names_of(model::kOverlapNames)), model::to_string(d.overlap)))
      ->check(CLI::IsMember(model::names_of(model::kOverlapNames)));
  cmd.add_option("--max-concurrent", f.max_concurrent,
                 "Runs of the job's concurrency group at once, fleet-wide (a schedule: default 1, allow: no limit; "
                 "with --concurrency-key: default 1)")
      ->check(CLI::Range(1, model::kMaxConcurrentLimit));
  cmd.add_option("--jitter", f.jitter, "Start each occurrence up to this much later, spreading a herd (e.g. 30s)");
  return {"--misfire", "--catchup-window", "--overlap", "--jitter", "--max-concurrent"};
}

store::ScheduleUpdate to_update(const ScheduleFlags& f, const std::string& tz) {
  store::ScheduleUpdate u;
  if (!f.cron.empty()) u.cron = f.cron;
  if (!tz.empty()) u.tz = tz;
  if (!f.misfire.empty()) u.misfire = model::parse_misfire(f.misfire);
  if (!f.catchup_window.empty())
    u.catchup_window_us = util::parse_duration(f.catchup_window, "--catchup-window").count();
  if (!f.overlap.empty()) u.overlap = model::parse_overlap(f.overlap);
  u.max_concurrent = f.max_concurrent;
  if (!f.jitter.empty()) u.jitter_us = util::parse_duration(f.jitter, "--jitter").count();
  return u;
}

}  // namespace jobctl::cli
