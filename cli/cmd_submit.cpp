// jobctl submit: one job from flags, or a batch from JSON lines.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <strings.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "cli/job_flags.hpp"
#include "cli/output.hpp"
#include "cli/read_input.hpp"
#include "cli/retry_flags.hpp"
#include "cli/schedule_flags.hpp"
#include "cli/waiting.hpp"
#include "common/cron/plan.hpp"
#include "common/jobdef/job_input.hpp"
#include "common/model/job_json.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "common/util/time.hpp"

namespace jobctl::cli {
namespace {

struct SubmitFlags {
  std::vector<std::string> command;
  std::string name, queue = model::JobSpec{}.queue, priority{model::to_string(model::JobSpec{}.priority)};
  std::string timeout, cwd, payload, idempotency_key, file;
  std::vector<std::string> env;
  std::string at, in, tz, on;
  bool wait = false;
  RetryFlags retry;
  ScheduleFlags schedule;
  FleetFlags fleet;
  WebhookFlags webhook;
};

model::JobSpec spec_from_flags(const SubmitFlags& f) {
  model::JobSpec s;
  if (!f.webhook.url.empty() && !f.command.empty())
    throw usage_error("give either --webhook URL or a command after --, not both");
  if (f.command.empty() && f.webhook.url.empty())
    throw usage_error("no command given",
                      "put the command after --, e.g. jobctl submit -- make test, or give --webhook URL");
  if (!f.command.empty()) s.command = command_from_args(f.command);
  apply_webhook_flags(f.webhook, s);
  if (s.command.webhook && s.command.webhook->insecure)
    std::fprintf(stderr, "jobctl: warning: --insecure: the TLS certificate of %s will NOT be verified; anyone on "
                         "the path can read and change the request\n", s.command.webhook->url.c_str());
  if (s.command.webhook)
    for (const auto& [name, value] : s.command.webhook->headers)
      if ((strcasecmp(name.c_str(), "Authorization") == 0 || strcasecmp(name.c_str(), "X-Api-Key") == 0) &&
          value.find("{{secret:") == std::string::npos)
        std::fprintf(stderr, "jobctl: warning: the %s header is stored in the database as written; put the "
                             "credential in a secret and write {{secret:NAME}} instead\n", name.c_str());
  s.name = f.name;
  s.queue = f.queue;
  s.priority = model::parse_priority(f.priority);
  if (!f.timeout.empty()) s.timeout_us = util::parse_duration(f.timeout, "--timeout").count();
  s.env = env_from_flags(f.env);
  if (!f.cwd.empty()) s.cwd = std::filesystem::absolute(f.cwd).lexically_normal().string();
  if (!f.payload.empty()) {
    std::string text = text_or_file(f.payload, "--payload");
    try {
      s.payload = nlohmann::json::parse(text).dump();
    } catch (const nlohmann::json::parse_error& e) {
      throw usage_error(fmt::format("--payload is not valid JSON: {}", e.what()),
                        "quote it for the shell, e.g. --payload '{\"n\": 1}', or use --payload @file.json");
    }
  }
  s.idempotency_key = f.idempotency_key;
  s.target = model::parse_labels(f.on, "--on");
  if (!f.fleet.on_each.empty()) s.fan_out = model::parse_fan_out(f.fleet.on_each, "--on-each");
  if (!f.fleet.stagger.empty()) s.stagger_us = util::parse_duration(f.fleet.stagger, "--stagger").count();
  s.concurrency_key = f.fleet.concurrency_key;
  s.tenant = f.fleet.tenant;
  s.retry_given = to_overrides(f.retry);
  if (!f.schedule.cron.empty()) {
    // A schedule: the zone is its own (default UTC), not the host's.
    auto u = to_update(f.schedule, f.tz);
    model::ScheduleSpec sc;
    sc.cron = *u.cron;
    sc.tz = u.tz.value_or(sc.tz);
    sc.misfire = u.misfire.value_or(sc.misfire);
    sc.catchup_window_us = u.catchup_window_us.value_or(sc.catchup_window_us);
    sc.overlap = u.overlap.value_or(sc.overlap);
    sc.max_concurrent = u.max_concurrent;
    sc.jitter_us = u.jitter_us.value_or(sc.jitter_us);
    cron::validate_schedule(sc, s.name);
    s.schedule = std::move(sc);
  } else {
    s.max_concurrent = f.schedule.max_concurrent;
  }
  if (!f.tz.empty() && f.at.empty() && !s.schedule)
    throw usage_error("--tz goes with --at or --cron", "e.g. --at '2026-12-24 18:00' --tz Europe/Berlin");
  if (!f.at.empty()) s.run_at_us = util::parse_at(f.at, f.tz, "--at");
  if (!f.in.empty()) s.delay_us = util::parse_duration(f.in, "--in").count();
  model::validate(s);
  return s;
}

std::vector<model::JobSpec> specs_from_file(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path);
    if (!file)
      throw usage_error(fmt::format("--file: cannot read '{}': {}", path, std::strerror(errno)),
                        "check the path; --file - reads standard input");
    in = &file;
  }
  std::vector<model::JobSpec> specs;
  std::string line;
  for (size_t n = 1; std::getline(*in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      specs.push_back(jobdef::job_spec_from_json(nlohmann::json::parse(line)));
    } catch (const nlohmann::json::parse_error& e) {
      throw usage_error(fmt::format("line {}: not valid JSON: {}", n, e.what()), "nothing was submitted");
    } catch (const Error& e) {
      throw usage_error(fmt::format("line {}: {}", n, e.what()),
                        e.hint().empty() ? "nothing was submitted" : e.hint() + "; nothing was submitted");
    }
  }
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
  auto views = ctx.store().jobs().get_jobs(ids);  // one query, however large the batch
  if (views.size() == 1) print_json(model::to_json(views[0]));
  else print_json_list(views, [](const model::JobView& v) { return model::to_json(v); });
}

}  // namespace

void register_submit(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<SubmitFlags>();
  auto* cmd = app.add_subcommand("submit", "Submit a job: jobctl submit [options] -- CMD [ARGS...] | --webhook URL");
  cmd->footer("One argument after -- is run by `sh -c`; several are executed directly.\n"
              "A webhook: jobctl submit --webhook https://example.com/hook --data '{\"n\": 1}'\n"
              "Prints the job id alone on stdout: id=$(jobctl submit -- make test)\n"
              "A schedule: jobctl submit --cron '0 3 * * *' --tz Europe/Berlin -- backup.sh");
  cmd->add_option("command", f->command, "The command to run");
  cmd->add_option("--name", f->name, "A name for people to recognise the job by");
  cmd->add_option("--queue", f->queue, "Queue the job waits in")->capture_default_str();
  cmd->add_option("--priority", f->priority, model::join_or(model::names_of(model::kPriorityNames)))
      ->check(CLI::IsMember(model::names_of(model::kPriorityNames)))->capture_default_str();
  cmd->add_option("--timeout", f->timeout, "Kill the job after this long (e.g. 90s, 10m, 1h30m)");
  cmd->add_option("--env", f->env, "Environment variable NAME=VALUE for the job (repeatable)")->take_all();
  cmd->add_option("--cwd", f->cwd, "Working directory of the job on the agent's host");
  cmd->add_option("--on", f->on, "Only agents with all these labels run it: KEY=VALUE[,KEY=VALUE…], e.g. role=web");
  auto fleet_flags = add_fleet_flags(*cmd, f->fleet, true);
  auto webhook_flags = add_webhook_flags(*cmd, f->webhook);
  cmd->add_option("--payload", f->payload, "JSON given to the job on stdin and in JOB_PAYLOAD; @FILE reads a file");
  cmd->add_option("--idempotency-key", f->idempotency_key,
                  "Submit only once: a later submit with this key returns the existing job");
  auto* at = cmd->add_option("--at", f->at,
                             "Run at this time: RFC 3339 (2026-12-24T18:00:00Z), or 'YYYY-MM-DD HH:MM[:SS]' in --tz");
  cmd->add_option("--in", f->in, "Run this long from now (e.g. 90s, 10m, 1h30m)")->excludes(at);
  cmd->add_option("--tz", f->tz,
                  fmt::format("IANA time zone of --cron (default {}), or of an --at without an offset (default: this "
                              "host's zone)", model::ScheduleSpec{}.tz));
  auto* cron = cmd->add_option("--cron", f->schedule.cron,
                               "Make it a schedule: run on this cron expression in --tz (see `jobctl cron next`)")
                   ->excludes(at)
                   ->excludes("--in");
  auto schedule_flags = add_schedule_flags(*cmd, f->schedule);
  for (const auto& name : schedule_flags)
    if (name != "--max-concurrent") cmd->get_option(name)->needs(cron);
  auto retry_flags = add_retry_flags(*cmd, f->retry);
  cmd->add_flag("--wait", f->wait, "Block until the job finishes; exit as `jobctl wait` does")->excludes(cron);
  auto* file = cmd->add_option("--file", f->file, "Submit a batch: one JSON job per line, FILE or - for stdin");
  // A batch line carries its own fields: per-job flags beside --file would
  // be silently ignored, so they are refused.
  for (const char* name : {"command", "--name", "--queue", "--priority", "--timeout", "--env", "--cwd", "--payload",
                           "--idempotency-key", "--at", "--in", "--tz", "--cron", "--on"})
    file->excludes(cmd->get_option(name));
  for (const auto& name : schedule_flags) file->excludes(cmd->get_option(name));
  for (const auto& name : retry_flags) file->excludes(cmd->get_option(name));
  for (const auto& name : fleet_flags) file->excludes(cmd->get_option(name));
  for (const auto& name : webhook_flags) file->excludes(cmd->get_option(name));
  cmd->callback([f, &ctx] {
    std::vector<model::JobSpec> specs;
    if (!f->file.empty()) specs = specs_from_file(f->file);
    else specs.push_back(spec_from_flags(*f));
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
