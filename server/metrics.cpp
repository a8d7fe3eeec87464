#include "server/metrics.hpp"

#include <fmt/format.h>

#include "common/store/admin.hpp"
#include "common/util/prometheus.hpp"
#include "server/group_commit.hpp"

namespace jobctl::server {
namespace {

using util::prometheus_header;
using util::prometheus_label;

std::string exposition(const store::StoreGauges& g) {
  std::string out;
  auto per_queue = [&](const char* name, const char* help, auto value) {
    prometheus_header(out, name, "gauge", help);
    for (const auto& q : g.queues)
      out += fmt::format("{}{{queue=\"{}\"}} {}\n", name, prometheus_label(q.queue), value(q));
  };
  per_queue("jobctl_queue_ready", "Runs due and waiting for an agent.", [](const auto& q) { return q.ready; });
  per_queue("jobctl_queue_later", "Pending runs due later: --at, --in, a retry's wait, occurrences made ahead.",
            [](const auto& q) { return q.later; });
  per_queue("jobctl_queue_running", "Runs running now.", [](const auto& q) { return q.running; });
  per_queue("jobctl_queue_oldest_ready_seconds", "How long the longest-waiting due run has waited (0: none waits).",
            [](const auto& q) { return static_cast<double>(q.oldest_ready_us.value_or(0)) / 1e6; });
  per_queue("jobctl_dead_letter_runs", "Runs in the dead-letter queue, neither replayed nor dismissed.",
            [](const auto& q) { return q.dead_letter; });
  prometheus_header(out, "jobctl_workers_live", "gauge",
                    "Agents heartbeating within their lease, by state: active (taking work) or draining.");
  out += fmt::format("jobctl_workers_live{{state=\"active\"}} {}\n", g.workers_active);
  out += fmt::format("jobctl_workers_live{{state=\"draining\"}} {}\n", g.workers_draining);
  prometheus_header(out, "jobctl_scheduler_leader_present", "gauge", "1 when an agent holds the scheduler lease.");
  out += fmt::format("jobctl_scheduler_leader_present {}\n", g.leader_present ? 1 : 0);
  return out;
}

}  // namespace

std::string server_exposition(const GroupCommit& submissions) {
  std::string out;
  prometheus_header(out, "jobctl_serve_submit_requests_total", "counter",
                    "Submissions (POST /jobs, /schedules) this server wrote.");
  out += fmt::format("jobctl_serve_submit_requests_total {}\n", submissions.requests());
  prometheus_header(out, "jobctl_serve_submit_commits_total", "counter",
                    "Transactions that wrote them: fewer when concurrent requests shared one (group commit).");
  out += fmt::format("jobctl_serve_submit_commits_total {}\n", submissions.commits());
  return out;
}

std::string StoreMetrics::render(store::Store& store) {
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (text_.empty() || now - read_at_ >= std::chrono::seconds(1)) {
    text_ = exposition(store.admin().gauges());
    read_at_ = now;
  }
  return text_;
}

}  // namespace jobctl::server
