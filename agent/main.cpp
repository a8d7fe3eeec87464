// jobagent: parse flags, then hand over to agent::Agent.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <sys/prctl.h>

#include <cstdio>
#include <cstdlib>

#include "agent/agent.hpp"
#include "agent/job_user.hpp"
#include "agent/secrets.hpp"
#include "common/config/dsn.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/host.hpp"
#include "common/util/option_values.hpp"
#include "common/model/labels.hpp"
#include "common/util/strings.hpp"
#include "common/util/utf8.hpp"

namespace {

using jobctl::agent::milliseconds;

milliseconds to_ms(const std::string& text, const char* flag) {
  return std::chrono::duration_cast<milliseconds>(jobctl::util::parse_duration(text, flag));
}

std::vector<std::string> split_queues(const std::string& csv) {
  auto queues = jobctl::util::split(csv, ',');
  for (const auto& q : queues)
    if (q.empty())
      throw jobctl::usage_error(fmt::format("invalid --queues '{}': empty queue name", csv),
                                "write it like --queues default,reports");
  return queues;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else, and before the job supervisor is forked: the
  // secrets leave the environment a job could read (/proc/$PPID/environ),
  // and this process's /proc entries (its environment, its memory) become
  // root's alone, as ssh-agent's do. A job's own exec makes it dumpable again.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  jobctl::agent::keep_capabilities_from_jobs();
  auto environment_secrets = jobctl::agent::Secrets::take_from_environment();
  CLI::App app{"jobagent: claims and runs jobctl jobs on this host. See jobagent(8).", "jobagent"};
  app.set_version_flag("--version", std::string("jobagent ") + JOBCTL_VERSION);
  app.footer("Environment: JOBCTL_STORE_TIMEOUT (default 30s) bounds every store call; jobagent(8) FAILURE MODES says "
             "what happens when the store is away.");
  jobctl::agent::Options opts;
  std::string db, queues = "default", lease = "15s", drain = "30s", grace = "5s", poll = "1s";
  std::string horizon = "60s", misfire = "60s", secrets_file, gc_older_than, gc_every = "10m";
  std::string log_format = "text", log_level = "info", allow_users;
  bool no_listen = false, no_scheduler = false, no_export_db = false;
  std::vector<std::string> labels;
  app.add_option("--db", db, "Store DSN: postgres://…, key=value, sqlite:PATH or PATH (default: $JOBCTL_DB, "
                             "else ~/.local/share/jobctl/jobs.db)");
  app.add_option("-q,--queues", queues, "Comma-separated queues to claim from")->capture_default_str();
  app.add_option("-c,--concurrency", opts.concurrency, "Runs executed at once")
      ->capture_default_str()->check(jobctl::util::whole_number(1, 1000));
  app.add_option("--name", opts.name, "Worker name shown by `jobctl workers` (default: the host name)");
  app.add_option("-l,--label", labels,
                 "KEY=VALUE label that jobs' --on can select (repeatable; host=<host name> is always set)");
  app.add_option("--lease", lease, "Lease duration; heartbeats every third of it")->capture_default_str();
  app.add_option("--drain-timeout", drain, "On SIGTERM, how long running jobs may finish")->capture_default_str();
  app.add_option("--kill-grace", grace,
                 "Time between SIGTERM and SIGKILL on timeout or cancel, and to end the jobs of an agent that died "
                 "(at most half of --lease)")
      ->capture_default_str();
  app.add_option("--poll-interval", poll, "Fallback poll when no wake-up arrives")->capture_default_str();
  app.add_flag("--no-listen", no_listen, "Do not LISTEN for wake-ups (PgBouncer transaction pooling); poll only");
  app.add_flag("--no-scheduler", no_scheduler, "Never be the scheduler leader that turns cron occurrences into runs");
  app.add_option("--schedule-horizon", horizon, "As leader, make runs of cron occurrences this far ahead")
      ->capture_default_str();
  app.add_option("--misfire-threshold", misfire, "Treat an occurrence this late as missed (misfire policy); the leader's applies to every agent's claims")
      ->capture_default_str();
  app.add_option("--metrics", opts.metrics_addr,
                 "Serve Prometheus metrics at http://ADDR/metrics (HOST:PORT, e.g. 127.0.0.1:9464; :9464 for every "
                 "address)");
  app.add_option("--metrics-file", opts.metrics_file,
                 "Write the same metrics to this file every heartbeat, atomically (node_exporter's textfile "
                 "collector)");
  app.add_flag("--no-export-db", no_export_db,
               "Do not put JOBCTL_DB in jobs' environment (then `jobctl progress` needs the job to set it)");
  app.add_option("--gc-older-than", gc_older_than,
                 "As leader, remove finished runs and attempts older than this (e.g. 30d), as `jobctl gc` does");
  app.add_option("--gc-every", gc_every, "How often the leader runs --gc-older-than")->capture_default_str();
  app.add_option("--secrets-file", secrets_file,
                 "NAME=value lines for webhooks' {{secret:NAME}} (mode 600, or 640 with the agent's group: refused if "
                 "any other user may read it); reloaded on SIGHUP");
  app.add_option("--run-as", opts.run_as,
                 "Run jobs that name no --user as this user (with its groups and home); needs root")
      ->type_name("USER");
  app.add_option("--allow-users", allow_users,
                 "Comma-separated users a job's --user may name (besides --run-as); a job naming another fails at "
                 "once. Needs root")
      ->type_name("LIST");
  app.add_option("--log-format", log_format, "Log format")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  app.add_option("--log-level", log_level, "Minimum level logged")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}))->capture_default_str();
  jobctl::util::check_option_values(app);
  // Parsed from a copy: the arguments themselves are for ps to show, the
  // password of --db's DSN taken out (jobs run as other users can read them).
  std::vector<std::string> args(argv, argv + argc);
  std::vector<char*> arg_pointers;
  for (auto& a : args) arg_pointers.push_back(a.data());
  jobctl::config::hide_dsn_passwords(argc, argv);
  try {
    app.parse(argc, arg_pointers.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : static_cast<int>(jobctl::ExitCode::usage);
  }
  try {
    jobctl::util::require_utf8_arguments(argc, arg_pointers.data(), "--db");  // --name, --label and --queues are stored
    if (!db.empty()) opts.db = db;
    opts.queues = split_queues(queues);
    labels.push_back("host=" + jobctl::util::host_name());
    std::string all;
    for (const auto& l : labels) all += (all.empty() ? "" : ",") + l;
    opts.labels = jobctl::model::parse_labels(all, "--label");
    opts.lease = to_ms(lease, "--lease");
    if (opts.lease < milliseconds(1000)) throw jobctl::usage_error("--lease must be at least 1s");
    opts.drain_timeout = to_ms(drain, "--drain-timeout");
    opts.kill_grace = to_ms(grace, "--kill-grace");
    // A dead agent's jobs must have ended before another agent rescues
    // their runs, which it does once their lease runs out: as soon as two
    // thirds of --lease after the death (a heartbeat renews every third).
    // Half the lease leaves room; the default grace shrinks to fit it.
    if (const milliseconds most = opts.lease / 2; opts.kill_grace > most) {
      if (app.count("--kill-grace"))
        throw jobctl::usage_error(
            fmt::format("--kill-grace {} is more than half of --lease {}: a dead agent's jobs could still be "
                        "ending when another agent starts their runs again",
                        jobctl::util::format_duration(opts.kill_grace), jobctl::util::format_duration(opts.lease)),
            fmt::format("raise --lease to at least {}, or lower --kill-grace",
                        jobctl::util::format_duration(opts.kill_grace * 2)));
      opts.kill_grace = most;
    }
    opts.poll_interval = to_ms(poll, "--poll-interval");
    if (opts.poll_interval < milliseconds(10)) throw jobctl::usage_error("--poll-interval must be at least 10ms");
    if (!secrets_file.empty()) opts.secrets_file = secrets_file;
    for (const auto& user : jobctl::util::split(allow_users, ','))
      if (!user.empty()) opts.allow_users.push_back(user);
    jobctl::agent::check_user_options(opts);
    opts.environment_secrets = std::move(environment_secrets);
    if (const char* dir = std::getenv("CREDENTIALS_DIRECTORY"); dir && *dir) opts.credentials_dir = dir;
    if (!gc_older_than.empty()) opts.gc_older_than = to_ms(gc_older_than, "--gc-older-than");
    opts.gc_every = to_ms(gc_every, "--gc-every");
    if (opts.gc_every < milliseconds(1000)) throw jobctl::usage_error("--gc-every must be at least 1s", "e.g. --gc-every 10m");
    if (!gc_older_than.empty() && opts.gc_older_than < milliseconds(1000))
      throw jobctl::usage_error("--gc-older-than must be at least 1s", "e.g. --gc-older-than 30d");
    opts.listen = !no_listen;
    opts.export_db = !no_export_db;
    opts.scheduler = !no_scheduler;
    opts.schedule_horizon = to_ms(horizon, "--schedule-horizon");
    opts.misfire_threshold = to_ms(misfire, "--misfire-threshold");
    if (opts.misfire_threshold < milliseconds(1000))
      throw jobctl::usage_error("--misfire-threshold must be at least 1s");
    opts.log_format = log_format == "json" ? jobctl::util::LogFormat::json : jobctl::util::LogFormat::text;
    opts.log_level = log_level == "debug"  ? jobctl::util::LogLevel::debug
                     : log_level == "warn" ? jobctl::util::LogLevel::warn
                     : log_level == "error" ? jobctl::util::LogLevel::error
                                            : jobctl::util::LogLevel::info;
    jobctl::util::setup_logging(opts.log_format, opts.log_level);
    jobctl::agent::Agent agent(opts);
    return agent.run();
  } catch (const jobctl::Error& e) {
    std::fprintf(stderr, "jobagent: error: %s\n", jobctl::util::one_line(e.what()).c_str());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", jobctl::util::one_line(e.hint()).c_str());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jobagent: internal error: %s\n", e.what());
    return static_cast<int>(jobctl::ExitCode::internal);
  }
}
