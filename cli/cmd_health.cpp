// jobctl stats, check: is the system healthy, and what is stuck or failing.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "cli/health_tables.hpp"
#include "cli/output.hpp"
#include "common/ops/health.hpp"
#include "common/store/admin.hpp"
#include "common/store/queues.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/option_values.hpp"

namespace jobctl::cli {
namespace {

using nlohmann::json;

std::string triple(const store::Percentiles& p) {
  if (p.samples == 0) return "-";
  return ops::seconds_text(p.p50) + "/" + ops::seconds_text(p.p95) + "/" + ops::seconds_text(p.p99);
}

struct StatsFlags {
  std::string queue, since = "1h";
};

void run_stats(Context& ctx, const StatsFlags& f) {
  std::optional<std::string> queue;
  if (!f.queue.empty()) queue = f.queue;
  const int64_t window = ops::window_of(f.since);
  if (ctx.format() == OutputFormat::json) {
    print_json(ops::stats_json(ctx.store(), queue, window));
    return;
  }
  store::StatsFilter filter;
  filter.queue = queue;
  filter.window_us = window;
  auto stats = ctx.store().admin().stats(filter);
  std::printf("over the last %s:\n", util::format_duration(util::Micros(filter.window_us)).c_str());
  print_stats_table(stats, ops::agents_by_queue(ctx.store().admin().list_workers()), ops::paused_queues(ctx.store()));
}

}  // namespace

void print_stats_table(const std::vector<store::QueueStats>& stats, std::map<std::string, int> agents,
                       std::map<std::string, bool> paused) {
  std::vector<TableRow> rows;
  std::vector<std::string> notes;
  for (const auto& s : stats) {
    rows.push_back({s.queue, std::string(model::to_string(s.priority)), std::to_string(s.ready),
                    std::to_string(s.scheduled), std::to_string(s.running),
                    s.oldest_ready_us ? ops::seconds_text(static_cast<double>(*s.oldest_ready_us) / 1e6) : "-",
                    std::to_string(s.succeeded), std::to_string(s.dead),
                    s.failed_attempts + s.succeeded_attempts ? fmt::format("{:.1f}%", ops::failure_rate(s) * 100) : "-",
                    fmt::format("{:.2f}", ops::throughput(s)), triple(s.lag_s), triple(s.duration_s),
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
  std::string queue, since = "15m";
  ops::Thresholds thresholds;
};

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
  auto& limits = cf->thresholds;
  // int: CLI11 refuses a number past it (an int64 it silently clamped)
  check->add_option("--max-dlq", limits.max_dlq, "At most this many runs in the dead-letter queue")
      ->check(util::whole_number(0));
  check->add_option("--max-lag", limits.max_lag, "Scheduling lag p99 (due to claimed) over --since at most this long");
  check->add_option("--max-oldest", limits.max_oldest, "No due run waiting longer than this");
  check->add_option("--min-workers", limits.min_workers, "At least this many live agents (on --queue, when given)")
      ->check(util::whole_number(0));
  check->add_option("--max-failure-rate", limits.max_failure_rate,
                    "At most this percentage of a queue's attempts over --since failed")
      ->check(util::number_in(0, 100));
  check->add_option("--max-ready", limits.max_ready, "At most this many runs of a queue due and waiting for an agent")
      ->check(util::whole_number(0));
  check->add_option("--max-stuck", limits.max_stuck,
                    "At most this many running runs that look stuck, as jobctl ls --stuck lists them")
      ->check(util::whole_number(0));
  auto* stuck_after =
      check->add_option("--stuck-after", limits.stuck_after, "For --max-stuck: no progress report for this long")
          ->capture_default_str();
  check->add_option("--queue", cf->queue, "Only this queue");
  check->add_option("--since", cf->since, "The window for --max-lag and --max-failure-rate")->capture_default_str();
  auto* doctor = app.add_subcommand(
      "doctor", "Store health: schema, clock skew, and vacuum, long transactions, indexes and a synchronous standby "
                "that holds commits (PostgreSQL) or WAL and integrity (SQLite); exit 1 when something needs attention");
  doctor->callback([&ctx] { run_doctor(ctx); });

  check->callback([cf, stuck_after, &ctx] {
    auto t = cf->thresholds;
    if (!t.any()) throw usage_error("no threshold given", "e.g. jobctl check --max-dlq 0 --max-oldest 5m --min-workers 1");
    if (stuck_after->count() > 0 && !t.max_stuck) throw usage_error("--stuck-after goes with --max-stuck");
    if (t.max_failure_rate && std::isnan(*t.max_failure_rate))
      throw usage_error("--max-failure-rate must be a percentage from 0 to 100");
    util::parse_duration(t.stuck_after, "--stuck-after");  // refused before anything is read
    if (!cf->queue.empty()) t.queue = cf->queue;
    t.window_us = ops::window_of(cf->since);
    auto found = ops::breaches(ctx.store(), t);
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
