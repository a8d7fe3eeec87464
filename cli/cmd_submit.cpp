// jobctl submit: one job from flags, or a batch from JSON lines.
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/job_file.hpp"
#include "cli/job_flags.hpp"
#include "cli/output.hpp"
#include "cli/waiting.hpp"
#include "common/jobdef/fields.hpp"
#include "common/ops/job_actions.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::cli {
namespace {

struct SubmitFlags {
  std::vector<std::string> command;
  std::string file;
  bool wait = false;
  std::unique_ptr<JobFlags> job;
};

// The submitted jobs' ids, and a line on stderr for each an idempotency
// key matched; `spec(i)` is the job of results[i].
void report(Context& ctx, const std::vector<store::SubmitResult>& results,
            const std::function<const model::JobSpec&(size_t)>& spec) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (r.existed)
      std::fprintf(stderr, "jobctl: job %s already exists with idempotency key '%s'; not submitted again\n",
                   r.job_id.c_str(), util::one_line(spec(i).idempotency_key).c_str());
    ids.push_back(r.job_id);
  }
  if (ctx.output != "json") {
    for (const auto& id : ids) std::printf("%s\n", id.c_str());
    return;
  }
  print_json(ops::submitted_json(ctx.store(), results, results.size() > 1));
}

}  // namespace

void register_submit(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<SubmitFlags>();
  auto* cmd = app.add_subcommand("submit", "Submit a job: jobctl submit [options] -- CMD [ARGS...] | --webhook URL");
  cmd->footer("One argument after -- is run by `sh -c`; several are executed directly.\n"
              "A webhook: jobctl submit --webhook https://example.com/hook --data '{\"n\": 1}'\n"
              "Prints the job id alone on stdout: id=$(jobctl submit -- make test)\n"
              "A schedule: jobctl submit --cron '0 3 * * *' --tz Europe/Berlin -- backup.sh");
  completes(cmd->add_option("command", f->command, "The command to run"), Completes::command);
  f->job = std::make_unique<JobFlags>(*cmd, jobdef::kSubmit);
  cmd->add_flag("--wait", f->wait, "Block until the job finishes; exit as `jobctl wait` does")->excludes("--cron");
  auto* file = completes(cmd->add_option("--file", f->file, "Submit a batch: one JSON job per line, FILE or - for stdin"),
                         Completes::file);
  // A batch line carries its own fields: per-job flags beside --file would
  // be silently ignored, so they are refused.
  file->excludes(cmd->get_option("command"));
  for (const auto& name : f->job->names()) file->excludes(cmd->get_option(name));
  cmd->callback([f, &ctx] {
    std::vector<store::SubmitResult> results;
    if (!f->file.empty()) {
      JobFile batch(f->file, f->wait ? Schedules::refused : Schedules::allowed);
      try {
        results = ctx.store().jobs().submit(batch);
      } catch (const store::JobRefused& e) {
        batch.check_all_read();
        throw batch.refused(e);
      } catch (const Error&) {
        batch.check_all_read();
        throw;
      }
      report(ctx, results, [&](size_t i) -> const model::JobSpec& { return batch.job(i); });
    } else {
      const std::vector<model::JobSpec> specs{spec_from_flags(f->command, *f->job)};
      results = ctx.store().jobs().submit(specs);
      report(ctx, results, [&](size_t i) -> const model::JobSpec& { return specs[i]; });
    }
    if (f->wait) {
      std::fflush(stdout);
      int worst = 0;
      for (const auto& r : results) worst = std::max(worst, wait_for_job(ctx, r.job_id, std::nullopt, WaitReport::status_only));
      ctx.exit_code = worst;
    }
  });
}

}  // namespace jobctl::cli
