// jobctl crontab import and export: coming from cron (common/ops/crontab).
#include <cstdio>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/output.hpp"
#include "cli/read_input.hpp"
#include "common/ops/crontab.hpp"
#include "common/ops/job_actions.hpp"
#include "common/store/jobs.hpp"
#include "common/store/schedules.hpp"
#include "common/util/tz.hpp"

namespace jobctl::cli {
namespace {

void add_import(CLI::App& group, Context& ctx) {
  struct Flags {
    std::string file, queue = "default", tz = "UTC";
    bool prune = false, dry_run = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = group.add_subcommand("import", "Make a schedule of each crontab entry; again, change nothing");
  cmd->footer("Importing the same file again changes nothing: each entry keeps a key made of its schedule,\n"
              "zone, command, environment and queue. Example: crontab -l | jobctl crontab import --prune -");
  completes(cmd->add_option("file", f->file, "The crontab, or - for standard input"), Completes::file)->required();
  cmd->add_option("--queue", f->queue, "The queue of every entry")->capture_default_str();
  cmd->add_option("--tz", f->tz, "The zone of entries before any CRON_TZ line")->capture_default_str();
  cmd->add_flag("--prune", f->prune, "Delete the schedules imported before whose entries left the file");
  cmd->add_flag("--dry-run", f->dry_run, "Print what would change, and change nothing");
  cmd->callback([f, &ctx] {
    util::given_zone(f->tz, "--tz");
    const auto crontab = ops::parse_crontab(read_input(f->file, "the crontab", kDocumentLimit), f->queue, f->tz);
    // What an earlier import made, by key.
    std::map<std::string, std::string> imported;  // key → job id
    const std::string ours = ops::crontab_key_prefix(f->queue);
    for (const auto& v : ctx.store().schedules().list_schedules())
      if (v.job.spec.idempotency_key.rfind(ours, 0) == 0) imported[v.job.spec.idempotency_key] = v.job.id;
    std::vector<model::JobSpec> fresh;
    std::vector<std::string> unchanged, removed;
    std::set<std::string> in_file;
    for (const auto& e : crontab.entries) {
      in_file.insert(e.spec.idempotency_key);
      if (auto it = imported.find(e.spec.idempotency_key); it != imported.end()) unchanged.push_back(it->second);
      else if (std::none_of(fresh.begin(), fresh.end(), [&](const auto& s) { return s.idempotency_key == e.spec.idempotency_key; }))
        fresh.push_back(e.spec);
    }
    if (f->prune)
      for (const auto& [key, id] : imported)
        if (!in_file.count(key)) removed.push_back(id);
    for (const auto& s : crontab.skipped) std::fprintf(stderr, "jobctl: line %d skipped: %s\n", s.line, s.why.c_str());

    std::vector<std::string> added;
    if (!f->dry_run) {
      for (const auto& r : ctx.store().jobs().submit(fresh)) {
        // An entry deleted before (by --prune, or jobctl delete) is back.
        if (r.existed) ops::restore_job(ctx.store(), r.job_id);
        added.push_back(r.job_id);
      }
      for (const auto& id : removed) ops::delete_job(ctx.store(), id, false);
    }
    const char* would = f->dry_run ? "would be " : "";
    std::fprintf(stderr, "crontab: %zu %sadded, %zu unchanged, %zu %sremoved, %zu lines skipped\n", fresh.size(), would,
                 unchanged.size(), removed.size(), would, crontab.skipped.size());
    if (ctx.format() == OutputFormat::json) {
      auto skipped = nlohmann::json::array();
      for (const auto& s : crontab.skipped) skipped.push_back({{"line", s.line}, {"why", s.why}});
      auto adds = nlohmann::json::array();
      for (size_t i = 0; i < fresh.size(); ++i)
        adds.push_back({{"id", f->dry_run ? nlohmann::json(nullptr) : nlohmann::json(added[i])},
                        {"cron", fresh[i].schedule->cron},
                        {"tz", fresh[i].schedule->tz},
                        {"command", fresh[i].command.argv[0]}});
      print_json({{"dry_run", f->dry_run}, {"added", adds}, {"unchanged", unchanged}, {"removed", removed},
                  {"skipped", skipped}});
      return;
    }
    for (const auto& s : fresh)
      std::printf("add      %s %s (%s)\n", s.schedule->cron.c_str(), s.command.argv[0].c_str(), s.schedule->tz.c_str());
    for (const auto& id : removed) std::printf("remove   %s\n", id.c_str());
  });
}

void add_export(CLI::App& group, Context& ctx) {
  auto* cmd = group.add_subcommand("export", "Print every cron schedule as a crontab");
  cmd->callback([&ctx] {
    auto text = ops::crontab_of(ctx.store().schedules().list_schedules());
    std::fwrite(text.data(), 1, text.size(), stdout);
  });
}

}  // namespace

void register_crontab(CLI::App& app, Context& ctx) {
  auto* group = app.add_subcommand("crontab", "Import a crontab as schedules, or export schedules as one");
  group->require_subcommand(1);
  add_import(*group, ctx);
  add_export(*group, ctx);
}

}  // namespace jobctl::cli
