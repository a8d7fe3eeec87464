#pragma once
// The agent's Prometheus metrics (jobagent --metrics, --metrics-file):
// counters, gauges and histograms kept in memory by the agent loop, and
// their text exposition (format 0.0.4). Single-threaded like the loop.
#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace jobctl::agent {

// Seconds: 5 ms to an hour.
inline constexpr std::array<double, 16> kSecondsBuckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                       2.5,   5,    10,    30,   60,  300, 900, 3600};

struct Histogram {
  std::array<uint64_t, kSecondsBuckets.size()> buckets{};  // not cumulative; rendered cumulative
  uint64_t count = 0;
  double sum = 0;
  void observe(double seconds);
};

struct Metrics {
  // By queue.
  std::map<std::string, uint64_t> runs_started, runs_succeeded, runs_failed, runs_dead, runs_cancelled;
  std::map<std::string, Histogram> attempt_duration, scheduling_lag;
  // By step (claim, complete, heartbeat, …).
  std::map<std::string, uint64_t> store_errors;
  uint64_t claims = 0;        // claim statements run
  uint64_t empty_polls = 0;   // claims that found nothing
  uint64_t heartbeat_failures = 0;
  int slots_busy = 0;
  int slots = 0;
  bool leader = false;
  std::string version;
  std::string worker;  // the agent's --name

  // The text exposition of every metric, with HELP and TYPE lines.
  std::string render() const;
};

}  // namespace jobctl::agent
