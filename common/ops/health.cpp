#include "common/ops/health.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/store/queues.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/time.hpp"

namespace jobctl::ops {
namespace {

using nlohmann::json;

json percentiles_json(const store::Percentiles& p) {
  return json{{"samples", p.samples}, {"p50", p.p50}, {"p95", p.p95}, {"p99", p.p99}};
}

}  // namespace

std::map<std::string, int> agents_by_queue(const std::vector<model::Worker>& workers) {
  std::map<std::string, int> out;
  for (const auto& w : workers)
    if (w.state == model::WorkerState::active)
      for (const auto& q : w.queues) ++out[q];
  return out;
}

std::map<std::string, bool> paused_queues(store::Store& store) {
  std::map<std::string, bool> paused;
  for (const auto& name : store.queues().paused_queues()) paused[name] = true;
  return paused;
}

int64_t window_of(const std::string& since, const std::string& what, const std::string& hint) {
  auto us = util::parse_duration(since, what.c_str()).count();
  if (us <= 0) throw usage_error(what + " must be longer than 0s", hint);
  return us;
}

std::string seconds_text(double s) {
  if (s < 0.01) return fmt::format("{:.1f}ms", s * 1000);
  if (s < 1) return fmt::format("{:.0f}ms", s * 1000);
  if (s < 60) return fmt::format("{:.1f}s", s);
  return util::format_duration(util::Micros(static_cast<int64_t>(s * 1e6)));
}

nlohmann::json series_json(store::Store& store, const std::optional<std::string>& queue, int64_t window_us,
                           int64_t step_us) {
  if (step_us < 1'000'000) throw usage_error("the step must be at least 1s", "e.g. step=1m");
  if (window_us / step_us > 1440)
    throw usage_error("that window has more than 1,440 steps of that size", "take a longer step, e.g. since=1d&step=5m");
  auto points = nlohmann::json::array();
  for (const auto& p : store.admin().series(store::StatsFilter{queue, window_us}, step_us)) {
    const int64_t ended = p.succeeded_attempts + p.failed_attempts;
    points.push_back({{"at", util::format_time(p.at)},
                      {"succeeded", p.succeeded},
                      {"dead", p.dead},
                      {"failed", p.failed_attempts},
                      {"failure_rate", ended == 0 ? nlohmann::json(nullptr)
                                                  : nlohmann::json(static_cast<double>(p.failed_attempts) /
                                                                   static_cast<double>(ended))},
                      {"lag_p99_s", p.lag_p99_s ? nlohmann::json(*p.lag_p99_s) : nlohmann::json(nullptr)}});
  }
  return {{"since_s", window_us / 1'000'000}, {"step_s", step_us / 1'000'000}, {"points", points}};
}

double failure_rate(const store::QueueStats& s) {
  int64_t n = s.failed_attempts + s.succeeded_attempts;
  return n == 0 ? 0 : static_cast<double>(s.failed_attempts) / static_cast<double>(n);
}

double throughput(const store::QueueStats& s) {
  return static_cast<double>(s.succeeded + s.dead) / (static_cast<double>(s.window_us) / 1e6);
}

json stats_json(store::Store& store, const std::optional<std::string>& queue, int64_t window_us) {
  store::StatsFilter filter;
  filter.queue = queue;
  filter.window_us = window_us;
  auto stats = store.admin().stats(filter);
  auto agents = agents_by_queue(store.admin().list_workers());
  auto paused = paused_queues(store);
  json out = json::array();
  for (const auto& s : stats) {
    json j{{"queue", s.queue},
           {"priority", model::to_string(s.priority)},
           {"window_s", static_cast<double>(s.window_us) / 1e6},
           {"ready", s.ready},
           {"scheduled", s.scheduled},
           {"blocked", s.blocked},
           {"running", s.running},
           {"succeeded", s.succeeded},
           {"dead", s.dead},
           {"cancelled", s.cancelled},
           {"failed_attempts", s.failed_attempts},
           {"succeeded_attempts", s.succeeded_attempts},
           {"failure_rate", failure_rate(s)},
           {"throughput_per_s", throughput(s)},
           {"lag_s", percentiles_json(s.lag_s)},
           {"duration_s", percentiles_json(s.duration_s)},
           {"dead_letter", s.dead_letter},
           {"held", s.held},
           {"live_agents", agents[s.queue]},
           {"queue_paused", paused[s.queue]}};
    j["oldest_ready_s"] = s.oldest_ready_us ? json(static_cast<double>(*s.oldest_ready_us) / 1e6) : json(nullptr);
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<std::string> breaches(store::Store& store, const Thresholds& t) {
  store::StatsFilter filter;
  filter.queue = t.queue;
  filter.window_us = t.window_us;
  auto stats = store.admin().stats(filter);
  std::vector<std::string> out;
  if (t.max_dlq) {
    int64_t dlq = 0;
    for (const auto& s : stats) dlq += s.dead_letter;
    if (dlq > *t.max_dlq) out.push_back(fmt::format("the dead-letter queue holds {} runs (--max-dlq {})", dlq, *t.max_dlq));
  }
  if (!t.max_lag.empty()) {
    double limit = static_cast<double>(util::parse_duration(t.max_lag, "--max-lag").count()) / 1e6;
    for (const auto& s : stats)
      if (s.lag_s.samples > 0 && s.lag_s.p99 > limit)
        out.push_back(fmt::format("queue {} ({}) scheduling lag p99 is {} (--max-lag {})", s.queue,
                                  model::to_string(s.priority), seconds_text(s.lag_s.p99), t.max_lag));
  }
  if (!t.max_oldest.empty()) {
    int64_t limit = util::parse_duration(t.max_oldest, "--max-oldest").count();
    for (const auto& s : stats)
      if (s.oldest_ready_us && *s.oldest_ready_us > limit)
        out.push_back(fmt::format("queue {} ({}) has a run waiting for {} (--max-oldest {})", s.queue,
                                  model::to_string(s.priority),
                                  seconds_text(static_cast<double>(*s.oldest_ready_us) / 1e6), t.max_oldest));
  }
  if (t.max_failure_rate) {
    std::map<std::string, std::pair<int64_t, int64_t>> attempts;  // queue → failed, ended
    for (const auto& s : stats) {
      attempts[s.queue].first += s.failed_attempts;
      attempts[s.queue].second += s.failed_attempts + s.succeeded_attempts;
    }
    for (const auto& [queue, a] : attempts) {
      const double pct = a.second == 0 ? 0 : 100.0 * static_cast<double>(a.first) / static_cast<double>(a.second);
      if (pct > *t.max_failure_rate)
        out.push_back(fmt::format("queue {}: {:.1f}% of the attempts of the last {} failed, {} of {} "
                                  "(--max-failure-rate {:g})",
                                  queue, pct, util::format_duration(util::Micros(t.window_us)), a.first, a.second,
                                  *t.max_failure_rate));
    }
  }
  if (t.max_ready) {
    std::map<std::string, int64_t> ready;
    for (const auto& s : stats) ready[s.queue] += s.ready;
    for (const auto& [queue, n] : ready)
      if (n > *t.max_ready)
        out.push_back(fmt::format("queue {} has {} runs ready and waiting (--max-ready {})", queue, n, *t.max_ready));
  }
  if (t.max_stuck) {
    const int64_t after = util::parse_duration(t.stuck_after, "--stuck-after").count();
    constexpr int kCounted = 1000;  // past that, "1000 or more"
    auto stuck = store.admin().stuck_runs(after, std::max(kCounted, *t.max_stuck + 1), t.queue);
    if (static_cast<int>(stuck.size()) > *t.max_stuck)
      out.push_back(fmt::format("{}{} running runs look stuck (--max-stuck {}), the longest {}: {}", stuck.size(),
                                static_cast<int>(stuck.size()) >= kCounted ? " or more" : "", *t.max_stuck,
                                stuck[0].view.latest_run->id, stuck[0].why));
  }
  if (t.min_workers) {
    int live = 0;
    for (const auto& w : store.admin().list_workers())
      if (w.state == model::WorkerState::active &&
          (!t.queue || std::find(w.queues.begin(), w.queues.end(), *t.queue) != w.queues.end()))
        ++live;
    if (live < *t.min_workers)
      out.push_back(fmt::format("{} live agent{}{} (--min-workers {})", live, live == 1 ? "" : "s",
                                t.queue ? " on queue " + *t.queue : "", *t.min_workers));
  }
  return out;
}

}  // namespace jobctl::ops
