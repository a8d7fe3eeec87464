// jobctl cancel, wait, retry, pause, resume: acting on a job's current run.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/output.hpp"
#include "cli/waiting.hpp"
#include "common/ops/dags.hpp"
#include "common/ops/ids.hpp"
#include "common/ops/job_actions.hpp"
#include "common/ops/job_views.hpp"
#include "common/store/dags.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/ulid.hpp"

namespace jobctl::cli {
namespace {

void register_cancel(CLI::App& app, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("cancel", "Cancel a job: a pending run is cancelled, a running one is killed");
  completes(cmd->add_option("id", *id, "Job id"), Completes::job_id)->required();
  cmd->callback([id, &ctx] {
    auto j = ops::cancel_job(ctx.store(), *id);
    if (ctx.output == "json") print_json(j);
    else std::fprintf(stderr, "job %s: %s%s\n", j["id"].get<std::string>().c_str(), j["result"].get<std::string>().c_str(),
                      j["result"] != "cancelled" ? " (its agent kills it at its next heartbeat)" : "");
  });
}

// What `wait` waits for: a job (by its id or a run's), or a DAG run.
struct Awaited {
  std::string id;  // the job's, or the DAG run's
  bool dag = false;
};

Awaited awaited(Context& ctx, const std::string& id) {
  // A prefix of a DAG run's id (as dag ls shows it) is one of its node
  // runs' too, which are made right after it: the DAG run is meant, unless
  // another job or run begins with it too.
  if (!util::is_ulid(id)) {
    try {
      return {ops::awaited_dag_run_id(ctx.store(), id), true};
    } catch (const Error& e) {
      if (e.code() != ExitCode::not_found) throw;
    }
  }
  try {
    const auto r = ops::resolve_id(ctx.store(), id);
    // A scheduled DAG (its id, or its schedule's job) runs as DAG runs,
    // never a run of its own: its newest DAG run is awaited, as dag wait
    // does (waiting on the schedule's job waited for ever).
    if (r.job.job.kind == "dag") return {ctx.store().dags().get_dag_run(r.job.job.dag_id).id, true};
    return {r.job.job.id, false};
  } catch (const Error& e) {
    if (e.code() != ExitCode::not_found) throw;
    try {
      return {ctx.store().dags().get_dag_run(ops::dag_run_id(ctx.store(), id)).id, true};
    } catch (const Error&) {
      throw e;  // neither: the job's words
    }
  }
}

void register_wait(CLI::App& app, Context& ctx) {
  struct Flags {
    std::vector<std::string> ids;
    std::string timeout;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "wait", "Block until jobs or DAG runs finish: exit 0 all succeeded, 1 one failed, 124 timed out");
  completes(cmd->add_option("id", f->ids, "Job, run or DAG run ids"), Completes::job_id)->required();
  cmd->add_option("--timeout", f->timeout, "Give up after this long, for all of them together (exit 124)");
  cmd->callback([f, &ctx] {
    std::optional<util::Micros> timeout;
    if (!f->timeout.empty()) timeout = util::parse_duration(f->timeout, "--timeout");
    std::vector<Awaited> all;
    for (const auto& id : f->ids) all.push_back(awaited(ctx, id));  // every id known before waiting on any
    const auto started = std::chrono::steady_clock::now();
    const auto report = all.size() == 1 ? WaitReport::with_json : WaitReport::status_only;
    bool failed = false, timed_out = false;
    for (const auto& a : all) {
      std::optional<util::Micros> limit;  // what is left of --timeout
      if (timeout)
        limit = std::max(util::Micros(0), *timeout - std::chrono::duration_cast<util::Micros>(
                                                         std::chrono::steady_clock::now() - started));
      int code = a.dag ? wait_for_dag_run(ctx, a.id, limit, report) : wait_for_job(ctx, a.id, limit, report);
      failed |= code == static_cast<int>(ExitCode::job_failed);
      timed_out |= code == static_cast<int>(ExitCode::timeout);
    }
    if (report == WaitReport::status_only && ctx.output == "json") {
      auto out = nlohmann::json::array();
      for (const auto& a : all) out.push_back(a.dag ? ops::dag_status(ctx.store(), a.id) : ops::job_json(ctx.store(), a.id));
      print_json(out);
    }
    ctx.exit_code = failed ? static_cast<int>(ExitCode::job_failed) : timed_out ? static_cast<int>(ExitCode::timeout) : 0;
  });
}

void register_retry(CLI::App& app, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "retry",
      "Run a dead, failed or cancelled job again, with a fresh retry budget (a job submitted with --on-each: on each "
      "agent whose run ended so)");
  completes(cmd->add_option("id", *id, "Job id"), Completes::job_id)->required();
  cmd->callback([id, &ctx] {
    auto j = ops::retry_job(ctx.store(), *id);
    if (ctx.output == "json") print_json(j);
    else
      for (const auto& run : j["runs"]) std::printf("%s\n", run.get<std::string>().c_str());
  });
}

void register_pause(CLI::App& app, Context& ctx, bool pause) {
  auto id = std::make_shared<std::string>();
  auto* cmd = pause ? app.add_subcommand("pause", "Pause a job: its pending runs wait until it is resumed")
                    : app.add_subcommand("resume", "Resume a paused job");
  completes(cmd->add_option("id", *id, "Job id"), Completes::job_id)->required();
  cmd->callback([id, pause, &ctx] {
    auto j = ops::pause_job(ctx.store(), *id, pause);
    if (ctx.output == "json") print_json(j);
    else std::fprintf(stderr, "job %s %s%s\n", j["id"].get<std::string>().c_str(), j["changed"] ? "" : "was already ",
                      j["result"].get<std::string>().c_str());
  });
}

}  // namespace

void register_control(CLI::App& app, Context& ctx) {
  register_cancel(app, ctx);
  register_wait(app, ctx);
  register_retry(app, ctx);
  register_pause(app, ctx, true);
  register_pause(app, ctx, false);
}

}  // namespace jobctl::cli
