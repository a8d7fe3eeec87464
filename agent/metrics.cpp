#include "agent/metrics.hpp"

#include <fmt/format.h>

#include "common/util/prometheus.hpp"

namespace jobctl::agent {
namespace {

using util::prometheus_header;
using util::prometheus_label;

void by_queue(std::string& out, const char* name, const char* help, const std::map<std::string, uint64_t>& values) {
  prometheus_header(out, name, "counter", help);
  for (const auto& [queue, n] : values) out += fmt::format("{}{{queue=\"{}\"}} {}\n", name, prometheus_label(queue), n);
}

void histograms(std::string& out, const char* name, const char* help, const std::map<std::string, Histogram>& values) {
  prometheus_header(out, name, "histogram", help);
  for (const auto& [queue, h] : values) {
    std::string q = prometheus_label(queue);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kSecondsBuckets.size(); ++i) {
      cumulative += h.buckets[i];
      out += fmt::format("{}_bucket{{queue=\"{}\",le=\"{}\"}} {}\n", name, q, kSecondsBuckets[i], cumulative);
    }
    out += fmt::format("{}_bucket{{queue=\"{}\",le=\"+Inf\"}} {}\n", name, q, h.count);
    out += fmt::format("{}_sum{{queue=\"{}\"}} {}\n", name, q, h.sum);
    out += fmt::format("{}_count{{queue=\"{}\"}} {}\n", name, q, h.count);
  }
}

void scalar(std::string& out, const char* name, const char* type, const char* help, double value) {
  prometheus_header(out, name, type, help);
  out += fmt::format("{} {}\n", name, value);
}

}  // namespace

void Histogram::observe(double seconds) {
  ++count;
  sum += seconds;
  for (size_t i = 0; i < kSecondsBuckets.size(); ++i)
    if (seconds <= kSecondsBuckets[i]) {
      ++buckets[i];
      return;
    }
}

std::string Metrics::render() const {
  std::string out;
  prometheus_header(out, "jobagent_info", "gauge", "This agent: its name and version.");
  out += fmt::format("jobagent_info{{name=\"{}\",version=\"{}\"}} 1\n", prometheus_label(worker), prometheus_label(version));
  by_queue(out, "jobagent_runs_started_total", "Attempts started, by queue.", runs_started);
  by_queue(out, "jobagent_runs_succeeded_total", "Attempts that succeeded, by queue.", runs_succeeded);
  by_queue(out, "jobagent_runs_failed_total", "Attempts that failed (retried or not), by queue.", runs_failed);
  by_queue(out, "jobagent_runs_dead_total", "Runs that went to the dead-letter queue, by queue.", runs_dead);
  by_queue(out, "jobagent_runs_cancelled_total", "Runs cancelled while running here, by queue.", runs_cancelled);
  histograms(out, "jobagent_attempt_duration_seconds", "How long attempts ran, by queue.", attempt_duration);
  histograms(out, "jobagent_scheduling_lag_seconds", "From when a run was due to its claim (store clock), by queue.",
             scheduling_lag);
  scalar(out, "jobagent_slots_busy", "gauge", "Runs executing now.", slots_busy);
  scalar(out, "jobagent_slots", "gauge", "Runs this agent executes at once (--concurrency).", slots);
  scalar(out, "jobagent_claims_total", "counter", "Claim statements run.", static_cast<double>(claims));
  scalar(out, "jobagent_empty_polls_total", "counter", "Claims that found nothing to run.",
         static_cast<double>(empty_polls));
  scalar(out, "jobagent_heartbeat_failures_total", "counter", "Heartbeats the store did not take.",
         static_cast<double>(heartbeat_failures));
  prometheus_header(out, "jobagent_store_errors_total", "counter", "Store operations that failed, by step.");
  for (const auto& [step, n] : store_errors)
    out += fmt::format("jobagent_store_errors_total{{step=\"{}\"}} {}\n", prometheus_label(step), n);
  scalar(out, "jobagent_leader", "gauge", "1 while this agent is the scheduler leader.", leader ? 1 : 0);
  return out;
}

}  // namespace jobctl::agent
