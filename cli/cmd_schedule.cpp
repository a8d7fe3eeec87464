// jobctl cron next, schedules ls, schedule runs|trigger|backfill, update:
// checking cron expressions and managing schedules.
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/output.hpp"
#include "common/ops/ids.hpp"
#include "common/ops/schedules.hpp"
#include "common/cron/cron.hpp"
#include "common/cron/plan.hpp"
#include "common/model/job_json.hpp"
#include "common/store/dags.hpp"
#include "common/store/schedules.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/option_values.hpp"
#include "common/util/tz.hpp"
#include "common/util/time.hpp"

namespace jobctl::cli {
namespace {

// A schedule's zone, to show its times in; UTC on a host that does not
// know it (older tzdata, or none), which failed the whole table with exit 2.
std::shared_ptr<const util::TimeZone> zone_shown(const std::string& name) {
  try {
    return util::TimeZone::locate(name);
  } catch (const Error& e) {
    if (e.code() != ExitCode::usage) throw;
    return util::TimeZone::locate("UTC");
  }
}

// The schedule's next fire time after now, from its expression: the leader
// may have made its run already (next_fire_at is past the horizon).
std::string next_text(const model::Job& job, int64_t now) {
  if (job.paused) return "paused";
  auto next = ops::next_fire(job, now);
  // Ended: its expression goes on, its bounds do not.
  if (!next) return cron::next_of_expression(job, now) ? "ended" : "never";
  auto zone = zone_shown(job.spec.schedule->tz);
  return util::format_local(*next, *zone) + " (" + util::format_age(*next, now) + ")";
}

// A schedule's bounds, in its zone: "from 2026-12-01 09:00:00 CET, 3 of
// 10 runs"; "-" when it has none.
std::string bounds_text(const model::Job& job) {
  const auto& sc = *job.spec.schedule;
  auto zone = zone_shown(sc.tz);
  std::vector<std::string> parts;
  if (sc.starts_at_us) parts.push_back("from " + util::format_local(*sc.starts_at_us, *zone));
  if (sc.ends_at_us) parts.push_back("until " + util::format_local(*sc.ends_at_us, *zone));
  if (sc.max_runs) parts.push_back(fmt::format("{} of {} runs", job.fired, *sc.max_runs));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, ", "));
}

// Why a fire time is not the plain reading of the expression, when DST is
// the reason: "" otherwise.
std::string dst_note(int64_t at_us, const cron::Expr& expr, const util::TimeZone& zone) {
  static const auto utc = util::TimeZone::locate("UTC");
  const int64_t s = at_us / 1'000'000;
  const int64_t local_s = s + zone.offset_at(s);
  const bool repeated = zone.resolve(local_s).kind == util::TimeZone::Local::Kind::repeated;
  if (expr.follows_elapsed_time()) return repeated ? "the clocks show this time twice: it fires at both" : "";
  if (repeated) return "the clocks show this time twice: it fires at the first";
  // On the UTC zone the reading is the instant: does the expression name it?
  const bool named = expr.next((local_s - 1) * 1'000'000, *utc) == local_s * 1'000'000;
  const bool after_gap = zone.offset_at(s - 1) < zone.offset_at(s);
  return after_gap && !named ? "the scheduled time falls in a DST gap: it fires when the gap ends" : "";
}

void register_cron_next(CLI::App& app, Context& ctx) {
  struct Flags {
    std::string expr, tz = "UTC", from, key;
    int count = 5;
  };
  auto f = std::make_shared<Flags>();
  auto* cron = app.add_subcommand("cron", "Check cron expressions: jobctl cron next EXPR");
  cron->require_subcommand(1);
  auto* cmd = cron->add_subcommand("next", "Print the next fire times of a cron expression, local and UTC");
  cmd->add_option("expr", f->expr, "The expression, quoted: '30 2 * * *', '@daily', '@every 90m'")->required();
  cmd->add_option("--tz", f->tz, "IANA time zone it is evaluated in")->capture_default_str();
  cmd->add_option("-n,--count", f->count, "How many fire times")->check(util::whole_number(1, 10000))->capture_default_str();
  cmd->add_option("--from", f->from, "Start after this time: RFC 3339, or 'YYYY-MM-DD HH:MM' in --tz (default now)");
  cmd->add_option("--key", f->key, "What H hashes: the job's name, or its id when unnamed (default: none)");
  cmd->footer("DST: an expression with * in its minute or hour field (and @hourly, @every) follows elapsed\n"
              "time; any other fires once per local time, at the first instant after a DST gap and at the\n"
              "first of a repeated hour. See jobctl(1), CRON EXPRESSIONS.");
  cmd->callback([f, &ctx] {
    auto expr = cron::Expr::parse(f->expr, f->key);
    auto zone = util::TimeZone::locate(util::given_zone(f->tz, "--tz"));
    int64_t from = f->from.empty() ? util::now_micros() : util::parse_at(f->from, f->tz, "--from", util::OwnOffset::wins);
    std::vector<int64_t> times;
    for (auto t = expr.next(from, *zone, from); t && static_cast<int>(times.size()) < f->count;
         t = expr.next(*t, *zone, from))
      times.push_back(*t);
    if (times.empty())
      std::fprintf(stderr, "note: it does not fire before the year 10000, where jobctl's calendar ends\n");
    else if (static_cast<int>(times.size()) < f->count)
      std::fprintf(stderr, "note: it fires only %zu time%s before the year 10000, where jobctl's calendar ends\n",
                   times.size(), times.size() == 1 ? "" : "s");
    if (ctx.format() == OutputFormat::json) {
      nlohmann::json out = nlohmann::json::array();
      for (int64_t t : times) {
        nlohmann::json fire = {{"local", util::format_local(t, *zone)}, {"utc", util::format_time(t)}};
        if (auto note = dst_note(t, expr, *zone); !note.empty()) fire["note"] = note;
        out.push_back(std::move(fire));
      }
      print_json({{"expr", expr.text()}, {"tz", zone->name()}, {"days_either", expr.days_either()},
                  {"elapsed_time", expr.follows_elapsed_time()}, {"next", out}});
      return;
    }
    std::vector<TableRow> rows;
    for (size_t i = 0; i < times.size(); ++i)
      rows.push_back({std::to_string(i + 1), util::format_local(times[i], *zone), util::format_time(times[i]),
                      dst_note(times[i], expr, *zone)});
    print_table({"#", "LOCAL (" + zone->name() + ")", "UTC", "NOTE"}, rows);
    if (expr.days_either())
      std::fprintf(stderr, "note: day-of-month and day-of-week are both restricted: a day matching either fires\n");
  });
}

void register_schedules_ls(CLI::App& app, Context& ctx) {
  auto* group = app.add_subcommand("schedules", "List schedules: jobctl schedules ls");
  group->require_subcommand(1);
  auto* cmd = group->add_subcommand("ls", "List schedules with their expression, zone, next fire and last run");
  cmd->callback([&ctx] {
    if (ctx.format() == OutputFormat::json) {
      print_json(ops::schedules_json(ctx.store()));
      return;
    }
    auto schedules = ctx.store().schedules().list_schedules();
    int64_t now = util::now_micros();
    std::vector<TableRow> rows;
    for (const auto& v : schedules) {
      const auto& sc = *v.job.spec.schedule;
      rows.push_back({v.job.id, v.job.spec.name.empty() ? "-" : cell(v.job.spec.name, 24), cell(sc.cron, 24), sc.tz,
                      next_text(v.job, now), v.last_run ? std::string(model::to_string(v.last_run->status)) : "-",
                      std::string(model::to_string(sc.overlap)), std::string(model::to_string(sc.misfire)),
                      bounds_text(v.job), std::to_string(v.job.version)});
    }
    print_table({"ID", "NAME", "CRON", "TZ", "NEXT", "LAST", "OVERLAP", "MISFIRE", "BOUNDS", "VERSION"}, rows);
  });
}

// A scheduled DAG's occurrences are DAG runs, as a table.
void print_dag_occurrences(Context& ctx, const model::Job& schedule, int limit) {
  auto runs = ctx.store().dags().list_dag_runs(limit, schedule.dag_id);
  auto zone = zone_shown(schedule.spec.schedule->tz);
  std::vector<TableRow> rows;
  for (const auto& v : runs)
    rows.push_back({v.id, v.occurrence ? util::format_local(*v.occurrence, *zone) : "(forced trigger)", v.status,
                    util::format_time(v.created_at)});
  print_table({"DAG RUN", "OCCURRENCE", "STATUS", "CREATED"}, rows);
}

void register_schedule_runs(CLI::App& group, Context& ctx) {
  struct Flags {
    std::string id;
    int limit = 20;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = group.add_subcommand("runs", "Past occurrences of a schedule: when, status, duration, why skipped");
  completes(cmd->add_option("id", f->id, "Schedule (job) id, or a scheduled DAG's id"), Completes::job_id)->required();
  cmd->add_option("--limit", f->limit, "How many, newest first")->check(util::whole_number(1, 100000))->capture_default_str();
  cmd->callback([f, &ctx] {
    if (ctx.format() == OutputFormat::json) {
      print_json(ops::schedule_runs_json(ctx.store(), f->id, f->limit));
      return;
    }
    auto r = ops::resolve_id(ctx.store(), f->id);
    if (r.job.job.kind == "dag") {
      print_dag_occurrences(ctx, r.job.job, f->limit);
      return;
    }
    auto runs = ctx.store().schedules().schedule_runs(r.job.job.id, f->limit);
    auto zone = zone_shown(r.job.job.spec.schedule->tz);
    std::vector<TableRow> rows;
    for (const auto& run : runs) {
      std::string duration = "-";
      if (run.started_at && run.finished_at) duration = util::format_duration(util::Micros(*run.finished_at - *run.started_at));
      rows.push_back({run.id, run.occurrence ? util::format_local(*run.occurrence, *zone) : "(forced trigger)",
                      std::string(model::to_string(run.status)), time_or_dash(run.started_at),
                      duration, std::to_string(run.job_version), cell(run.error, 70)});
    }
    print_table({"RUN", "OCCURRENCE", "STATUS", "STARTED", "DURATION", "VERSION", "NOTE"}, rows);
  });
}

void register_schedule_trigger(CLI::App& group, Context& ctx) {
  struct Flags {
    std::string id;
    bool force = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = group.add_subcommand("trigger", "Run one occurrence of a schedule now (obeys --overlap unless --force)");
  completes(cmd->add_option("id", f->id, "Schedule (job) id, or a scheduled DAG's id"), Completes::job_id)->required();
  cmd->add_flag("--force", f->force, "Start it even if the overlap policy would skip it or make it wait");
  cmd->callback([f, &ctx] {
    auto j = ops::trigger_schedule(ctx.store(), f->id, f->force);
    if (ctx.output == "json") print_json(j);
    else std::printf("%s\n", j["run"].get<std::string>().c_str());
  });
}

void register_schedule_backfill(CLI::App& group, Context& ctx) {
  struct Flags {
    std::string id, from, to, tz = "UTC";
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = group.add_subcommand("backfill", "Run the occurrences of a past span that have no run yet");
  completes(cmd->add_option("id", f->id, "Schedule (job) id, or a scheduled DAG's id"), Completes::job_id)->required();
  cmd->add_option("--from", f->from, "First time of the span: RFC 3339, or 'YYYY-MM-DD HH:MM' in --tz")->required();
  cmd->add_option("--to", f->to, "Last time of the span (inclusive), not later than now")->required();
  cmd->add_option("--tz", f->tz, "IANA zone of --from/--to without an offset")->capture_default_str();
  cmd->callback([f, &ctx] {
    util::given_zone(f->tz, "--tz");
    int64_t from = util::parse_at(f->from, f->tz, "--from", util::OwnOffset::wins);
    int64_t to = util::parse_at(f->to, f->tz, "--to", util::OwnOffset::wins);
    auto r = ops::resolve_id(ctx.store(), f->id);
    auto result = ctx.store().schedules().backfill(r.job.job.id, from, to);
    if (ctx.output == "json") {
      print_json({{"id", r.job.job.id}, {"occurrences", result.occurrences}, {"created", result.created},
                  {"cut", result.cut}});
      return;
    }
    if (result.cut)
      std::fprintf(stderr, "note: the span was cut to the schedule's bounds (%s)\n",
                   bounds_text(r.job.job).c_str());
    std::fprintf(stderr, "job %s: %lld occurrences in the span, %lld new runs (%lld had one already)\n",
                 r.job.job.id.c_str(), static_cast<long long>(result.occurrences),
                 static_cast<long long>(result.created), static_cast<long long>(result.occurrences - result.created));
  });
}

}  // namespace

void register_schedule(CLI::App& app, Context& ctx) {
  register_cron_next(app, ctx);
  register_schedules_ls(app, ctx);
  auto* group = app.add_subcommand("schedule", "Act on one schedule: runs, trigger, backfill");
  group->require_subcommand(1);
  register_schedule_runs(*group, ctx);
  register_schedule_trigger(*group, ctx);
  register_schedule_backfill(*group, ctx);
}

}  // namespace jobctl::cli
