#pragma once
// jobagent's settings, filled from its flags (agent/main.cpp).
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/model/labels.hpp"
#include "common/util/log.hpp"

namespace jobctl::agent {

using std::chrono::milliseconds;

struct Options {
  std::optional<std::string> db;            // --db; else JOBCTL_DB; else the default SQLite file
  std::vector<std::string> queues{"default"};  // --queues: claimed from, in priority order across them
  int concurrency = 4;                      // --concurrency: runs executed at once
  std::string name;                         // --name; default: the host name
  model::Labels labels;                     // --label KEY=VALUE…, and host=<host name>: what --on matches
  milliseconds lease{15000};                // --lease: a run is rescued this long after the last heartbeat
  milliseconds drain_timeout{30000};        // --drain-timeout: SIGTERM waits this long for running jobs
  milliseconds kill_grace{5000};            // --kill-grace: SIGTERM to SIGKILL on timeout, cancel, a dead agent
  milliseconds poll_interval{1000};         // --poll-interval: fallback when no wake-up hint arrives
  bool listen = true;                       // --no-listen turns LISTEN/NOTIFY and inotify off
  bool scheduler = true;                    // --no-scheduler: never lead, never materialise schedules
  milliseconds schedule_horizon{60000};     // --schedule-horizon: occurrences become runs this far ahead
  milliseconds misfire_threshold{60000};    // --misfire-threshold: an occurrence this late was missed
  milliseconds gc_older_than{0};            // --gc-older-than: as leader, remove finished history this old; 0 = never
  milliseconds gc_every{600000};            // --gc-every: how often the leader runs it
  std::string metrics_addr;                 // --metrics HOST:PORT: serve /metrics there
  std::string metrics_file;                 // --metrics-file: write the same text there, atomically, every heartbeat
  bool export_db = true;                    // --no-export-db: jobs do not get JOBCTL_DB
  std::string job_db;                       // JOBCTL_DB as jobs get it (set by the agent from its store)
  std::optional<std::string> secrets_file;  // --secrets-file: NAME=value lines for {{secret:NAME}}
  std::string run_as;                       // --run-as: jobs without --user run as this user; "" = the agent's own
  std::vector<std::string> allow_users;     // --allow-users: the users a job's --user may name
  std::string own_user;                     // the agent's own user name (set at start)
  std::optional<std::string> credentials_dir;  // $CREDENTIALS_DIRECTORY: systemd's LoadCredential= secrets
  std::map<std::string, std::string> environment_secrets;  // JOBAGENT_SECRET_*, taken out of the environment
  size_t output_limit = 64 * 1024;          // bytes of stdout and of stderr (or a response body) kept per attempt
  util::LogFormat log_format = util::LogFormat::text;  // --log-format
  util::LogLevel log_level = util::LogLevel::info;     // --log-level
};

}  // namespace jobctl::agent
