// jobctl_bench: the measuring half of scripts/bench, which decides what to
// run and prints the table. Each mode measures one thing and prints its
// results as key=value lines on stdout:
//
//   sql DSN STATEMENT        runs one statement, prints its rows tab-separated
//   server-cpu               the PostgreSQL server's CPU seconds so far (all
//                            its processes; JOBCTL_BENCH_PG_PID names it)
//   timed LIMIT_S -- CMD…    wall and CPU time of CMD (its output discarded)
//   starts N -- CMD…         CMD N times, one at a time: start-to-exit p50/p99
//   spawn N C -- CMD…        a bare spawn loop, C at a time: runs per second
//   drain DSN N LIMIT_S LOG -- AGENT…
//                            starts AGENT with N pending runs waiting, and
//                            times it until none is pending or running
//   latency N GAP_MS DIR -- SUBMIT…
//                            N times: t0, then `SUBMIT… jobctl_stamp DIR/i`
//                            (bench/stamp.cpp); pickup latency = stamp − t0
//   claim DSN N LIMIT_S [SHAPE [COUNT]]
//                            the Store's claim+complete cost per run over N
//                            runs; SHAPE plain (default), tenants (the runs
//                            spread over 100 tenants), keys (over 1,000
//                            concurrency keys of limit 1), history (COUNT
//                            finished runs, each with its attempt, in the
//                            tables first) or backlog (COUNT >= N runs
//                            pending, of which the first N are timed)
//   claim-pair DSN_A DSN_B N LIMIT_S SHAPE_B [COUNT_B [SHAPE_A [COUNT_A]]]
//                            the same on two stores in turn, a batch each:
//                            a_ and b_ figures and their ratio a/b, all
//                            measured over the same minutes
//   dag DSN LAYERS WIDTH LIMIT_S LOG -- AGENT…
//                            a LAYERS x WIDTH layered DAG of `true` jobs
//                            (each node after two of the layer before) run
//                            by AGENT: makespan against the critical path's
//                            lower bound, and the overhead per edge
//   webhook DSN N LIMIT_S LOG -- AGENT…
//                            N webhook jobs against an HTTP server in this
//                            process that answers 200 at once, drained by
//                            AGENT: jobs/s, and the dispatch overhead from
//                            each attempt's claim (store clock) to its
//                            request's arrival at the server
//   herd DSN N FIRST AGENTS LOGDIR -- AGENT…
//                            N webhook schedules all due on one minute,
//                            AGENTS agents started with them: runs made
//                            before the minute, the agents' highest RSS,
//                            lag from each of the FIRST occurrences to
//                            start to its run's start
//   serve URL TOKEN CLIENTS N
//                            N POST /api/v1/jobs from CLIENTS keep-alive
//                            clients at once, each sending its next as
//                            soon as its last is answered: jobs/s, latency
//   serve-paced URL TOKEN CLIENTS RATE SECONDS
//                            the same at RATE requests/s in all, on a
//                            fixed schedule: latency from each request's
//                            planned time (no coordinated omission)
//   serve-latency URL TOKEN N GAP_MS DIR
//                            latency's samples, each job posted by one
//                            keep-alive client instead of a jobctl process
//
// Every loop is bounded in count and in time. A mode that cannot produce
// its figure throws jobctl::Error; main prints it and exits non-zero.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <fstream>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <mutex>

#include "bench/measure.hpp"
#include "bench/serve_load.hpp"
#include <nlohmann/json.hpp>

#include "common/config/dsn.hpp"
#include "common/dag/dag.hpp"
#include "common/store/agent.hpp"
#include "common/store/dags.hpp"
#include "common/store/jobs.hpp"
#include "common/store/store.hpp"
#include "common/util/error.hpp"
#include "tests/support/http_server.hpp"

namespace jobctl::bench {
namespace {

using std::chrono::seconds;

constexpr const char* kUnfinished = "SELECT count(*) FROM runs WHERE status IN ('pending', 'running')";
constexpr const char* kAnyUnfinished =
    "SELECT CASE WHEN EXISTS (SELECT 1 FROM runs WHERE status = 'pending') "
    "OR EXISTS (SELECT 1 FROM runs WHERE status = 'running') THEN 1 ELSE 0 END";
constexpr const char* kSucceeded = "SELECT count(*) FROM runs WHERE status = 'succeeded'";
constexpr int kClaimBatch = 64;
constexpr size_t kSubmitBatch = 1000;
constexpr int64_t kLeaseUs = 60'000'000;
constexpr auto kProcessLimit = seconds(10);  // one jobctl submit, one stamp

// The command after "--" at args[i].
Args command_after(const Args& args, size_t i) {
  if (i >= args.size() || args[i] != "--" || i + 1 == args.size())
    throw usage_error("expected -- and a command after the mode's arguments");
  return Args(args.begin() + static_cast<long>(i) + 1, args.end());
}

std::unique_ptr<store::Store> open_store(const std::string& dsn) {
  auto s = store::Store::open(config::parse_dsn(dsn), store::Create::yes);
  s->require_schema();
  return s;
}

int64_t count(store::Connection& c, const char* sql) { return c.query(sql).at(0).i64(0); }

std::string self_path() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw Error(ExitCode::internal, "cannot read /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

// The first bytes of a file, "" when it cannot be read (yet).
std::string read_small(const std::string& file) {
  char buf[64];
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// A stamp file's nanoseconds once it is complete (ends in a newline);
// empty when none appeared within `limit`.
std::optional<int64_t> wait_stamp(const std::string& file, seconds limit) {
  int64_t start = monotonic_ns();
  for (int i = 0; i < 200'000 && seconds_since(start) < static_cast<double>(limit.count()); ++i) {
    if (auto text = read_small(file); !text.empty() && text.back() == '\n') return std::stoll(text);
    sleep_ms(0.5);
  }
  return std::nullopt;
}

// Runs argv to its end (output discarded); throws unless it exits 0.
Exit run_to_end(const Args& argv, seconds limit) {
  pid_t pid = start_process(argv, "/dev/null");
  auto e = wait_process(pid, limit);
  if (!e) {
    stop_process(pid, milliseconds(1000));
    throw Error(ExitCode::timeout, fmt::format("{} did not finish within {} s", argv[0], limit.count()));
  }
  if (e->status != 0)
    throw Error(ExitCode::internal, fmt::format("{} ended with {}", argv[0], describe_exit(e->status)));
  return *e;
}

void mode_sql(const Args& a) {
  auto dsn = config::parse_dsn(a.at(0));
  auto conn =
      dsn.backend == config::Backend::postgres ? store::open_postgres(dsn.target)
                                               : store::open_sqlite(dsn.target, store::Create::yes);
  for (const auto& row : conn->query(a.at(1))) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) line += (i ? "\t" : "") + row.text(i);
    fmt::print("{}\n", line);
  }
}

void mode_server_cpu(const Args&) {
  auto cpu = server_cpu();
  if (!cpu) throw usage_error("server-cpu needs JOBCTL_BENCH_PG_PID, the postmaster's pid");
  put("server_cpu", *cpu);
}

void mode_timed(const Args& a) {
  auto limit = seconds(static_cast<int64_t>(number(a, 0, "LIMIT_S")));
  auto cmd = command_after(a, 1);
  auto server0 = server_cpu();
  int64_t start = monotonic_ns();
  Exit e = run_to_end(cmd, limit);
  double wall = seconds_since(start);
  auto server1 = server_cpu();
  put("seconds", wall);
  put("cpu", rusage_cpu(e.usage));
  if (server0 && server1) put("server_cpu", *server1 - *server0);
}

// One process at a time, N times: how long CMD takes from its start to
// its exit (a command's start-up, for `jobctl --version`).
void mode_starts(const Args& a) {
  const auto n = static_cast<size_t>(number(a, 0, "N"));
  auto cmd = command_after(a, 1);
  std::vector<double> ms;
  for (size_t i = 0; i < n; ++i) {
    int64_t start = monotonic_ns();
    run_to_end(cmd, seconds(60));
    ms.push_back(seconds_since(start) * 1000);
  }
  put("p50_ms", percentile(ms, 0.50));
  put("p99_ms", percentile(ms, 0.99));
}

// A bare spawn loop: N runs of CMD, at most C at a time, as fast as they
// end: the rate an agent running CMD as jobs could at best reach here.
void mode_spawn(const Args& a) {
  const auto n = static_cast<int64_t>(number(a, 0, "N"));
  const auto c = std::max<int64_t>(1, static_cast<int64_t>(number(a, 1, "C")));
  auto cmd = command_after(a, 2);
  int64_t started = 0, running = 0;
  int64_t start = monotonic_ns();
  while (started < n || running > 0) {
    if (started < n && running < c) {
      start_process(cmd, "/dev/null");
      ++started, ++running;
      continue;
    }
    int status = 0;
    if (waitpid(-1, &status, 0) < 0) throw Error(ExitCode::internal, "waitpid failed in the spawn loop");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw Error(ExitCode::internal, fmt::format("{} ended with {}", cmd[0], describe_exit(status)));
    --running;
  }
  put("per_s", static_cast<double>(n) / seconds_since(start));
}

// Polls the store until no run is pending or running, or `limit_s` passed;
// returns how many still are. The poll asks only whether one is left,
// through the partial indexes of pending and running runs, every 250 ms:
// little load on the server being measured. (A count(*) of the runs every
// 10-25 ms took a tenth of a core from a PostgreSQL draining `true` jobs;
// even this question, asked every 50 ms, cost it 1.6 ms a time as claimed
// runs leave dead index entries behind: 561 ms of server CPU, 3 % of a
// core, over a drain of 20,000 jobs, pg_stat_statements.) The drain's end
// is read from the store (drain_with_agent), so the poll interval adds no
// timing error.
int64_t wait_unfinished(store::Connection& c, pid_t agent, int64_t start, double limit_s) {
  while (count(c, kAnyUnfinished) > 0 && seconds_since(start) <= limit_s) {
    if (auto e = wait_process(agent, milliseconds(0)))
      throw Error(ExitCode::internal, fmt::format("the agent ended early with {}", describe_exit(e->status)));
    sleep_ms(250);
  }
  return count(c, kUnfinished);
}

struct Drained {
  int64_t left = 0;  // runs still pending or running at the end
  double wall = 0;   // seconds from the agent's start to the last run's end
  std::optional<CpuTimes> cpu;       // the agent's
  std::optional<double> server_cpu;  // PostgreSQL's, meanwhile
};

// Starts the agent, waits until no run is pending or running (or limit_s),
// and stops it.
Drained drain_with_agent(store::Connection& c, const Args& agent_argv, const std::string& log, double limit_s) {
  Drained d;
  auto server0 = server_cpu();
  int64_t start = monotonic_ns();
  int64_t start_us = realtime_ns() / 1000;  // the store's clock on this host
  pid_t agent = start_process(agent_argv, log);
  d.left = wait_unfinished(c, agent, start, limit_s);
  d.wall = seconds_since(start);
  // Drained: up to the last run's end as the store recorded it.
  if (d.left == 0) d.wall = static_cast<double>(count(c, "SELECT max(finished_at) FROM runs") - start_us) / 1e6;
  d.cpu = cpu_of(agent);
  auto server1 = server_cpu();
  stop_process(agent, milliseconds(15000));
  if (server0 && server1) d.server_cpu = *server1 - *server0;
  return d;
}

void mode_drain(const Args& a) {
  auto n = static_cast<int64_t>(number(a, 1, "N"));
  double limit_s = number(a, 2, "LIMIT_S");
  auto agent_argv = command_after(a, 4);
  auto s = open_store(a.at(0));
  auto& c = s->connection();
  if (int64_t waiting = count(c, kUnfinished); waiting != n)
    throw usage_error(fmt::format("expected {} runs waiting, found {}", n, waiting));

  auto d = drain_with_agent(c, agent_argv, a.at(3), limit_s);
  int64_t done = count(c, kSucceeded);
  put("jobs", static_cast<double>(n));
  put("succeeded", static_cast<double>(done));
  put("unfinished", static_cast<double>(d.left));
  put("seconds", d.wall);
  put("rate", static_cast<double>(done) / d.wall);
  if (d.cpu) {
    put("agent_cpu", d.cpu->self);
    put("job_cpu", d.cpu->children);
  }
  if (d.server_cpu) put("server_cpu", *d.server_cpu);
}

void mode_webhook(const Args& a) {
  auto n = static_cast<size_t>(number(a, 1, "N"));
  double limit_s = number(a, 2, "LIMIT_S");
  auto agent_argv = command_after(a, 4);
  auto s = open_store(a.at(0));
  auto& c = s->connection();
  // The server notes when each request arrived (realtime, comparable to
  // the store clock on this host), keyed by run id.
  std::mutex mu;
  std::vector<std::pair<std::string, int64_t>> arrivals;
  arrivals.reserve(n);
  test::HttpServer server(
      [&](const test::HttpRequest& r) {
        int64_t now = realtime_ns();
        std::lock_guard lock(mu);
        arrivals.emplace_back(r.header("X-Job-Run-Id"), now);
        return test::HttpResponse{};
      },
      false);
  model::JobSpec spec;
  spec.command.webhook = model::Webhook{};
  spec.command.webhook->url = server.url("/hook");
  spec.command.webhook->body = R"({"bench": true})";
  for (size_t done = 0; done < n; done += kSubmitBatch)
    s->jobs().submit(std::vector<model::JobSpec>(std::min(kSubmitBatch, n - done), spec));

  auto d = drain_with_agent(c, agent_argv, a.at(3), limit_s);

  std::map<std::string, int64_t> claimed;  // run id → its last attempt's start (µs)
  for (const auto& row : c.query("SELECT run_id, started_at FROM attempts")) claimed[row.text(0)] = row.i64(1);
  std::vector<double> overhead_ms;
  {
    std::lock_guard lock(mu);
    for (const auto& [run, at_ns] : arrivals)
      if (auto it = claimed.find(run); it != claimed.end())
        overhead_ms.push_back(static_cast<double>(at_ns / 1000 - it->second) / 1000.0);
  }
  int64_t done = count(c, kSucceeded);
  put("jobs", static_cast<double>(n));
  put("succeeded", static_cast<double>(done));
  put("unfinished", static_cast<double>(d.left));
  put("requests", static_cast<double>(server.request_count()));
  put("seconds", d.wall);
  put("rate", static_cast<double>(done) / d.wall);
  put("dispatch_p50_ms", percentile(overhead_ms, 0.50));
  put("dispatch_p99_ms", percentile(overhead_ms, 0.99));
  if (d.cpu) put("agent_cpu", d.cpu->self);
  if (d.server_cpu) put("server_cpu", *d.server_cpu);
}

// The makespan runs from the DAG run's creation to its last node's end
// (store clock). The critical path's lower bound is LAYERS node run times
// (the median attempt, claim to completion): what the DAG would take with
// no scheduling overhead at all. What is left over, divided by the edges,
// is the overhead per edge.
void mode_dag(const Args& a) {
  auto layers = static_cast<int>(number(a, 1, "LAYERS"));
  auto width = static_cast<int>(number(a, 2, "WIDTH"));
  double limit_s = number(a, 3, "LIMIT_S");
  auto agent_argv = command_after(a, 5);
  auto s = open_store(a.at(0));
  auto& c = s->connection();
  nlohmann::json doc{{"name", "bench"}, {"jobs", nlohmann::json::object()}};
  auto name = [](int l, int i) { return fmt::format("n{}-{}", l, i); };
  for (int l = 0; l < layers; ++l)
    for (int i = 0; i < width; ++i) {
      nlohmann::json node{{"command", nlohmann::json::array({"true"})}};
      if (l > 0) node["depends_on"] = {name(l - 1, i), name(l - 1, (i + 1) % width)};
      doc["jobs"][name(l, i)] = node;
    }
  store::DagSubmit d;
  d.document = doc.dump();
  d.definition = dag::parse(d.document);
  auto submitted = s->dags().submit_dag(d);

  int64_t start = monotonic_ns();
  pid_t agent = start_process(agent_argv, a.at(4));
  const char* unfinished = "SELECT count(*) FROM runs WHERE status IN ('blocked', 'pending', 'running')";
  while (count(c, unfinished) > 0 && seconds_since(start) < limit_s) usleep(20000);
  stop_process(agent, milliseconds(15000));
  if (count(c, unfinished) > 0) throw Error(ExitCode::internal, "the DAG did not finish in time");
  auto span = c.query("SELECT max(r.finished_at) - d.created_at FROM dag_runs d JOIN runs r ON r.dag_run_id = d.id "
                      "WHERE d.id = $1 GROUP BY d.created_at",
                      {submitted.dag_run_id});
  std::vector<double> node_ms;
  for (const auto& row : c.query("SELECT finished_at - started_at FROM attempts"))
    node_ms.push_back(static_cast<double>(row.i64(0)) / 1000.0);
  const double makespan_ms = static_cast<double>(span.at(0).i64(0)) / 1000.0;
  const double bound_ms = layers * percentile(node_ms, 0.5);
  const double edges = static_cast<double>(layers - 1) * width * 2;
  put("nodes", layers * width);
  put("edges", edges);
  put("makespan_ms", makespan_ms);
  put("bound_ms", bound_ms);
  put("ratio", makespan_ms / bound_ms);
  put("node_p50_ms", percentile(node_ms, 0.5));
  put("overhead_per_edge_us", (makespan_ms - bound_ms) * 1000.0 / edges);
}

// The latency figure's job: jobctl_stamp, built beside this program.
std::string stamp_program() {
  return std::filesystem::path(self_path()).replace_filename("jobctl_stamp").string();
}

// The pickup samples: n times, t0, then `submit(stamp, file)` and the
// wait for the job to stamp the file. Prints the latency (stamp - t0)
// and how long submit took. A sample that never ran counts as the whole
// wait, so it shows in p99.
void pickup_samples(int n, double gap_ms, const std::string& dir,
                    const std::function<void(const std::string&, const std::string&)>& submit) {
  const std::string stamp = stamp_program();
  std::vector<double> latency_ms, submit_ms;
  int missed = 0;
  for (int i = 0; i < n; ++i) {
    std::string file = fmt::format("{}/{}", dir, i);
    int64_t t0 = realtime_ns(), m0 = monotonic_ns();
    submit(stamp, file);
    submit_ms.push_back(seconds_since(m0) * 1000);
    auto stamped = wait_stamp(file, kProcessLimit);
    if (!stamped) ++missed;
    latency_ms.push_back(stamped ? static_cast<double>(*stamped - t0) / 1e6 : 1000.0 * kProcessLimit.count());
    sleep_ms(gap_ms);
  }
  put("samples", n);
  put("missed", missed);
  put("p50_ms", percentile(latency_ms, 0.50));
  put("p99_ms", percentile(latency_ms, 0.99));
  put("max_ms", percentile(latency_ms, 1.0));
  put("submit_p50_ms", percentile(submit_ms, 0.50));
}

void mode_latency(const Args& a) {
  const auto n = static_cast<int>(number(a, 0, "N"));
  const std::string& dir = a.at(2);
  auto submit = command_after(a, 3);
  pickup_samples(n, number(a, 1, "GAP_MS"), dir, [&](const std::string& stamp, const std::string& file) {
    Args argv = submit;
    argv.insert(argv.end(), {stamp, file});
    run_to_end(argv, kProcessLimit);
  });
  // The floor: the stamp spawned directly, no jobctl or agent between.
  std::vector<double> floor_ms;
  for (int i = 0; i < std::min(n, 50); ++i) {
    std::string file = fmt::format("{}/floor-{}", dir, i);
    int64_t t0 = realtime_ns();
    run_to_end({stamp_program(), file}, kProcessLimit);
    if (auto stamp = wait_stamp(file, kProcessLimit)) floor_ms.push_back(static_cast<double>(*stamp - t0) / 1e6);
  }
  put("floor_p50_ms", percentile(floor_ms, 0.50));
}

// The same through jobctl serve: each job is one POST /api/v1/jobs from a
// keep-alive client, so the latency is the agent's pickup after an API
// call, with no process started to submit it.
void mode_serve_latency(const Args& a) {
  auto client = serve_client(a.at(0), a.at(1));
  pickup_samples(static_cast<int>(number(a, 2, "N")), number(a, 3, "GAP_MS"), a.at(4),
                 [&](const std::string& stamp, const std::string& file) {
                   post_job(client, nlohmann::json{{"command", {stamp, file}}}.dump());
                 });
}

// N `true` jobs; `shape` spreads them over tenants or concurrency keys
// (run i gets tenant/key i mod the count, so each claim meets all of them).
void submit_true_jobs(store::Store& s, size_t n, const std::string& shape = "plain") {
  if (shape != "plain" && shape != "tenants" && shape != "keys")
    throw usage_error(fmt::format("unknown claim shape '{}'", shape), "use plain, tenants, keys, history or backlog");
  model::JobSpec spec;
  spec.command.argv = {"true"};
  for (size_t done = 0; done < n; done += kSubmitBatch) {
    std::vector<model::JobSpec> batch(std::min(kSubmitBatch, n - done), spec);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (shape == "tenants") batch[i].tenant = fmt::format("tenant-{}", (done + i) % 100);
      if (shape == "keys") batch[i].concurrency_key = fmt::format("key-{}", (done + i) % 1000);
    }
    s.jobs().submit(batch);
  }
}

// What was just loaded, on disk before anything is timed, as months of
// history or a backlog that built up would be: the store checkpointed,
// the file system synced. Otherwise the first commits timed (each an
// fsync) write gigabytes of the load, and so do the next figures'.
// PostgreSQL's tables are vacuumed and analyzed first, as autovacuum
// would have done long since to a load that built up over months. Left to
// autovacuum now:
// * its ANALYZE of a million fresh rows ran in some runs while the claims
//   were timed, and its snapshot kept the runs claimed meanwhile from
//   being marked dead in the index of pending runs, so each claim walked
//   all of them (281 buffers a probe instead of 9; the backlog ratio
//   0.61-0.63 in those runs, 0.95-0.98 in the others);
// * its VACUUM of ten million rows of history (they pass its insert
//   threshold) ran while the history figure was timed: completions cost
//   41-43 µs a run against 23-27 with none, and the ratio read 0.77-0.79
//   (0.90 with the tables vacuumed here).
void settle(store::Connection& c) {
  if (c.dialect() == store::Dialect::postgres) c.exec_script("VACUUM (ANALYZE)");
  c.exec(c.dialect() == store::Dialect::postgres ? "CHECKPOINT" : "PRAGMA wal_checkpoint(TRUNCATE)");
  sync();
}

// `count` finished runs of one `true` job in history, each with its
// attempt: copies of a run claimed and completed through the Store, made
// by the database in batches (through the Store they would take hours),
// finished one millisecond apart up to now, their ids sorting before any
// the Store makes. Then ANALYZE, as PostgreSQL's autovacuum would run after
// such a load.
void add_history(store::Store& s, const std::string& worker, size_t count) {
  submit_true_jobs(s, 1);
  auto runs = s.agent().claim(worker, {"default"}, 1, kLeaseUs);
  if (runs.size() != 1) throw Error(ExitCode::internal, "could not claim the run history is copied from");
  s.agent().complete({store::completion_of(runs[0], model::RunStatus::succeeded)});
  auto& c = s.connection();
  const bool pg = c.dialect() == store::Dialect::postgres;
  constexpr size_t kChunk = 500'000;
  for (size_t from = 0; from < count; from += kChunk) {
    const size_t to = std::min(count, from + kChunk);
    const std::string series =
        pg ? fmt::format("SELECT i FROM generate_series({}, {}) AS g(i)", from + 1, to)
           : fmt::format("WITH RECURSIVE g(i) AS (SELECT {} UNION ALL SELECT i + 1 FROM g WHERE i < {}) SELECT i FROM g",
                         from + 1, to);
    const std::string id = pg ? "'00' || lpad(g.i::text, 24, '0')" : "'00' || printf('%024d', g.i)";
    const std::string ago = fmt::format("({} - g.i) * CAST(1000 AS BIGINT)", count);
    store::Transaction tx(c, store::TxMode::write);
    c.exec(fmt::format("INSERT INTO runs (id, job_id, queue, priority, status, available_at, created_at, started_at, "
                       "finished_at, attempts, deliveries, exit_code, job_version, origin, tenant) "
                       "SELECT {0}, r.job_id, r.queue, r.priority, r.status, r.available_at - {1}, r.created_at - {1}, "
                       "r.started_at - {1}, r.finished_at - {1}, r.attempts, r.deliveries, r.exit_code, r.job_version, "
                       "r.origin, r.tenant FROM runs r, ({2}) g WHERE r.id = $1",
                       id, ago, series),
           {runs[0].run_id});
    c.exec(fmt::format("INSERT INTO attempts (run_id, attempt, worker_id, started_at, finished_at, outcome, exit_code, "
                       "error, stdout_tail, stderr_tail, job_version, timings, stdout_bytes, stderr_bytes) "
                       "SELECT {0}, a.attempt, a.worker_id, a.started_at - {1}, a.finished_at - {1}, a.outcome, "
                       "a.exit_code, a.error, a.stdout_tail, a.stderr_tail, a.job_version, a.timings, a.stdout_bytes, "
                       "a.stderr_bytes FROM attempts a, ({2}) g WHERE a.run_id = $1",
                       id, ago, series),
           {runs[0].run_id});
    tx.commit();
  }
  c.exec("ANALYZE");
}

// A store made ready for timed claims: its worker, and `n` runs to claim
// and complete after `shape`'s load; what the timed rounds took so far.
struct ClaimBed {
  std::unique_ptr<store::Store> s;
  std::string worker;
  size_t n = 0;
  size_t completed = 0;
  int64_t claim_ns = 0, complete_ns = 0;
  double history_seconds = 0;

  double us_per_job() const { return static_cast<double>(claim_ns + complete_ns) / 1e3 / static_cast<double>(n); }
};

ClaimBed claim_bed(const std::string& dsn, size_t n, const std::string& shape, size_t extra) {
  ClaimBed b;
  b.s = open_store(dsn);
  b.n = n;
  b.worker = b.s->agent().register_worker(
      {"jobctl_bench", "localhost", static_cast<int>(getpid()), {"default"}, kClaimBatch, JOBCTL_VERSION, kLeaseUs, {}});
  if (shape == "history") {
    const int64_t t0 = monotonic_ns();
    add_history(*b.s, b.worker, extra);
    b.history_seconds = static_cast<double>(monotonic_ns() - t0) / 1e9;
    submit_true_jobs(*b.s, n);
  } else if (shape == "backlog") {
    if (extra < n) throw usage_error(fmt::format("a backlog of {} is fewer than the {} runs to time", extra, n));
    submit_true_jobs(*b.s, extra);
  } else {
    submit_true_jobs(*b.s, n, shape);
  }
  // Every shape, so that the two sides of a ratio start alike: the first
  // change to each page after a checkpoint writes the whole page to the
  // WAL, and a side settled alone paid that where the other did not.
  settle(b.s->connection());
  return b;
}

// One timed round: claims up to a batch of the runs still to time and
// completes them. False once there is nothing left to time, or a claim
// came back empty.
bool claim_round(ClaimBed& b) {
  if (b.completed >= b.n) return false;
  int64_t t0 = monotonic_ns();
  auto runs = b.s->agent().claim(b.worker, {"default"}, static_cast<int>(std::min<size_t>(kClaimBatch, b.n - b.completed)),
                                 kLeaseUs);
  int64_t t1 = monotonic_ns();
  b.claim_ns += t1 - t0;
  if (runs.empty()) return false;
  std::vector<store::Completion> done;
  for (const auto& r : runs) done.push_back(store::completion_of(r, model::RunStatus::succeeded));
  for (bool applied : b.s->agent().complete(done)) b.completed += applied ? 1 : 0;
  b.complete_ns += monotonic_ns() - t1;
  return true;
}

// Throws unless every run to time was claimed and completed, saying what
// the rest became (a claim that came back short, or a completion not applied).
void require_all_timed(ClaimBed& b, double wall) {
  if (b.completed == b.n) return;
  std::string left;
  for (const auto& row : b.s->connection().query("SELECT status, count(*) FROM runs GROUP BY status ORDER BY status"))
    left += fmt::format(" {} {}", row.text(0), row.i64(1));
  throw Error(ExitCode::internal, fmt::format("claimed and completed {} of {} runs in {:.1f} s; runs by status:{}",
                                              b.completed, b.n, wall, left));
}

void put_claim(const std::string& prefix, const ClaimBed& b) {
  put((prefix + "us_per_job").c_str(), b.us_per_job());
  put((prefix + "claim_us_per_job").c_str(), static_cast<double>(b.claim_ns) / 1e3 / static_cast<double>(b.n));
  put((prefix + "complete_us_per_job").c_str(), static_cast<double>(b.complete_ns) / 1e3 / static_cast<double>(b.n));
}

void mode_claim(const Args& a) {
  auto n = static_cast<size_t>(number(a, 1, "N"));
  double limit_s = number(a, 2, "LIMIT_S");
  auto b = claim_bed(a.at(0), n, a.size() > 3 ? a[3] : "plain", a.size() > 4 ? static_cast<size_t>(number(a, 4, "COUNT")) : 0);
  const int64_t start = monotonic_ns();
  while (seconds_since(start) < limit_s && claim_round(b)) {
  }
  require_all_timed(b, seconds_since(start));
  put("jobs", static_cast<double>(n));
  put("seconds", seconds_since(start));
  put("history_seconds", b.history_seconds);
  put_claim("", b);
}

// Two stores timed in turn, a batch on one and then a batch on the other,
// so that their ratio is measured over the same minutes of this machine:
// timed one after the other, a ratio of two figures this close moved by a
// third between two runs of the script on one machine on one day.
// A: N runs after SHAPE_A's load (default plain); B: after SHAPE_B's.
void mode_claim_pair(const Args& a) {
  auto n = static_cast<size_t>(number(a, 2, "N"));
  double limit_s = number(a, 3, "LIMIT_S");
  auto count = [&](size_t i) { return a.size() > i ? static_cast<size_t>(number(a, i, "COUNT")) : 0; };
  auto b = claim_bed(a.at(1), n, a.at(4), count(5));
  auto base = claim_bed(a.at(0), n, a.size() > 6 ? a[6] : "plain", count(7));
  const int64_t start = monotonic_ns();
  bool more = true;
  while (more && seconds_since(start) < limit_s) {
    more = claim_round(base);
    more = claim_round(b) || more;
  }
  require_all_timed(base, seconds_since(start));
  require_all_timed(b, seconds_since(start));
  put("jobs", static_cast<double>(n));
  put("history_seconds", b.history_seconds);
  put_claim("a_", base);
  put_claim("b_", b);
  put("ratio", base.us_per_job() / b.us_per_job());
}

// Resident set of a live process in MB (10^6 bytes), from /proc/PID/status; 0 when gone.
double rss_mb(pid_t pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) * 1024 / 1e6;  // kB, as the idle figure
  return 0;
}

// The schedules' herd: every one of N webhook schedules fires at the same
// minute (at least 20 s away, so the leader, whose horizon is 60 s, can
// make them all before it), to a local server answering 200. Reports how
// many runs were made before the minute began, the agents' highest RSS
// (the leader's, which makes the runs), and the lag of the first FIRST to
// start: each one's first attempt's start minus its fire time, both on
// the store's clock.
void mode_herd(const Args& a) {
  auto n = static_cast<int64_t>(number(a, 1, "N"));
  auto first = static_cast<int64_t>(number(a, 2, "FIRST"));
  auto agents = static_cast<int>(number(a, 3, "AGENTS"));
  const std::string& logdir = a.at(4);
  auto agent_argv = command_after(a, 5);
  auto s = open_store(a.at(0));
  auto& c = s->connection();
  test::HttpServer server([](const test::HttpRequest&) { return test::HttpResponse{}; }, false);
  constexpr int64_t kMinuteUs = 60'000'000;
  model::JobSpec spec;
  spec.command.webhook = model::Webhook{};
  spec.command.webhook->url = server.url("/herd");
  model::ScheduleSpec sc;
  // The next minute with time to submit them all (~50 µs a schedule) and 20 s to spare.
  int64_t target = (s->now() / kMinuteUs + 1) * kMinuteUs;
  if (target - s->now() < 20'000'000 + n * 50) target += kMinuteUs;
  sc.cron = fmt::format("{} * * * *", target / kMinuteUs % 60);  // once an hour: one herd
  spec.schedule = sc;
  for (int64_t done = 0; done < n; done += static_cast<int64_t>(kSubmitBatch))
    s->jobs().submit(std::vector<model::JobSpec>(std::min<size_t>(kSubmitBatch, static_cast<size_t>(n - done)), spec));
  if (target - s->now() < 10'000'000)
    throw Error(ExitCode::internal, fmt::format("submitting {} schedules left less than 10 s before their minute: "
                                                "a herd measured now would fire an hour later", n));
  std::vector<pid_t> pids;
  // Each agent its own --name: a second agent of one name refuses to start.
  for (int i = 0; i < agents; ++i) {
    Args argv = agent_argv;
    argv.insert(argv.end(), {"--name", fmt::format("herd-{}", i)});
    pids.push_back(start_process(argv, fmt::format("{}/herd-agent-{}.log", logdir, i)));
  }
  auto count_runs = [&](const char* where) {
    return c.query(fmt::format("SELECT count(*) FROM runs WHERE occurrence = $1{}", where), {target}).at(0).i64(0);
  };
  int64_t start = monotonic_ns();
  double limit_s = static_cast<double>(target - s->now()) / 1e6 + 120;
  std::optional<int64_t> made_before;  // runs made when the minute began
  double rss = 0;
  for (;;) {
    for (pid_t pid : pids) {
      if (auto e = wait_process(pid, milliseconds(0)))
        throw Error(ExitCode::internal, fmt::format("a herd agent ended early with {} (its log is in {})",
                                                    describe_exit(e->status), logdir));
      rss = std::max(rss, rss_mb(pid));
    }
    if (!made_before && s->now() >= target) made_before = count_runs("");
    // Every run made has left pending (a cheap test through the claim
    // index: counting the started runs read all 100,000 every time), and
    // all were made; asked again after the count, which a batch the leader
    // committed meanwhile would have passed while its runs still waited.
    auto none_pending = [&] {
      return c.query("SELECT 1 FROM runs WHERE status = 'pending' AND occurrence = $1 LIMIT 1", {target}).empty();
    };
    if ((made_before && none_pending() && count_runs("") >= n && none_pending()) || seconds_since(start) > limit_s)
      break;
    sleep_ms(made_before ? 200 : 50);
  }
  std::vector<double> lag_ms;
  for (const auto& row : c.query("SELECT started_at - occurrence FROM runs WHERE occurrence = $1 AND started_at "
                                 "IS NOT NULL ORDER BY started_at LIMIT $2",
                                 {target, first}))
    lag_ms.push_back(static_cast<double>(row.i64(0)) / 1000.0);
  const int64_t started = count_runs(" AND started_at IS NOT NULL");
  for (pid_t pid : pids) stop_process(pid, milliseconds(15000));
  put("schedules", static_cast<double>(n));
  put("made_before", static_cast<double>(made_before.value_or(0)));
  put("started", static_cast<double>(started));
  put("rss_mb", rss);
  put("p50_ms", percentile(lag_ms, 0.50));
  put("p99_ms", percentile(lag_ms, 0.99));
  put("max_ms", percentile(lag_ms, 1.0));
}

struct Mode {
  const char* name;
  size_t min_args;
  const char* usage;
  void (*run)(const Args&);
};

constexpr Mode kModes[] = {
    {"sql", 2, "sql DSN STATEMENT", mode_sql},
    {"server-cpu", 0, "server-cpu", mode_server_cpu},
    {"timed", 3, "timed LIMIT_S -- CMD...", mode_timed},
    {"starts", 3, "starts N -- CMD...", mode_starts},
    {"spawn", 4, "spawn N C -- CMD...", mode_spawn},
    {"drain", 6, "drain DSN N LIMIT_S LOG -- AGENT...", mode_drain},
    {"latency", 5, "latency N GAP_MS DIR -- SUBMIT...", mode_latency},
    {"claim", 3, "claim DSN N LIMIT_S [plain|tenants|keys|history COUNT|backlog COUNT]", mode_claim},
    {"claim-pair", 5, "claim-pair DSN_A DSN_B N LIMIT_S SHAPE_B [COUNT_B [SHAPE_A [COUNT_A]]]", mode_claim_pair},
    {"dag", 7, "dag DSN LAYERS WIDTH LIMIT_S LOG -- AGENT...", mode_dag},
    {"webhook", 6, "webhook DSN N LIMIT_S LOG -- AGENT...", mode_webhook},
    {"herd", 7, "herd DSN N FIRST AGENTS LOGDIR -- AGENT...", mode_herd},
    {"serve", 4, "serve URL TOKEN CLIENTS N", serve_closed_loop},
    {"serve-paced", 5, "serve-paced URL TOKEN CLIENTS RATE SECONDS", serve_paced},
    {"serve-latency", 5, "serve-latency URL TOKEN N GAP_MS DIR", mode_serve_latency},
};

void run(const Args& args) {
  for (const auto& m : kModes) {
    if (args.empty() || args[0] != m.name) continue;
    if (args.size() - 1 < m.min_args) throw usage_error(fmt::format("usage: jobctl_bench {}", m.usage));
    m.run(Args(args.begin() + 1, args.end()));
    return;
  }
  throw usage_error("usage: jobctl_bench sql|server-cpu|timed|starts|spawn|drain|latency|claim|claim-pair|dag|webhook|herd|serve|serve-paced|serve-latency ...", "see bench/jobctl_bench.cpp");
}

}  // namespace
}  // namespace jobctl::bench

int main(int argc, char** argv) {
  try {
    jobctl::bench::run(std::vector<std::string>(argv + 1, argv + argc));
    return 0;
  } catch (const jobctl::Error& e) {
    std::fprintf(stderr, "jobctl_bench: error: %s\n", e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
    return static_cast<int>(e.code());
  }
}
