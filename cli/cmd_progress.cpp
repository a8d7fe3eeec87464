// jobctl progress: a running job reports how far it got, and leaves a
// checkpoint for the next attempt of its run.
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "cli/read_input.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "common/util/strings.hpp"
#include "common/util/json_input.hpp"
#include "common/util/ulid.hpp"

namespace jobctl::cli {
namespace {

// The next attempt gets it in its environment, and Linux takes at most
// 128 KiB per variable: larger state belongs in a file the job writes,
// with its path in the checkpoint.
constexpr size_t kMaxCheckpoint = 64 << 10;

std::string from_env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v)
    throw usage_error(fmt::format("{} is not set: jobctl progress runs inside a job that jobagent started", name),
                      "jobagent sets JOB_RUN_ID, JOB_FENCE_TOKEN and JOBCTL_DB in every job's environment");
  return v;
}

}  // namespace

void register_progress(CLI::App& app, Context& ctx) {
  struct Flags {
    std::string fraction, message, checkpoint;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "progress", "From inside a job: report progress (0 to 1), a message, and a checkpoint for the next attempt");
  cmd->add_option("fraction", f->fraction, "How far the job got: 0 to 1 (e.g. 0.42), or a percentage (42%)")
      ->required();
  cmd->add_option("--message", f->message, "What it is doing now, shown by jobctl get and wait");
  cmd->add_option("--checkpoint", f->checkpoint,
                  "JSON the run's next attempt receives in JOB_CHECKPOINT (@FILE reads a file); at most 64 KiB");
  cmd->callback([f, &ctx] {
    // The job's stderr may be a pipe nobody reads any more (its agent is
    // gone and the run was rescued): an error must still end in its exit
    // status, not in SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    std::string number = f->fraction;
    const bool percent = !number.empty() && number.back() == '%';
    if (percent) number.pop_back();
    auto parsed = util::parse_number(number);
    if (!parsed)
      throw usage_error(fmt::format("invalid progress '{}'", f->fraction), "give a number from 0 to 1, or 0% to 100%");
    const double value = percent ? *parsed / 100 : *parsed;
    if (!(value >= 0 && value <= 1))
      throw usage_error(fmt::format("progress {} is out of range", f->fraction), "give a number from 0 to 1, or 0% to 100%");
    std::optional<std::string> checkpoint;
    if (!f->checkpoint.empty()) {
      std::string text = text_or_file(f->checkpoint, "--checkpoint");
      if (text.size() > kMaxCheckpoint)
        throw usage_error(fmt::format("--checkpoint is {} bytes, more than 64 KiB", text.size()),
                          "write the state to a file and checkpoint its path");
      checkpoint = util::parse_json_input(text, "--checkpoint", "e.g. --checkpoint '{\"offset\": 1200}'").dump();
    }
    std::string run = from_env("JOB_RUN_ID");
    if (!util::is_ulid(run))
      throw usage_error(fmt::format("JOB_RUN_ID '{}' is not a run id", run),
                        "jobagent sets it: do not override it with --env");
    int64_t fence = 0;
    try {
      fence = std::stoll(from_env("JOB_FENCE_TOKEN"));
    } catch (const std::logic_error&) {
      throw usage_error("JOB_FENCE_TOKEN is not a number", "jobagent sets it: do not override it with --env");
    }
    ctx.store().jobs().report_progress(run, fence, value, f->message, checkpoint);
  });
}

}  // namespace jobctl::cli
