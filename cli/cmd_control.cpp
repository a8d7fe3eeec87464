// jobctl cancel, wait: acting on a job's current run.
#include <cstdio>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/output.hpp"
#include "common/ops/ids.hpp"
#include "common/ops/job_actions.hpp"
#include "cli/waiting.hpp"
#include "common/util/duration.hpp"

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
                      j["result"] == "cancel requested" ? " (its agent kills it at its next heartbeat)" : "");
  });
}

void register_wait(CLI::App& app, Context& ctx) {
  struct Flags {
    std::string id, timeout;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("wait", "Block until a job finishes: exit 0 succeeded, 1 failed, 124 timed out");
  completes(cmd->add_option("id", f->id, "Job id"), Completes::job_id)->required();
  cmd->add_option("--timeout", f->timeout, "Give up after this long (exit 124)");
  cmd->callback([f, &ctx] {
    std::optional<util::Micros> timeout;
    if (!f->timeout.empty()) timeout = util::parse_duration(f->timeout, "--timeout");
    auto r = ops::resolve_id(ctx.store(), f->id);
    ctx.exit_code = wait_for_job(ctx, r.job.job.id, timeout);
  });
}

void register_retry(CLI::App& app, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("retry", "Run a dead, failed or cancelled job again, with a fresh retry budget");
  completes(cmd->add_option("id", *id, "Job id"), Completes::job_id)->required();
  cmd->callback([id, &ctx] {
    auto j = ops::retry_job(ctx.store(), *id);
    if (ctx.output == "json") print_json(j);
    else std::printf("%s\n", j["run"].get<std::string>().c_str());
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
