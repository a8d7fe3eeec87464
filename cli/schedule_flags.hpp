#pragma once
// The schedule flags, shared by `submit --cron` (a new schedule) and
// `update` (changing one), so both spell them the same way.
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/store/jobs.hpp"

namespace jobctl::cli {

struct ScheduleFlags {
  std::string cron, misfire, catchup_window, overlap, jitter;
  std::optional<int> max_concurrent;
};

// Adds every flag but --cron and --tz (each command words those its own
// way); returns their names (for excludes() and "needs --cron" checks),
// --max-concurrent last: it is also every other job's group limit.
std::vector<std::string> add_schedule_flags(CLI::App& cmd, ScheduleFlags& f);

// The fields the user set, with `tz` ("" = unset). Throws usage Error for
// a malformed value.
store::ScheduleUpdate to_update(const ScheduleFlags& f, const std::string& tz);

}  // namespace jobctl::cli
