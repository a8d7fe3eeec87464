// jobctl dag: submit a graph of dependent jobs, watch it, steer it.
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/output.hpp"
#include "cli/read_input.hpp"
#include "cli/run_status.hpp"
#include "cli/waiting.hpp"
#include "common/ops/dags.hpp"
#include "common/ops/ids.hpp"
#include "common/dag/dag.hpp"
#include "common/model/job_json.hpp"
#include "common/store/dags.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/option_values.hpp"
#include "common/util/time.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::cli {
namespace {

std::string counts_text(const std::map<std::string, int64_t>& counts) {
  std::string out;
  for (const auto& [status, n] : counts) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, status);
  return out;
}

store::DagRunView require_run(Context& ctx, const std::string& id) {
  return ctx.store().dags().get_dag_run(ops::dag_run_id(ctx.store(), id));
}

void add_submit(CLI::App& group, Context& ctx) {
  struct Flags {
    std::string file, on_failure = "stop", cron, tz, timeout, idempotency_key;
    bool wait = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = group.add_subcommand("submit", "Submit a DAG from a JSON file (- for stdin); prints the DAG run's id");
  completes(cmd->add_option("file", f->file, "The DAG document (see jobctl(1), DAGS)"), Completes::file)->required();
  cmd->add_option("--on-failure", f->on_failure,
                  "When a node ends dead: stop (cancel every node not started) or continue (cancel only what "
                  "depends on it)")
      ->check(CLI::IsMember({"stop", "continue"}))
      ->capture_default_str();
  cmd->add_option("--cron", f->cron, "Run the DAG on this cron expression: one DAG run per occurrence");
  cmd->add_option("--tz", f->tz, fmt::format("IANA time zone of --cron (default {})", model::ScheduleSpec{}.tz));
  cmd->add_option("--idempotency-key", f->idempotency_key,
                  "Submit only once: a DAG submitted with this key already is printed again, nothing written");
  cmd->add_flag("--wait", f->wait, "Then wait for the DAG run as dag wait does (exit 0 all succeeded, 1 not, 124 timeout)");
  cmd->add_option("--timeout", f->timeout, "With --wait: give up waiting after this long (exit 124)");
  cmd->footer("Prints the DAG run's id alone on stdout; with --cron, the DAG's id (each occurrence starts a run).\n"
              "Nothing is written when the document is invalid (exit 2): unknown dependencies, cycles, duplicate\n"
              "names, an empty graph, more than 10000 nodes.");
  cmd->callback([f, cmd, &ctx] {
    if (!f->timeout.empty() && !f->wait) throw usage_error("--timeout goes with --wait");
    if (f->wait && !f->cron.empty())
      throw usage_error("--wait cannot wait for a scheduled DAG: its runs start at its occurrences",
                        "wait for one of them with jobctl dag wait DAG_ID (its newest run)");
    std::optional<util::Micros> timeout;
    if (!f->timeout.empty()) timeout = util::parse_duration(f->timeout, "--timeout");
    model::validate_idempotency_key(f->idempotency_key, "--idempotency-key");
    auto d = ops::dag_submission(read_input(f->file, "dag submit", kDocumentLimit), f->on_failure, f->cron,
                                 cmd->count("--tz") ? std::optional<std::string>(f->tz) : std::nullopt);
    d.idempotency_key = f->idempotency_key;
    auto r = ctx.store().dags().submit_dag(d);
    // Refused first: the error is the one line (and its hint) a refusal says.
    if (f->wait && !r.schedule_job_id.empty())  // the key's DAG is scheduled (this submit had no --cron)
      throw Error(ExitCode::invalid_state,
                  fmt::format("DAG {} (idempotency key '{}') is scheduled: its runs start at its occurrences",
                              r.dag_id, d.idempotency_key),
                  fmt::format("wait for its newest run with jobctl dag wait {}", r.dag_id));
    if (f->wait && r.dag_run_id.empty())  // gc took the run the first submit started
      throw Error(ExitCode::not_found, fmt::format("DAG {} (idempotency key '{}') has no run left to wait for",
                                                   r.dag_id, d.idempotency_key),
                  "its runs were removed by jobctl gc; submit it with a new key to run it again");
    if (r.existed)
      std::fprintf(stderr, "jobctl: DAG %s already exists with idempotency key '%s'; not submitted again\n",
                   r.dag_id.c_str(), util::one_line(d.idempotency_key).c_str());
    if (f->wait) {  // -o json: the finished run, as dag wait prints it
      if (ctx.output != "json") std::printf("%s\n", r.dag_run_id.c_str());
      std::fflush(stdout);
      ctx.exit_code = wait_for_dag_run(ctx, r.dag_run_id, timeout);
    } else if (ctx.output == "json") {
      print_json(ops::dag_submitted_json(r));
    } else {
      std::printf("%s\n", (r.dag_run_id.empty() ? r.dag_id : r.dag_run_id).c_str());
    }
  });
}

void add_status(CLI::App& group, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* cmd = group.add_subcommand("status", "Show a DAG run: its state and every node's");
  completes(cmd->add_option("id", *id, "DAG run id (or DAG id: its newest run)"), Completes::dag_run)->required();
  cmd->callback([id, &ctx] {
    if (ctx.format() == OutputFormat::json) {
      print_json(ops::dag_status(ctx.store(), *id));
      return;
    }
    auto v = require_run(ctx, *id);
    std::vector<std::pair<std::string, std::string>> fields{{"id", v.id},
                                                            {"dag", v.name + " (" + v.dag_id + ")"},
                                                            {"status", v.status},
                                                            {"on failure", std::string(dag::to_string(v.on_failure))},
                                                            {"created", util::format_time(v.created_at)},
                                                            {"finished", time_or_dash(v.finished_at)},
                                                            {"nodes", counts_text(v.counts)}};
    if (!v.idempotency_key.empty()) fields.emplace_back("idempotency key", v.idempotency_key);
    print_fields(fields);
    std::vector<TableRow> rows;
    for (const auto& n : v.nodes) {
      std::string after;
      for (const auto& p : n.depends_on) after += (after.empty() ? "" : ",") + p;
      rows.push_back({n.name, status_text(n.run), std::to_string(n.run.attempts),
                      duration_text(n.run), after.empty() ? "-" : after, cell(n.run.error, 50)});
    }
    std::printf("\n");
    print_table({"NODE", "STATUS", "ATTEMPTS", "DURATION", "AFTER", "ERROR"}, rows);
  });
}

void add_wait(CLI::App& group, Context& ctx) {
  struct Flags {
    std::string id, timeout;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = group.add_subcommand("wait", "Block until a DAG run finishes: exit 0 every node succeeded, 1 not, 124 timed out");
  completes(cmd->add_option("id", f->id, "DAG run id (or DAG id: its newest run)"), Completes::dag_run)->required();
  cmd->add_option("--timeout", f->timeout, "Give up after this long (exit 124)");
  cmd->callback([f, &ctx] {
    std::optional<util::Micros> timeout;
    if (!f->timeout.empty()) timeout = util::parse_duration(f->timeout, "--timeout");
    ctx.exit_code = wait_for_dag_run(ctx, f->id, timeout);
  });
}

void add_ls(CLI::App& group, Context& ctx) {
  auto limit = std::make_shared<int>(50);
  auto* cmd = group.add_subcommand("ls", "List DAG runs, newest first");
  cmd->add_option("--limit", *limit, "At most this many")->check(util::whole_number(1, 100000))->capture_default_str();
  cmd->callback([limit, &ctx] {
    if (ctx.format() == OutputFormat::json) {
      print_json(ops::dag_runs_json(ctx.store(), *limit));
      return;
    }
    auto runs = ctx.store().dags().list_dag_runs(*limit);
    std::vector<std::string> ids;
    for (const auto& v : runs) ids.push_back(v.id);
    auto shown = ops::short_dag_run_ids(ctx.store(), ids);  // what each takes to name it
    std::vector<TableRow> rows;
    for (size_t i = 0; i < runs.size(); ++i) {
      const auto& v = runs[i];
      rows.push_back({shown[i], v.name, v.status, counts_text(v.counts), util::format_time(v.created_at)});
    }
    print_table({"ID", "DAG", "STATUS", "NODES", "CREATED"}, rows);
  });
}

void add_control(CLI::App& group, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* cancel = group.add_subcommand("cancel", "Cancel a DAG run: nodes not started are cancelled, running ones stopped");
  completes(cancel->add_option("id", *id, "DAG run id (or DAG id: its newest run)"), Completes::dag_run)->required();
  cancel->callback([id, &ctx] {
    auto j = ops::cancel_dag_run(ctx.store(), *id);
    if (ctx.output == "json") print_json(j);
    else std::fprintf(stderr, "DAG run %s: %d nodes cancelled or asked to stop\n", id->c_str(), j["nodes"].get<int>());
  });
  for (bool pause : {true, false}) {
    auto pid = std::make_shared<std::string>();
    auto* cmd = group.add_subcommand(pause ? "pause" : "resume",
                                     pause ? "Pause a DAG run: no further node starts (running ones finish)"
                                           : "Resume a paused DAG run");
    completes(cmd->add_option("id", *pid, "DAG run id (or DAG id: its newest run)"), Completes::dag_run)->required();
    cmd->callback([pid, pause, &ctx] {
      auto j = ops::pause_dag_run(ctx.store(), *pid, pause);
      if (ctx.output == "json") print_json(j);
      else std::fprintf(stderr, "DAG run %s %s%s\n", pid->c_str(), j["changed"].get<bool>() ? "" : "was already ",
                        pause ? "paused" : "resumed");
    });
  }
  auto rid = std::make_shared<std::string>();
  auto* retry = group.add_subcommand("retry", "Run a finished DAG run's failed and cancelled nodes again, keeping successes");
  completes(retry->add_option("id", *rid, "DAG run id (or DAG id: its newest run)"), Completes::dag_run)->required();
  retry->callback([rid, &ctx] {
    auto j = ops::retry_dag_run(ctx.store(), *rid);
    if (ctx.output == "json") print_json(j);
    else std::fprintf(stderr, "DAG run %s: %d nodes to run again\n", rid->c_str(), j["nodes"].get<int>());
  });
}

void add_graph(CLI::App& group, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* cmd = group.add_subcommand("graph", "Print a DAG as Graphviz DOT: of a DAG run (nodes coloured by state) or a file");
  completes(cmd->add_option("id", *id, "DAG run id, DAG id, or a DAG document (FILE, - for stdin)"), Completes::dag_run_or_file)
      ->required();
  cmd->footer("Render it with: jobctl dag graph ID | dot -Tsvg > dag.svg");
  cmd->callback([id, &ctx] {
    if (*id == "-" || std::filesystem::exists(*id)) {
      std::printf("%s", dag::to_dot(dag::parse(read_input(*id, "dag graph", kDocumentLimit))).c_str());
      return;
    }
    auto v = require_run(ctx, *id);
    auto def = dag::parse(ctx.store().dags().dag_document(v.dag_id));
    std::map<std::string, std::string> status;
    for (const auto& n : v.nodes) status[n.name] = std::string(model::to_string(n.run.status));
    std::vector<std::string> colours;
    for (const auto& n : def.nodes) colours.push_back(status[n.name]);
    std::printf("%s", dag::to_dot(def, colours).c_str());
  });
}

}  // namespace

void register_dag(CLI::App& app, Context& ctx) {
  auto* group = app.add_subcommand("dag", "DAGs: graphs of dependent jobs (submit, status, ls, cancel, pause, resume, retry, graph)");
  group->require_subcommand(1);
  add_submit(*group, ctx);
  add_wait(*group, ctx);
  add_status(*group, ctx);
  add_ls(*group, ctx);
  add_control(*group, ctx);
  add_graph(*group, ctx);
}

}  // namespace jobctl::cli
