// jobctl submit: one job from flags, or a batch from JSON lines.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <system_error>
#include <thread>

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

// A job line of a --file: its number among all the file's lines (from 1),
// and its text.
struct JobLine {
  size_t number;
  std::string_view text;
};

// The non-blank lines of `text`.
std::vector<JobLine> job_lines(const std::string& text) {
  std::vector<JobLine> lines;
  size_t n = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line(text.data() + at, end - at);
    at = end + 1;
    ++n;
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) lines.push_back({n, line});
  }
  return lines;
}

// Lines below which another thread costs more than it saves (a line takes
// about 2 µs).
constexpr size_t kLinesPerThread = 10000;

// Each line's job into specs[i], the lines shared out among the cores in
// runs of consecutive lines: a batch file's parse is the part of `submit
// --file` with nothing else to do (a fifth of its wall time for 100,000
// jobs on PostgreSQL, done before the first statement goes out). A run
// stops at its first line that is not a job; the first such line of the
// file is the one reported, as a read in order would.
void parse_lines(const std::vector<JobLine>& lines, std::vector<model::JobSpec>& specs) {
  const size_t cores = std::max(1U, std::thread::hardware_concurrency());
  const size_t parts = std::clamp<size_t>(lines.size() / kLinesPerThread, 1, cores);
  std::vector<std::exception_ptr> failed(parts);
  auto parse_part = [&](size_t part) {
    try {
      for (size_t i = part * lines.size() / parts; i < (part + 1) * lines.size() / parts; ++i) {
        try {
          specs[i] = jobdef::job_spec_from_json(util::parse_json_input(lines[i].text, "the job", ""));
        } catch (const Error& e) {
          throw usage_error(fmt::format("line {}: {}", lines[i].number, e.what()),
                            e.hint().empty() ? "nothing was submitted" : e.hint() + "; nothing was submitted");
        }
      }
    } catch (...) {
      failed[part] = std::current_exception();
    }
  };
  std::vector<std::jthread> others;
  for (size_t part = 1; part < parts; ++part) {
    try {
      others.emplace_back(parse_part, part);
    } catch (const std::system_error&) {  // no thread to be had: this one reads the part
      parse_part(part);
    }
  }
  parse_part(0);
  others.clear();  // joins them
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
}

std::vector<model::JobSpec> specs_from_file(const std::string& path) {
  const std::string text = read_input(path, "--file");
  const auto lines = job_lines(text);
  if (lines.empty())
    throw usage_error(fmt::format("--file '{}' holds no jobs", path),
                      "write one JSON job per line, e.g. {\"command\": [\"make\", \"test\"]}");
  std::vector<model::JobSpec> specs(lines.size());
  parse_lines(lines, specs);
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
