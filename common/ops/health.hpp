#pragma once
// Is the system healthy: `stats` and `check` for every front door. The
// answers are the JSON of `jobctl stats -o json`, and the breaches
// `jobctl check` prints.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/model/job.hpp"
#include "common/store/admin.hpp"
#include "common/store/store.hpp"

namespace jobctl::ops {

// Live agents that claim from each queue.
std::map<std::string, int> agents_by_queue(const std::vector<model::Worker>& workers);

// Whether each queue is paused (jobctl queue pause), by name.
std::map<std::string, bool> paused_queues(store::Store& store);

// A window back from now (`since`, named `what` in errors) in µs, or an
// age (dlq purge's); throws usage Error, with `hint`, unless it is longer
// than 0s.
int64_t window_of(const std::string& since, const std::string& what = "--since", const std::string& hint = "e.g. 15m");

// 0.0123 → "12ms", 3.4 → "3.4s", 300 → "5m".
std::string seconds_text(double s);

// Failed attempts over all that ended in the window (0 when none did).
double failure_rate(const store::QueueStats& s);

// Runs that ended (succeeded or dead) per second over the window.
double throughput(const store::QueueStats& s);

// Per queue and priority, as `stats -o json`.
nlohmann::json stats_json(store::Store& store, const std::optional<std::string>& queue, int64_t window_us);

// The window cut into steps, oldest first, for charts: {"since_s",
// "step_s", "points": [{"at", "succeeded" and "dead" (runs that ended so),
// "failed" (attempts), "failure_rate" (of the attempts that ended; null
// when none did), "lag_p99_s" (null when no sampled attempt started)}]}. Throws usage Error for a step under 1s or over 1,440 steps.
nlohmann::json series_json(store::Store& store, const std::optional<std::string>& queue, int64_t window_us,
                           int64_t step_us);

// What `check` compares; unset thresholds are not checked.
struct Thresholds {
  std::optional<std::string> queue;
  int64_t window_us = 15LL * 60 * 1000 * 1000;
  std::optional<int> max_dlq;
  std::string max_lag, max_oldest;  // durations as typed, "" for none
  std::optional<int> min_workers;
  std::optional<double> max_failure_rate;  // percent of the attempts that ended in the window, per queue
  std::optional<int> max_ready;            // runs due and waiting, per queue
  std::optional<int> max_stuck;            // running runs that look stuck (ls --stuck)
  std::string stuck_after = "1h";          // ls --stuck-after
  bool any() const {
    return max_dlq || !max_lag.empty() || !max_oldest.empty() || min_workers || max_failure_rate || max_ready ||
           max_stuck;
  }
};

// The thresholds breached, one phrase each (naming the CLI's flags).
std::vector<std::string> breaches(store::Store& store, const Thresholds& t);

}  // namespace jobctl::ops
