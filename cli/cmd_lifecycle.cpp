// jobctl update, delete, restore, history: changing a job after submit, and
// reading back who changed what.
#include <cstdio>

#include <fmt/format.h>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/job_flags.hpp"
#include "cli/output.hpp"
#include "common/ops/ids.hpp"
#include "common/ops/job_actions.hpp"
#include "common/ops/job_records.hpp"
#include "common/ops/job_update.hpp"
#include "common/model/job_json.hpp"
#include "common/store/jobs.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/option_values.hpp"
#include "common/util/time.hpp"

namespace jobctl::cli {
namespace {

struct UpdateFlags {
  std::string id;
  std::vector<std::string> unset_env, command;
  std::optional<int> if_version;
  std::unique_ptr<JobFlags> job;
};

// The changes the given flags make, each value read by its field's apply()
// as a batch line's key is (see common/ops/job_update.hpp).
store::JobUpdate to_job_update(const UpdateFlags& f) {
  jobdef::Draft d;
  f.job->apply_to(d);
  auto u = ops::job_update(d, f.job->given_keys());
  u.unset_env = f.unset_env;
  if (!f.command.empty()) u.command = command_from_args(f.command);
  u.if_version = f.if_version;
  return u;
}

void register_update(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<UpdateFlags>();
  auto* cmd = app.add_subcommand("update", "Change a job in place: bumps its version; runs not yet started use the new one");
  completes(cmd->add_option("id", f->id, "Job id"), Completes::job_id)->required();
  f->job = std::make_unique<JobFlags>(*cmd, jobdef::kUpdate);
  cmd->add_option("--unset-env", f->unset_env, "Remove NAME from its environment (repeatable)");
  cmd->add_option("--if-version", f->if_version,
                  "Only if the job is still at this version (else exit 6, nothing changed)")
      ->check(util::whole_number(1));
  completes(cmd->add_option("command", f->command, "New command, after --"), Completes::command);
  cmd->footer("Runs that have not started run the new version; a running one finishes with the version it\n"
              "started with. For a schedule, a new --cron, --tz or --jitter drops the occurrences made for the\n"
              "old times (shown as skipped in `schedule runs`) and fires from now on. Exit 6 when --if-version\n"
              "does not match. An update that changes nothing makes no new version.");
  cmd->callback([f, &ctx] {
    auto j = ops::update_job(ctx.store(), f->id, to_job_update(*f));
    if (ctx.output == "json") {
      print_json(j);
      return;
    }
    const std::string id = j["id"];
    const int version = j["version"], dropped = j["dropped"];
    if (!j["changed"])
      std::fprintf(stderr, "job %s: unchanged, still version %d\n", id.c_str(), version);
    else if (dropped > 0)
      std::fprintf(stderr, "job %s: now version %d (%d pending occurrences of the old version dropped)\n", id.c_str(),
                   version, dropped);
    else
      std::fprintf(stderr, "job %s: now version %d\n", id.c_str(), version);
  });
}

void register_delete(CLI::App& app, Context& ctx) {
  struct Flags {
    std::string id;
    bool cancel_running = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("delete", "Soft-delete a job: no new runs, pending ones cancelled, history kept");
  completes(cmd->add_option("id", f->id, "Job id"), Completes::job_id)->required();
  cmd->add_flag("--cancel-running", f->cancel_running, "Also stop a run that is running (default: let it finish)");
  cmd->footer("The job and its runs stay queryable (jobctl get, runs, history; jobctl ls --deleted).\n"
              "`jobctl restore ID` undoes it.");
  cmd->callback([f, &ctx] {
    auto j = ops::delete_job(ctx.store(), f->id, f->cancel_running);
    if (ctx.output == "json") print_json(j);
    else {
      const int n = j["runs_cancelled"].get<int>(), skipped = j["runs_skipped"].get<int>();
      const std::string ahead =
          skipped == 0 ? "" : fmt::format(", {} occurrence{} made ahead skipped", skipped, skipped == 1 ? "" : "s");
      std::fprintf(stderr, "job %s deleted (%d run%s cancelled%s)\n", j["id"].get<std::string>().c_str(), n,
                   n == 1 ? "" : "s", ahead.c_str());
    }
  });
}

void register_restore(CLI::App& app, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("restore", "Undo a delete: a schedule fires again from now");
  completes(cmd->add_option("id", *id, "Job id"), Completes::job_id)->required();
  cmd->footer("Runs the delete cancelled stay cancelled: `jobctl retry ID` runs a one-off job again.");
  cmd->callback([id, &ctx] {
    auto j = ops::restore_job(ctx.store(), *id);
    if (ctx.output == "json") print_json(j);
    else std::fprintf(stderr, "job %s restored\n", j["id"].get<std::string>().c_str());
  });
}

// "priority: normal -> high; env: {} -> {...}" for a table cell.
std::string details_text(const model::JobEvent& e) {
  auto details = nlohmann::json::parse(e.details);
  std::string out;
  for (const auto& [key, value] : details.items()) {
    if (!out.empty()) out += "; ";
    if (e.action == "update")
      out += fmt::format("{}: {} -> {}", key, value["from"].dump(), value["to"].dump());
    else
      out += fmt::format("{}: {}", key, value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out;
}

void register_history(CLI::App& app, Context& ctx) {
  struct Flags {
    std::string id;
    int limit = 100;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("history", "Every change made to a job: when, by whom, what, and its version");
  completes(cmd->add_option("id", f->id, "Job id"), Completes::job_id)->required();
  cmd->add_option("--limit", f->limit, "At most this many entries, newest first")
      ->check(util::whole_number(1, 100000))
      ->capture_default_str();
  cmd->callback([f, &ctx] {
    if (ctx.format() == OutputFormat::json) {
      print_json(ops::history_json(ctx.store(), f->id, f->limit));
      return;
    }
    auto r = ops::resolve_id(ctx.store(), f->id);
    auto events = ctx.store().jobs().history(r.job.job.id, f->limit);
    std::vector<TableRow> rows;
    for (const auto& e : events)
      rows.push_back({util::format_time(e.at), e.action, cell(e.actor, 32), std::to_string(e.version),
                      cell(details_text(e), 100)});
    print_table({"TIME", "ACTION", "ACTOR", "VERSION", "DETAILS"}, rows);
  });
}

}  // namespace

void register_lifecycle(CLI::App& app, Context& ctx) {
  register_update(app, ctx);
  register_delete(app, ctx);
  register_restore(app, ctx);
  register_history(app, ctx);
}

}  // namespace jobctl::cli
