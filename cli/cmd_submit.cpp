// jobctl submit: one job from flags, or a batch from JSON lines.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <new>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/job_flags.hpp"
#include "cli/output.hpp"
#include "cli/read_input.hpp"
#include "cli/waiting.hpp"
#include "common/jobdef/fields.hpp"
#include "common/jobdef/job_input.hpp"
#include "common/ops/job_actions.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "common/util/json_input.hpp"
#include "common/util/time.hpp"

namespace jobctl::cli {
namespace {

struct SubmitFlags {
  std::vector<std::string> command;
  std::string file;
  bool wait = false;
  std::unique_ptr<JobFlags> job;
};

// Calls `each(n, line)` for every non-blank line of `text`, numbered from 1
// among all its lines.
template <class Each>
void for_each_job_line(const std::string& text, Each&& each) {
  size_t n = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line(text.data() + at, end - at);
    at = end + 1;
    ++n;
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) each(n, line);
  }
}

std::vector<model::JobSpec> specs_from_file(const std::string& path) {
  const std::string text = read_input(path, "--file");
  // Room for every job line first: a JobSpec is a kilobyte, and a vector
  // grown by doubling moved 100,000 of them about twice over, page faults
  // and all (a quarter of jobctl's CPU in `submit --file` of that many).
  // Blank lines hold no job: 32 MB of newlines asked for 32 GB, and died
  // of it. The room is a hint only: what cannot be had is grown into.
  size_t job_lines = 0;
  for_each_job_line(text, [&](size_t, std::string_view) { ++job_lines; });
  std::vector<model::JobSpec> specs;
  try {
    specs.reserve(job_lines);
  } catch (const std::bad_alloc&) {
  }
  for_each_job_line(text, [&](size_t n, std::string_view line) {
    try {
      specs.push_back(jobdef::job_spec_from_json(util::parse_json_input(line, "the job", "")));
    } catch (const Error& e) {
      throw usage_error(fmt::format("line {}: {}", n, e.what()),
                        e.hint().empty() ? "nothing was submitted" : e.hint() + "; nothing was submitted");
    }
  });
  if (specs.empty())
    throw usage_error(fmt::format("--file '{}' holds no jobs", path),
                      "write one JSON job per line, e.g. {\"command\": [\"make\", \"test\"]}");
  return specs;
}

void report(Context& ctx, const std::vector<store::SubmitResult>& results, const std::vector<model::JobSpec>& specs) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (r.existed)
      std::fprintf(stderr, "jobctl: job %s already exists with idempotency key '%s'; not submitted again\n",
                   r.job_id.c_str(), specs[i].idempotency_key.c_str());
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
    std::vector<model::JobSpec> specs;
    if (!f->file.empty()) specs = specs_from_file(f->file);
    else specs.push_back(spec_from_flags(f->command, *f->job));
    auto results = ctx.store().jobs().submit(specs);
    report(ctx, results, specs);
    if (f->wait) {
      std::fflush(stdout);
      int worst = 0;
      for (const auto& r : results) worst = std::max(worst, wait_for_job(ctx, r.job_id, std::nullopt, WaitReport::status_only));
      ctx.exit_code = worst;
    }
  });
}

}  // namespace jobctl::cli
