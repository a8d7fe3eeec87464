// jobctl stats, check: is the system healthy, and what is stuck or failing.
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "cli/health_tables.hpp"
#include "cli/output.hpp"
#include "common/store/admin.hpp"
#include "common/store/queues.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"

namespace jobctl::cli {
namespace {

using nlohmann::json;

// 0.0123 → "12ms", 3.4 → "3.4s", 300 → "5m".
std::string seconds_text(double s) {
  if (s < 0.01) return fmt::format("{:.1f}ms", s * 1000);
  if (s < 1) return fmt::format("{:.0f}ms", s * 1000);
  if (s < 60) return fmt::format("{:.1f}s", s);
  return util::format_duration(util::Micros(static_cast<int64_t>(s * 1e6)));
}

std::string triple(const store::Percentiles& p) {
  if (p.samples == 0) return "-";
  return seconds_text(p.p50) + "/" + seconds_text(p.p95) + "/" + seconds_text(p.p99);
}

double failure_rate(const store::QueueStats& s) {
  int64_t n = s.failed_attempts + s.succeeded_attempts;
  return n == 0 ? 0 : static_cast<double>(s.failed_attempts) / static_cast<double>(n);
}

// Runs that ended (succeeded or dead) per second over the window.
double throughput(const store::QueueStats& s) {
  return static_cast<double>(s.succeeded + s.dead) / (static_cast<double>(s.window_us) / 1e6);
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

int64_t window_of(const std::string& since) {
  auto us = util::parse_duration(since, "--since").count();
  if (us <= 0) throw usage_error("--since must be longer than 0s", "e.g. --since 15m");
  return us;
}

namespace {

json percentiles_json(const store::Percentiles& p) {
  return json{{"samples", p.samples}, {"p50", p.p50}, {"p95", p.p95}, {"p99", p.p99}};
}

struct StatsFlags {
  std::string queue, since = "1h";
};

void run_stats(Context& ctx, const StatsFlags& f) {
  store::StatsFilter filter;
  if (!f.queue.empty()) filter.queue = f.queue;
  filter.window_us = window_of(f.since);
  auto stats = ctx.store().admin().stats(filter);
  auto agents = agents_by_queue(ctx.store().admin().list_workers());
  auto paused = paused_queues(ctx.store());

  if (ctx.format() == OutputFormat::json) {
    print_json_list(stats, [&](const store::QueueStats& s) {
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
      return j;
    });
    return;
  }
  std::printf("over the last %s:\n", util::format_duration(util::Micros(filter.window_us)).c_str());
  print_stats_table(stats, agents, paused);
}

}  // namespace

void print_stats_table(const std::vector<store::QueueStats>& stats, std::map<std::string, int> agents,
                       std::map<std::string, bool> paused) {
  std::vector<TableRow> rows;
  std::vector<std::string> notes;
  for (const auto& s : stats) {
    rows.push_back({s.queue, std::string(model::to_string(s.priority)), std::to_string(s.ready),
                    std::to_string(s.scheduled), std::to_string(s.running),
                    s.oldest_ready_us ? seconds_text(static_cast<double>(*s.oldest_ready_us) / 1e6) : "-",
                    std::to_string(s.succeeded), std::to_string(s.dead),
                    s.failed_attempts + s.succeeded_attempts ? fmt::format("{:.1f}%", failure_rate(s) * 100) : "-",
                    fmt::format("{:.2f}", throughput(s)), triple(s.lag_s), triple(s.duration_s),
                    std::to_string(s.dead_letter), std::to_string(agents[s.queue])});
    if (s.ready > 0 && paused[s.queue])
      notes.push_back(fmt::format("queue {} is paused: its {} ready runs wait for `jobctl queue resume {}`", s.queue,
                                  s.ready, s.queue));
    else if (s.ready > 0 && agents[s.queue] == 0)
      notes.push_back(fmt::format("queue {}: {} ready runs but no live agent claims from it (jobctl workers)",
                                  s.queue, s.ready));
  }
  print_table({"QUEUE", "PRIORITY", "READY", "LATER", "RUNNING", "OLDEST", "SUCCEEDED", "DEAD", "FAILED%", "DONE/S",
               "LAG p50/p95/p99", "DURATION p50/p95/p99", "DLQ", "AGENTS"},
              rows);
  std::sort(notes.begin(), notes.end());
  notes.erase(std::unique(notes.begin(), notes.end()), notes.end());
  for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
}

namespace {

struct CheckFlags {
  std::string queue, since = "15m", max_lag, max_oldest;
  std::optional<int> max_dlq;  // int: CLI11 refuses a number past it (an int64 it silently clamped)
  std::optional<int> min_workers;
};

// The thresholds breached, one phrase each.
std::vector<std::string> breaches(Context& ctx, const CheckFlags& f) {
  store::StatsFilter filter;
  if (!f.queue.empty()) filter.queue = f.queue;
  filter.window_us = window_of(f.since);
  auto stats = ctx.store().admin().stats(filter);
  std::vector<std::string> out;
  if (f.max_dlq) {
    int64_t dlq = 0;
    for (const auto& s : stats) dlq += s.dead_letter;
    if (dlq > *f.max_dlq) out.push_back(fmt::format("the dead-letter queue holds {} runs (--max-dlq {})", dlq, *f.max_dlq));
  }
  if (!f.max_lag.empty()) {
    double limit = static_cast<double>(util::parse_duration(f.max_lag, "--max-lag").count()) / 1e6;
    for (const auto& s : stats)
      if (s.lag_s.samples > 0 && s.lag_s.p99 > limit)
        out.push_back(fmt::format("queue {} ({}) scheduling lag p99 is {} (--max-lag {})", s.queue,
                                  model::to_string(s.priority), seconds_text(s.lag_s.p99), f.max_lag));
  }
  if (!f.max_oldest.empty()) {
    int64_t limit = util::parse_duration(f.max_oldest, "--max-oldest").count();
    for (const auto& s : stats)
      if (s.oldest_ready_us && *s.oldest_ready_us > limit)
        out.push_back(fmt::format("queue {} ({}) has a run waiting for {} (--max-oldest {})", s.queue,
                                  model::to_string(s.priority),
                                  seconds_text(static_cast<double>(*s.oldest_ready_us) / 1e6), f.max_oldest));
  }
  if (f.min_workers) {
    int live = 0;
    for (const auto& w : ctx.store().admin().list_workers())
      if (w.state == model::WorkerState::active &&
          (f.queue.empty() || std::find(w.queues.begin(), w.queues.end(), f.queue) != w.queues.end()))
        ++live;
    if (live < *f.min_workers)
      out.push_back(fmt::format("{} live agent{}{} (--min-workers {})", live, live == 1 ? "" : "s",
                                f.queue.empty() ? "" : " on queue " + f.queue, *f.min_workers));
  }
  return out;
}

}  // namespace

void run_doctor(Context& ctx) {
  auto findings = ctx.store(Context::Schema::any).admin().doctor();
  auto level = [](store::Finding::Level l) {
    return l == store::Finding::Level::ok ? "ok" : l == store::Finding::Level::warn ? "warn" : "FAIL";
  };
  bool healthy = std::all_of(findings.begin(), findings.end(),
                             [](const store::Finding& f) { return f.level == store::Finding::Level::ok; });
  if (ctx.format() == OutputFormat::json) {
    print_json_list(findings, [&](const store::Finding& f) {
      return json{{"check", f.name}, {"status", std::string(level(f.level)) == "FAIL" ? "fail" : level(f.level)},
                  {"detail", f.detail}, {"hint", f.hint.empty() ? json(nullptr) : json(f.hint)}};
    });
  } else {
    std::vector<TableRow> rows;
    for (const auto& f : findings) rows.push_back({f.name, level(f.level), f.detail, f.hint});
    print_table({"CHECK", "STATUS", "FOUND", "HINT"}, rows);
  }
  if (!healthy) ctx.exit_code = static_cast<int>(ExitCode::check_failed);
}

void register_health(CLI::App& app, Context& ctx) {
  auto sf = std::make_shared<StatsFlags>();
  auto* stats = app.add_subcommand(
      "stats", "Per queue and priority: waiting, running, oldest ready, outcomes, failure rate, throughput, lag "
               "and duration percentiles, dead-letter depth");
  stats->add_option("--queue", sf->queue, "Only this queue");
  stats->add_option("--since", sf->since, "The window for outcomes, rates and percentiles")->capture_default_str();
  stats->callback([sf, &ctx] { run_stats(ctx, *sf); });

  auto cf = std::make_shared<CheckFlags>();
  auto* check = app.add_subcommand(
      "check", "Exit 1 with a one-line reason when a threshold is breached (for cron alerts and CI gates)");
  check->add_option("--max-dlq", cf->max_dlq, "At most this many runs in the dead-letter queue")
      ->check(CLI::NonNegativeNumber);
  check->add_option("--max-lag", cf->max_lag, "Scheduling lag p99 (due to claimed) over --since at most this long");
  check->add_option("--max-oldest", cf->max_oldest, "No due run waiting longer than this");
  check->add_option("--min-workers", cf->min_workers, "At least this many live agents (on --queue, when given)")
      ->check(CLI::NonNegativeNumber);
  check->add_option("--queue", cf->queue, "Only this queue");
  check->add_option("--since", cf->since, "The window for --max-lag")->capture_default_str();
  auto* doctor = app.add_subcommand(
      "doctor", "Store health: schema, clock skew, and vacuum, long transactions and indexes (PostgreSQL) or WAL "
                "and integrity (SQLite); exit 1 when something needs attention");
  doctor->callback([&ctx] { run_doctor(ctx); });

  check->callback([cf, &ctx] {
    if (!cf->max_dlq && cf->max_lag.empty() && cf->max_oldest.empty() && !cf->min_workers)
      throw usage_error("no threshold given", "e.g. jobctl check --max-dlq 0 --max-oldest 5m --min-workers 1");
    auto found = breaches(ctx, *cf);
    if (found.empty()) {
      std::printf("ok\n");
      return;
    }
    std::string line;
    for (const auto& b : found) line += (line.empty() ? "" : "; ") + b;
    std::printf("FAILED: %s\n", line.c_str());
    ctx.exit_code = static_cast<int>(ExitCode::check_failed);
  });
}

}  // namespace jobctl::cli
