// jobctl get, ls, runs, logs: reading jobs, their runs and attempts.
#include <cstdio>

#include <fmt/format.h>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/follow.hpp"
#include "cli/output.hpp"
#include "cli/run_status.hpp"
#include "cli/standard_streams.hpp"
#include "common/ops/ids.hpp"
#include "cli/waiting.hpp"
#include "common/ops/job_records.hpp"
#include "common/ops/job_views.hpp"
#include "common/model/job_json.hpp"
#include "common/store/admin.hpp"
#include "common/store/jobs.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/option_values.hpp"
#include "common/util/time.hpp"

namespace jobctl::cli {
namespace {

std::string duration_between(int64_t from, const std::optional<int64_t>& to) {
  if (!to) return "-";
  return util::format_duration(util::Micros(*to - from));
}

void show_job(const model::JobView& v, const ops::WaitingReason& waiting) {
  const auto& j = v.job;
  std::vector<std::pair<std::string, std::string>> f{
      {"id", j.id},
      {"name", j.spec.name.empty() ? "-" : j.spec.name},
      {"status", v.latest_run ? status_text(*v.latest_run) : "-"},
      {j.spec.command.webhook ? "webhook" : "command", j.spec.command.display()},
      {"queue", j.spec.queue},
      {"priority", std::string(model::to_string(j.spec.priority))},
      {"timeout", j.spec.timeout_us ? util::format_duration(util::Micros(j.spec.timeout_us)) : "none"},
      {"version", std::to_string(j.version)},
      {"created", util::format_time(j.created_at)},
  };
  if (const auto& w = j.spec.command.webhook) {
    for (const auto& [name, value] : w->headers) f.emplace_back("header", name + ": " + value);
    if (w->body) f.emplace_back("data", cell(*w->body, 200));
    if (w->insecure) f.emplace_back("tls", "NOT verified (--insecure)");
    if (!w->sign_secret.empty()) f.emplace_back("signed", "HMAC-SHA256 with secret " + w->sign_secret);
  }
  for (const auto& url : j.spec.notify.urls) f.emplace_back("notify", url + " (on " + model::notify_on_text(j.spec.notify.on) + ")");
  if (j.kind == "notification") f.emplace_back("kind", "notification (--notify delivery)");
  if (!j.damaged.empty()) f.emplace_back("damaged", j.damaged);
  if (j.deleted_at) f.emplace_back("deleted", util::format_time(*j.deleted_at) + " (jobctl restore undoes it)");
  if (j.paused) f.emplace_back("paused", "yes");
  if (!j.spec.target.empty()) f.emplace_back("on", model::labels_display(j.spec.target));
  if (j.spec.fan_out) f.emplace_back("on each", model::fan_out_display(*j.spec.fan_out));
  if (j.spec.stagger_us) f.emplace_back("stagger", util::format_duration(util::Micros(j.spec.stagger_us)));
  if (int limit = model::group_limit(j.spec); limit > 0)
    f.emplace_back("max concurrent", fmt::format("{} ({})", limit,
                                                 j.spec.concurrency_key.empty() ? "of this job"
                                                                                : "key " + j.spec.concurrency_key));
  if (!j.spec.tenant.empty()) f.emplace_back("tenant", j.spec.tenant);
  if (!waiting.empty()) f.emplace_back("waiting", waiting.detail);
  if (!j.spec.cwd.empty()) f.emplace_back("cwd", j.spec.cwd);
  if (!j.spec.user.empty()) f.emplace_back("user", j.spec.user);
  for (const auto& [k, val] : j.spec.env) f.emplace_back("env", k + "=" + val);
  if (j.spec.payload) f.emplace_back("payload", cell(*j.spec.payload, 200));
  if (!j.spec.idempotency_key.empty()) f.emplace_back("idempotency key", j.spec.idempotency_key);
  if (const auto& r = v.latest_run) {
    f.emplace_back("run", r->id);
    f.emplace_back("available", util::format_time(r->available_at));
    f.emplace_back("started", time_or_dash(r->started_at));
    f.emplace_back("finished", time_or_dash(r->finished_at));
    if (r->started_at) f.emplace_back("duration", duration_between(*r->started_at, r->finished_at));
    f.emplace_back("attempts", std::to_string(r->attempts));
    if (r->exit_code) f.emplace_back("exit code", std::to_string(*r->exit_code));
    if (!r->lease_owner.empty()) f.emplace_back("worker", r->lease_owner);
    if (r->cancel_requested && !model::is_final(r->status)) f.emplace_back("cancel", "requested");
    if (r->progress)
      f.emplace_back("progress", fmt::format("{:.0f}%{}{}", *r->progress * 100,
                                             r->progress_message.empty() ? "" : " " + r->progress_message,
                                             r->progress_at ? " (" + util::format_age(*r->progress_at, util::now_micros()) + ")" : ""));
    if (r->checkpoint) f.emplace_back("checkpoint", cell(*r->checkpoint, 200));
    if (!r->error.empty()) f.emplace_back("error", r->error);
  }
  print_fields(f);
}

// A fan-out job's runs, one line per agent.
void show_per_agent(const model::Job& job, const std::vector<model::Run>& runs, ops::WaitingReasons& waiting) {
  std::vector<TableRow> rows;
  for (const auto& r : runs) {
    std::string status = status_text(r);
    if (auto why = waiting(job, r); !why.empty()) status += " (" + why.detail + ")";
    rows.push_back({r.pinned_to, status, std::to_string(r.attempts), r.exit_code ? std::to_string(*r.exit_code) : "-",
                    time_or_dash(r.started_at), r.started_at ? duration_between(*r.started_at, r.finished_at) : "-", r.id,
                    r.error.empty() ? "" : cell(r.error, 60)});
  }
  std::printf("\nper agent:\n");
  print_table({"AGENT", "STATUS", "ATTEMPTS", "EXIT", "STARTED", "DURATION", "RUN", "ERROR"}, rows);
}

void register_get(CLI::App& app, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("get", "Show one job and its latest run");
  completes(cmd->add_option("id", *id, "Job id (or run id)"), Completes::job_id)->required();
  cmd->callback([id, &ctx] {
    if (ctx.format() == OutputFormat::json) {
      print_json(ops::job_json(ctx.store(), *id));
      return;
    }
    auto r = ops::resolve_id(ctx.store(), *id);
    if (r.run) r.job.latest_run = r.run;
    ops::WaitingReasons reasons(ctx.store());
    show_job(r.job, reasons(r.job));
    auto per_agent = ops::per_agent_runs(ctx.store(), r.job);
    if (!per_agent.empty()) show_per_agent(r.job.job, per_agent, reasons);
  });
}

void list_stuck(Context& ctx, int64_t after_us, int limit, const std::string& queue) {
  auto stuck = ctx.store().admin().stuck_runs(after_us, limit, queue.empty() ? std::nullopt : std::optional(queue));
  if (ctx.format() == OutputFormat::json) {
    print_json_list(stuck, [](const store::StuckRun& s) {
      auto j = model::to_json(s.view);
      j["stuck"] = s.why;
      j["running_s"] = static_cast<double>(s.running_us) / 1e6;
      j["worker"] = s.worker;
      return j;
    });
    return;
  }
  std::vector<TableRow> rows;
  for (const auto& s : stuck) {
    const auto& r = *s.view.latest_run;
    rows.push_back({s.view.job.id, cell(s.view.job.spec.name, 24), r.id, s.worker,
                    util::format_duration(util::Micros(s.running_us)), cell(s.why, 80)});
  }
  print_table({"ID", "NAME", "RUN", "WORKER", "RUNNING", "WHY"}, rows);
}

void register_ls(CLI::App& app, Context& ctx) {
  struct Flags {
    std::string status, queue;
    std::string stuck_after = "1h";
    int limit = 50;
    bool deleted = false, stuck = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("ls", "List jobs, newest first");
  cmd->add_option("--status", f->status, "Only jobs whose latest run has this status")
      ->check(CLI::IsMember(model::names_of(model::kRunStatusNames)));
  cmd->add_option("--queue", f->queue, "Only jobs of this queue");
  cmd->add_option("--limit", f->limit, "At most this many jobs")->check(util::whole_number(1, 100000))->capture_default_str();
  cmd->add_flag("--deleted", f->deleted, "Only deleted jobs (jobctl delete); without it, only live ones");
  auto* stuck = cmd->add_flag("--stuck", f->stuck,
                              "Only running runs that look stuck: past their --timeout plus the lease, or without "
                              "progress for --stuck-after");
  cmd->add_option("--stuck-after", f->stuck_after,
                  "With --stuck: no progress report (jobctl progress), or none since the attempt started, this long")
      ->capture_default_str()
      ->needs(stuck);
  for (const char* other : {"--status", "--deleted"}) stuck->excludes(cmd->get_option(other));
  cmd->callback([f, &ctx] {
    if (f->stuck) {
      list_stuck(ctx, util::parse_duration(f->stuck_after, "--stuck-after").count(), f->limit, f->queue);
      return;
    }
    store::JobFilter filter;
    filter.deleted = f->deleted;
    if (!f->status.empty()) filter.status = model::parse_run_status(f->status);
    if (!f->queue.empty()) filter.queue = f->queue;
    filter.limit = f->limit;
    auto jobs = ctx.store().jobs().list_jobs(filter);
    if (ctx.format() == OutputFormat::json) {
      print_json(ops::job_list_json(ctx.store(), jobs));
      return;
    }
    ops::WaitingReasons waiting(ctx.store());
    std::vector<std::string> ids;
    for (const auto& v : jobs) ids.push_back(v.job.id);
    auto shown = ops::short_job_ids(ctx.store(), ids);  // what each takes to name it
    std::vector<TableRow> rows;
    int64_t now = util::now_micros();
    for (size_t i = 0; i < jobs.size(); ++i) {
      const auto& v = jobs[i];
      const auto& r = v.latest_run;
      std::string status = r ? status_text(*r) : "-";
      if (auto why = waiting(v); !why.empty()) status += " (" + why.brief + ")";
      rows.push_back({shown[i], cell(v.job.spec.name, 24), status,
                      v.job.spec.queue, std::string(model::to_string(v.job.spec.priority)),
                      util::format_age(v.job.created_at, now), cell(v.job.spec.command.display(), 50)});
    }
    print_table({"ID", "NAME", "STATUS", "QUEUE", "PRIORITY", "CREATED", "COMMAND"}, rows);
  });
}

void register_runs(CLI::App& app, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("runs", "Attempt history of a job (or of one run)");
  completes(cmd->add_option("id", *id, "Job id or run id"), Completes::job_id)->required();
  cmd->callback([id, &ctx] {
    auto attempts = ops::attempts_of(ctx.store(), *id);
    if (ctx.format() == OutputFormat::json) {
      print_json(ops::attempts_json(attempts));
      return;
    }
    std::vector<TableRow> rows;
    for (const auto& a : attempts)
      rows.push_back({a.run_id, std::to_string(a.number), a.worker_name.empty() ? a.worker_id : a.worker_name,
                      util::format_time(a.started_at), duration_between(a.started_at, a.finished_at), a.outcome,
                      a.exit_code     ? std::to_string(*a.exit_code)
                      : a.http_status ? fmt::format("HTTP {}", *a.http_status)
                                      : "-",
                      cell(a.error, 60)});
    print_table({"RUN", "ATTEMPT", "WORKER", "STARTED", "DURATION", "OUTCOME", "EXIT", "ERROR"}, rows);
  });
}

void register_logs(CLI::App& app, Context& ctx) {
  struct Flags {
    std::string id, stream = "both", timeout;
    int attempt = 0;
    bool follow = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("logs", "Captured output of a job's latest attempt (the last 64 KiB of each stream)");
  cmd->footer("A running attempt's output so far is there too: its agent ships it every 500 ms.\n"
              "Follow it live: jobctl logs -f ID (exits 0 when the run succeeded, 1 when it did not)");
  completes(cmd->add_option("id", f->id, "Job id or run id"), Completes::job_id)->required();
  auto* attempt = cmd->add_option("--attempt", f->attempt, "Show this attempt instead of the latest")->check(util::whole_number(1));
  cmd->add_option("--stream", f->stream, "stdout, stderr or both (stdout to stdout, stderr to stderr)")
      ->check(CLI::IsMember({"stdout", "stderr", "both"}))->capture_default_str();
  auto* follow = cmd->add_flag("-f,--follow", f->follow,
                               "Print the output as it comes, through every attempt, until the run ends; exit 0 when "
                               "it succeeded, 1 when not, 124 on --timeout")
                     ->excludes(attempt);
  cmd->add_option("--timeout", f->timeout, "With --follow: give up after this long (e.g. 10m)")->needs(follow);
  cmd->callback([f, &ctx] {
    if (f->stream != "stdout" && ctx.output != "json") output_on_stderr();
    if (f->follow) {
      if (ctx.output == "json")
        throw usage_error("--follow prints the output itself, not JSON", "leave out -o json to follow, or leave out -f for the attempt as JSON");
      FollowOptions options;
      if (!f->timeout.empty()) options.timeout = util::parse_duration(f->timeout, "--timeout");
      options.show_stdout = f->stream != "stderr";
      options.show_stderr = f->stream != "stdout";
      std::vector<FollowedEnd> ends;
      auto result = follow_runs(ctx, f->id, options, ends);
      if (result == FollowResult::timed_out) {
        std::fprintf(stderr, "jobctl: timed out following %s\n", f->id.c_str());
        ctx.exit_code = static_cast<int>(ExitCode::timeout);
        return;
      }
      ctx.exit_code = report_ends(ends);
      return;
    }
    auto a = ops::attempt_with_output(ctx.store(), f->id, f->attempt);
    if (ctx.output == "json") {  // raw output unless JSON is asked for by name
      print_json(model::to_json(a, true));
      return;
    }
    if (f->stream != "stderr") std::fwrite(a.stdout_tail.data(), 1, a.stdout_tail.size(), stdout);
    if (f->stream != "stdout") std::fwrite(a.stderr_tail.data(), 1, a.stderr_tail.size(), stderr);
  });
}

}  // namespace

void register_inspect(CLI::App& app, Context& ctx) {
  register_get(app, ctx);
  register_ls(app, ctx);
  register_runs(app, ctx);
  register_logs(app, ctx);
}

}  // namespace jobctl::cli
