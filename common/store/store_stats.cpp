// Store: the figures behind `jobctl stats` and `jobctl check`, per queue
// and priority: what waits and runs now, and what ended over a window.
//
// Percentiles are computed here from samples, the same way on both
// backends (SQLite has no percentile function): at most kMaxSamples of the
// window's latest attempts, so a wide window over a long history costs a
// bounded read.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/store/admin.hpp"
#include "common/store/internal.hpp"
#include "common/store/rows.hpp"
#include "common/util/duration.hpp"
#include "common/util/percentile.hpp"

namespace jobctl::store {
namespace {

constexpr int64_t kMaxSamples = 100'000;

using Key = std::pair<std::string, int>;  // queue, priority

// The latest attempt of each run not waiting for a retry, started since $1
// in queue $2 (every queue when empty): the run's queue and priority, when
// the attempt started, and when the run was due. Only a run's latest
// attempt still knows when it was due (a retry moves available_at). An
// attempt that ended has its row in attempts, of which the latest $3 are
// read (newest first, through attempts_started); one running now is on its
// run (migration 15).
constexpr const char* kLatestStarts =
    "SELECT * FROM (SELECT r.queue, r.priority, a.started_at, r.available_at FROM attempts a "
    "JOIN runs r ON r.id = a.run_id AND a.attempt = r.attempts "
    "WHERE a.started_at >= $1 AND r.status <> 'pending' AND ($2 = '' OR r.queue = $2) "
    "ORDER BY a.started_at DESC LIMIT $3) ended "
    "UNION ALL SELECT r.queue, r.priority, r.attempt_started_at, r.available_at FROM runs r "
    "WHERE r.status = 'running' AND r.attempt_started_at >= $1 AND ($2 = '' OR r.queue = $2)";

Percentiles percentiles_of(std::vector<double>& samples) {
  std::sort(samples.begin(), samples.end());
  return Percentiles{static_cast<int64_t>(samples.size()), util::percentile_sorted(samples, 0.50),
                     util::percentile_sorted(samples, 0.95), util::percentile_sorted(samples, 0.99)};
}

}  // namespace

std::vector<QueueStats> Admin::stats(const StatsFilter& filter) {
  Transaction tx(*conn_, TxMode::read);
  const int64_t now = conn_->query("SELECT NOW_US").at(0).i64(0);
  const int64_t from = now - filter.window_us;
  const std::string queue = filter.queue.value_or("");
  std::map<Key, QueueStats> by_key;
  auto at = [&](const std::string& q, int64_t priority) -> QueueStats& {
    auto& s = by_key[{q, static_cast<int>(priority)}];
    s.queue = q;
    s.priority = static_cast<model::Priority>(priority);
    return s;
  };

  // Now: waiting, running, the dead-letter queue.
  for (const auto& row : conn_->query(
           "SELECT r.queue, r.priority, "
           "SUM(CASE WHEN r.status = 'pending' AND r.available_at <= $1 AND j.paused = 0 THEN 1 ELSE 0 END), "
           "SUM(CASE WHEN r.status = 'pending' AND r.available_at > $1 AND j.paused = 0 THEN 1 ELSE 0 END), "
           "SUM(CASE WHEN r.status = 'blocked' THEN 1 ELSE 0 END), "
           "SUM(CASE WHEN r.status = 'running' THEN 1 ELSE 0 END), "
           "MIN(CASE WHEN r.status = 'pending' AND r.available_at <= $1 AND j.paused = 0 THEN r.available_at END), "
           "SUM(CASE WHEN " + std::string(kInDeadLetter) + " THEN 1 ELSE 0 END), "
           "SUM(CASE WHEN r.status = 'pending' AND j.paused <> 0 THEN 1 ELSE 0 END) "
           "FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.status IN ('pending', 'blocked', 'running', 'dead') "
           "AND ($2 = '' OR r.queue = $2) GROUP BY r.queue, r.priority",
           {now, queue})) {
    auto& s = at(row.text(0), row.i64(1));
    s.ready = row.i64(2);
    s.scheduled = row.i64(3);
    s.blocked = row.i64(4);
    s.running = row.i64(5);
    if (auto oldest = row.opt_i64(6)) s.oldest_ready_us = now - *oldest;
    s.dead_letter = row.i64(7);
    s.held = row.i64(8);
  }

  // Runs that ended in the window.
  for (const auto& row : conn_->query(
           "SELECT queue, priority, "
           "SUM(CASE WHEN status = 'succeeded' THEN 1 ELSE 0 END), "
           "SUM(CASE WHEN status = 'dead' THEN 1 ELSE 0 END), "
           "SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) "
           "FROM runs WHERE finished_at >= $1 AND ($2 = '' OR queue = $2) GROUP BY queue, priority",
           {from, queue})) {
    auto& s = at(row.text(0), row.i64(1));
    s.succeeded = row.i64(2);
    s.dead = row.i64(3);
    s.cancelled = row.i64(4);
  }

  // Attempts that ended in the window: counted in full, durations sampled.
  for (const auto& row : conn_->query(
           "SELECT r.queue, r.priority, SUM(CASE WHEN a.outcome = 'failed' THEN 1 ELSE 0 END), "
           "SUM(CASE WHEN a.outcome = 'succeeded' THEN 1 ELSE 0 END) FROM attempts a JOIN runs r ON r.id = a.run_id "
           "WHERE a.finished_at >= $1 AND ($2 = '' OR r.queue = $2) GROUP BY r.queue, r.priority",
           {from, queue})) {
    auto& s = at(row.text(0), row.i64(1));
    s.failed_attempts = row.i64(2);
    s.succeeded_attempts = row.i64(3);
  }
  std::map<Key, std::vector<double>> durations, lags;
  for (const auto& row : conn_->query(
           "SELECT r.queue, r.priority, a.finished_at - a.started_at FROM attempts a "
           "JOIN runs r ON r.id = a.run_id WHERE a.finished_at >= $1 AND ($2 = '' OR r.queue = $2) "
           "AND a.outcome IN ('succeeded', 'failed') ORDER BY a.finished_at DESC LIMIT $3",
           {from, queue, kMaxSamples}))
    durations[{row.text(0), static_cast<int>(row.i64(1))}].push_back(static_cast<double>(row.i64(2)) / 1e6);

  // Scheduling lag of the attempts that started in the window: from when
  // the run was due to its claim (kLatestStarts: earlier attempts of a run,
  // and runs waiting for a retry, are left out).
  for (const auto& row : conn_->query(fmt::format("SELECT queue, priority, started_at - available_at FROM ({}) s "
                                                  "ORDER BY started_at DESC LIMIT $3",
                                                  kLatestStarts),
                                      {from, queue, kMaxSamples})) {
    auto& s = at(row.text(0), row.i64(1));
    lags[{s.queue, static_cast<int>(s.priority)}].push_back(static_cast<double>(std::max<int64_t>(0, row.i64(2))) / 1e6);
  }
  tx.commit();

  std::vector<QueueStats> out;
  for (auto& [key, s] : by_key) {
    s.window_us = filter.window_us;
    s.duration_s = percentiles_of(durations[key]);
    s.lag_s = percentiles_of(lags[key]);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<SeriesPoint> Admin::series(const StatsFilter& filter, int64_t step_us) {
  Transaction tx(*conn_, TxMode::read);
  const int64_t now = conn_->query("SELECT NOW_US").at(0).i64(0);
  const int64_t steps = (filter.window_us + step_us - 1) / step_us;
  const int64_t from = now - steps * step_us;
  const std::string queue = filter.queue.value_or("");
  std::vector<SeriesPoint> out(static_cast<size_t>(steps));
  for (int64_t i = 0; i < steps; ++i) out[static_cast<size_t>(i)].at = from + i * step_us;
  auto point = [&](int64_t step) -> SeriesPoint* {
    return step >= 0 && step < steps ? &out[static_cast<size_t>(step)] : nullptr;
  };
  for (const auto& row : conn_->query(
           "SELECT (finished_at - $1) / $2, SUM(CASE WHEN status = 'succeeded' THEN 1 ELSE 0 END), "
           "SUM(CASE WHEN status = 'dead' THEN 1 ELSE 0 END) FROM runs "
           "WHERE finished_at >= $1 AND ($3 = '' OR queue = $3) GROUP BY 1",
           {from, step_us, queue}))
    if (auto* p = point(row.i64(0))) {
      p->succeeded = row.i64(1);
      p->dead = row.i64(2);
    }
  for (const auto& row : conn_->query(
           "SELECT (a.finished_at - $1) / $2, SUM(CASE WHEN a.outcome = 'succeeded' THEN 1 ELSE 0 END), "
           "SUM(CASE WHEN a.outcome = 'failed' THEN 1 ELSE 0 END) FROM attempts a JOIN runs r ON r.id = a.run_id "
           "WHERE a.finished_at >= $1 AND ($3 = '' OR r.queue = $3) GROUP BY 1",
           {from, step_us, queue}))
    if (auto* p = point(row.i64(0))) {
      p->succeeded_attempts = row.i64(1);
      p->failed_attempts = row.i64(2);
    }
  // The lag as stats measures it (see there), sampled the same way.
  std::vector<std::vector<double>> lags(static_cast<size_t>(steps));
  for (const auto& row : conn_->query(
           fmt::format("SELECT started_at, started_at - available_at FROM ({}) s ORDER BY started_at DESC LIMIT $3",
                       kLatestStarts),
           {from, queue, kMaxSamples})) {
    const int64_t step = (row.i64(0) - from) / step_us;
    if (step >= 0 && step < steps)
      lags[static_cast<size_t>(step)].push_back(static_cast<double>(std::max<int64_t>(0, row.i64(1))) / 1e6);
  }
  tx.commit();
  for (size_t i = 0; i < out.size(); ++i)
    if (!lags[i].empty()) out[i].lag_p99_s = percentiles_of(lags[i]).p99;
  return out;
}

StoreGauges Admin::gauges() {
  // One statement: a row per queue with live runs ('q'), per configured
  // queue ('c', so that an idle queue shows zeros), then the fleet ('w':
  // active agents, a leader, draining agents).
  auto rows = conn_->query(
      "SELECT 'q', r.queue, "
      "SUM(CASE WHEN r.status = 'pending' AND r.available_at <= NOW_US AND j.paused = 0 THEN 1 ELSE 0 END), "
      "SUM(CASE WHEN r.status = 'pending' AND r.available_at > NOW_US AND j.paused = 0 THEN 1 ELSE 0 END), "
      "SUM(CASE WHEN r.status = 'running' THEN 1 ELSE 0 END), "
      "NOW_US - MIN(CASE WHEN r.status = 'pending' AND r.available_at <= NOW_US AND j.paused = 0 "
      "THEN r.available_at END), "
      "SUM(CASE WHEN " + std::string(kInDeadLetter) + " THEN 1 ELSE 0 END) "
      "FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.status IN ('pending', 'running', 'dead') GROUP BY r.queue "
      "UNION ALL SELECT 'c', name, 0, 0, 0, NULL, 0 FROM queues "
      "UNION ALL SELECT 'w', '', "
      "(SELECT count(*) FROM workers WHERE state = 'active' AND heartbeat_at + lease_us >= NOW_US), "
      "(SELECT count(*) FROM scheduler_lease WHERE holder IS NOT NULL AND expires_at > NOW_US), "
      "(SELECT count(*) FROM workers WHERE state = 'draining' AND heartbeat_at + lease_us >= NOW_US), NULL, 0");
  StoreGauges out;
  std::map<std::string, QueueGauges> queues;
  for (const auto& row : rows) {
    const std::string kind = row.text(0);
    if (kind == "w") {
      out.workers_active = row.i64(2);
      out.leader_present = row.i64(3) > 0;
      out.workers_draining = row.i64(4);
      continue;
    }
    auto& q = queues[row.text(1)];
    q.queue = row.text(1);
    if (kind == "c") continue;
    q.ready = row.i64(2);
    q.later = row.i64(3);
    q.running = row.i64(4);
    q.oldest_ready_us = row.opt_i64(5);
    q.dead_letter = row.i64(6);
  }
  for (auto& [name, q] : queues) out.queues.push_back(std::move(q));
  return out;
}

std::vector<FailedAttempt> Admin::recent_failures(int limit, int64_t within_us) {
  std::vector<FailedAttempt> out;
  for (const auto& row : conn_->query(
           "SELECT r.job_id, j.name, r.queue, a.run_id, a.attempt, a.finished_at, a.error FROM attempts a "
           "JOIN runs r ON r.id = a.run_id JOIN jobs j ON j.id = r.job_id WHERE a.outcome = 'failed' "
           "AND a.finished_at >= NOW_US - $2 ORDER BY a.finished_at DESC LIMIT $1",
           {int64_t{limit}, within_us}))
    out.push_back({row.text(0), row.text(1), row.text(2), row.text(3), static_cast<int>(row.i64(4)), row.i64(5),
                   row.text(6)});
  return out;
}

std::vector<StuckRun> Admin::stuck_runs(int64_t no_progress_us, int limit, const std::optional<std::string>& queue) {
  auto rows = conn_->query(
      fmt::format("SELECT {}, {}, r.attempt_started_at, COALESCE(w.lease_us, 0), NOW_US, COALESCE(w.name, r.lease_owner) "
                  "FROM runs r JOIN jobs j ON j.id = r.job_id "
                  "LEFT JOIN workers w ON w.id = r.lease_owner WHERE r.status = 'running' AND ($3 = '' OR r.queue = $3) AND ("
                  "(j.timeout_us > 0 AND r.attempt_started_at + j.timeout_us + COALESCE(w.lease_us, 0) < NOW_US) OR "
                  "COALESCE(r.progress_at, r.attempt_started_at) < NOW_US - $1) ORDER BY r.attempt_started_at, r.id LIMIT $2",
                  select_list(kJobs), select_list(kRuns)),
      {no_progress_us, int64_t{limit}, queue.value_or("")});
  std::vector<StuckRun> out;
  const size_t at = kJobs.size() + kRuns.size();
  for (const auto& row : rows) {
    StuckRun s{model::JobView{job_from_row(row), run_from_row(row, kJobs.size())}, "", 0, row.text(at + 3)};
    const int64_t started = row.i64(at), lease = row.i64(at + 1), now = row.i64(at + 2);
    s.running_us = now - started;
    const auto& spec = s.view.job.spec;
    const auto& run = *s.view.latest_run;
    if (spec.timeout_us > 0 && s.running_us > spec.timeout_us + lease) {
      s.why = fmt::format("running {} past its --timeout {}: its agent did not stop it",
                          util::format_duration(util::Micros(s.running_us - spec.timeout_us)),
                          util::format_duration(util::Micros(spec.timeout_us)));
    } else {
      int64_t quiet = now - run.progress_at.value_or(started);
      s.why = run.progress_at ? fmt::format("no progress for {} (last: {:.0f}%{})",
                                            util::format_duration(util::Micros(quiet)), run.progress.value_or(0) * 100,
                                            run.progress_message.empty() ? "" : " " + run.progress_message)
                              : fmt::format("running {} without a progress report",
                                            util::format_duration(util::Micros(quiet)));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace jobctl::store
