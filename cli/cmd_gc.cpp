// jobctl gc: history retention. See common/store/store_gc.cpp for what is
// kept whatever its age.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "cli/output.hpp"
#include "common/store/admin.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/option_values.hpp"

namespace jobctl::cli {

void register_gc(CLI::App& app, Context& ctx) {
  struct Flags {
    std::string older_than;
    int batch = 5000;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "gc", "Remove finished runs and attempts older than --older-than, in batches (the dead-letter queue stays)");
  cmd->add_option("--older-than", f->older_than, "Retention: history that ended longer ago than this goes (e.g. 30d)")
      ->required();
  cmd->add_option("--batch", f->batch, "Runs per transaction")->capture_default_str()->check(util::whole_number(1, 1000000));
  cmd->callback([f, &ctx] {
    auto older = util::parse_duration(f->older_than, "--older-than").count();
    auto r = ctx.store().admin().gc(older, f->batch);
    if (ctx.format() == OutputFormat::json) {
      print_json(nlohmann::json{{"runs", r.runs}, {"attempts", r.attempts}, {"jobs", r.jobs}, {"dag_runs", r.dag_runs},
                                {"batches", r.batches}});
      return;
    }
    std::printf("removed %lld runs, %lld attempts, %lld jobs and %lld DAG runs in %lld transactions\n",
                static_cast<long long>(r.runs), static_cast<long long>(r.attempts), static_cast<long long>(r.jobs),
                static_cast<long long>(r.dag_runs), static_cast<long long>(r.batches));
  });
}

}  // namespace jobctl::cli
