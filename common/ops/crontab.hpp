#pragma once
// Coming from cron: a crontab read as schedules (jobctl crontab import),
// and schedules written back as a crontab (jobctl crontab export).
//
// Read as Vixie cron reads it: five fields or an @-word, then the command
// (run by sh -c); NAME=value lines set the environment of the entries
// after them, CRON_TZ their zone; \% is a literal %. What jobctl does not
// do is reported and skipped with what to use instead (@reboot, MAILTO);
// what cannot be read (a bad expression, an unescaped %) is an error
// naming its line, and nothing is imported.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/model/job.hpp"
#include "common/store/schedules.hpp"

namespace jobctl::ops {

// What marks a schedule imported into `queue`: its idempotency key begins
// with it. An import with --prune removes only its own queue's.
std::string crontab_key_prefix(const std::string& queue);

struct CrontabEntry {
  int line = 0;
  model::JobSpec spec;  // a schedule, its idempotency key stable for the same entry
};

struct CrontabSkip {
  int line = 0;
  std::string why;  // and what to use instead
};

struct Crontab {
  std::vector<CrontabEntry> entries;
  std::vector<CrontabSkip> skipped;
};

// Throws usage Error naming the line for what cannot be read. `queue` is
// the queue of every entry; `tz` the zone before any CRON_TZ line.
Crontab parse_crontab(std::string_view text, const std::string& queue, const std::string& tz);

// The schedules as crontab lines, a comment before each naming it and its
// job; those a crontab cannot hold (seconds, @every, a webhook) as comments.
std::string crontab_of(const std::vector<store::ScheduleView>& schedules);

}  // namespace jobctl::ops
