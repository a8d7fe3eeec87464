// Store: DAGs — submit, DAG runs and their progress, cancel, pause, retry.
//
// A DAG's nodes are jobs; a DAG run is one run per node, written in one
// transaction: roots pending, every other node blocked with waiting_on
// counting its parents that have not succeeded. When a node succeeds, the
// transaction that records it lowers its children's counters (advance_dag)
// and a child at zero becomes pending: no scan over the graph, and two
// parents finishing at once on two agents serialise on the child's row, so
// it is released exactly once. When a node ends dead or cancelled, the
// run's on_failure policy cancels what can no longer run.
#include "common/store/cancel_requests.hpp"
#include "common/store/dag_progress.hpp"

#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/cron/plan.hpp"
#include "common/store/dags.hpp"
#include "common/store/internal.hpp"
#include "common/store/new_runs.hpp"
#include "common/store/rows.hpp"
#include "common/store/wakeups.hpp"
#include "common/util/error.hpp"
#include "common/util/ulid.hpp"

namespace jobctl::store {
namespace {

// Wakes each queue named in column 0 of `queues`, once.
void wake_queues(Connection& c, const Rows& queues) {
  std::set<std::string> seen;
  for (const auto& row : queues)
    if (seen.insert(row.text(0)).second) wake_queue(c, row.text(0));
}

// A node run, made from its job j (kRunFromJob): blocked while it waits on
// parents ($4) or its DAG run is paused ($6).
const std::string kNodeRunInsert = fmt::format(
    "INSERT INTO runs (id, job_id, status, available_at, created_at, dag_run_id, dag_node, waiting_on, {}) "
    "SELECT $1, j.id, CASE WHEN $4 = 0 AND $6 = 0 THEN 'pending' ELSE 'blocked' END, $5, NOW_US, $2, $3, $4, {} "
    "FROM jobs j WHERE j.id = $7",
    kRunFromJob.columns, kRunFromJob.values);

// Locks the DAG run's row for the rest of the transaction (PostgreSQL;
// SQLite's write lock holds the file), so that two commands on one DAG run
// take turns. Returns the id.
std::string lock_dag_run(Connection& c, const std::string& id) {
  c.query("SELECT 1 FROM dag_runs WHERE id = $1" + c.row_lock("FOR UPDATE"), {id});
  return id;
}

// A node run's status in a DAG run's summary, and the DAG run's own.
std::string dag_status(const std::map<std::string, int64_t>& counts, bool paused, bool cancelled) {
  auto n = [&](const char* s) {
    auto it = counts.find(s);
    return it == counts.end() ? 0 : it->second;
  };
  if (n("running") + n("pending") + n("blocked") > 0) return cancelled ? "cancelling" : paused ? "paused" : "running";
  if (cancelled) return "cancelled";
  int64_t total = 0;
  for (const auto& [s, c] : counts) total += c;
  return n("succeeded") == total ? "succeeded" : "failed";
}

// The latest run of each node of a DAG run: status counts.
std::map<std::string, int64_t> node_counts(Connection& c, const std::string& dag_run_id) {
  std::map<std::string, int64_t> counts;
  for (const auto& row : c.query("SELECT r.status, count(*) FROM runs r WHERE r.dag_run_id = $1 AND r.id = "
                                 "(SELECT max(x.id) FROM runs x WHERE x.dag_run_id = r.dag_run_id AND x.job_id = r.job_id) "
                                 "GROUP BY r.status",
                                 {dag_run_id}))
    counts[row.text(0)] = row.i64(1);
  return counts;
}

// Throws invalid_state when no node of the DAG run waits or runs: there is
// nothing left to `what` ("cancel", "pause", "resume"). A pause of a
// finished run answered "paused" and left it succeeded (a tester).
void refuse_finished(Connection& c, const std::string& dag_run_id, std::string_view what) {
  auto counts = node_counts(c, dag_run_id);
  if (counts["running"] + counts["pending"] + counts["blocked"] == 0)
    throw Error(ExitCode::invalid_state, fmt::format("DAG run {} has finished; there is nothing to {}", dag_run_id, what),
                "`jobctl dag retry` runs its failed and cancelled nodes again");
}

// A node's edges lead to its DAG run's runs of its parents or children:
// $1 the DAG run, $2 the node's job. PostgreSQL looks each one up from the
// node's few edges (OFFSET 0 keeps that a lookup): under the statistics of
// a DAG run's runs made at once, its planner read every run of the DAG run
// for each node instead, the parents' results at each claim and the
// children at each completion (0.85 ms each at 1,000 nodes, two thirds of
// the DAG figure's makespan in scripts/bench, and growing with the DAG).
// SQLite keeps the statements both had: it looks them up by its index.
//
// The children of $2 wait on one parent fewer; at zero they are due, unless
// the DAG run is paused ($3 = 1). The status is tested again on each row
// updated: a child released or cancelled since it was read stays so.
constexpr const char* kReleaseChildren =
    "UPDATE runs SET waiting_on = waiting_on - 1, available_at = NOW_US, "
    "status = CASE WHEN waiting_on = 1 AND $3 = 0 THEN 'pending' ELSE 'blocked' END "
    "WHERE dag_run_id = $1 AND status = 'blocked' AND job_id IN (SELECT child FROM dag_edges WHERE parent = $2) "
    "RETURNING queue, status";
constexpr const char* kReleaseChildrenPostgres =
    "UPDATE runs r SET waiting_on = r.waiting_on - 1, available_at = NOW_US, "
    "status = CASE WHEN r.waiting_on = 1 AND $3 = 0 THEN 'pending' ELSE 'blocked' END "
    "FROM (SELECT x.id FROM dag_edges e CROSS JOIN LATERAL (SELECT x.id FROM runs x WHERE x.dag_run_id = $1 "
    "AND x.job_id = e.child AND x.status = 'blocked' OFFSET 0) x WHERE e.parent = $2) f "
    "WHERE r.id = f.id AND r.status = 'blocked' "
    "RETURNING r.queue, r.status";
// Each parent of $2 that succeeded in the DAG run: its node and output.
constexpr const char* kParentResults =
    "SELECT r.dag_node, a.stdout_tail FROM dag_edges e JOIN runs r ON r.job_id = e.parent AND r.dag_run_id = $1 "
    "AND r.status = 'succeeded' JOIN attempts a ON a.run_id = r.id AND a.attempt = r.attempts WHERE e.child = $2";
constexpr const char* kParentResultsPostgres =
    "SELECT r.dag_node, a.stdout_tail FROM dag_edges e CROSS JOIN LATERAL (SELECT r.id, r.dag_node, r.attempts "
    "FROM runs r WHERE r.dag_run_id = $1 AND r.job_id = e.parent AND r.status = 'succeeded' OFFSET 0) r "
    "JOIN attempts a ON a.run_id = r.id AND a.attempt = r.attempts WHERE e.child = $2";

}  // namespace

void advance_dag(Connection& c, const std::string& dag_run_id, const std::string& job_id, model::RunStatus status) {
  if (dag_run_id.empty()) return;
  if (status == model::RunStatus::succeeded) {
    // Each child waits on one parent fewer; at zero it is due now, unless
    // its DAG run is paused (resume releases it). The DAG run's row is read
    // shared (PostgreSQL): a pause or resume waits for this transaction, and
    // this one for theirs, so none of them misses the other's change.
    auto paused = c.query(std::string("SELECT paused FROM dag_runs WHERE id = $1") +
                              c.row_lock("FOR SHARE"),
                          {dag_run_id});
    const int64_t hold = paused.empty() ? 0 : paused[0].i64(0);
    auto released = c.query(c.dialect() == Dialect::postgres ? kReleaseChildrenPostgres : kReleaseChildren,
                            {dag_run_id, job_id, hold});
    Rows pending;
    for (const auto& row : released)
      if (row.text(1) == "pending") pending.push_back(row);
    wake_queues(c, pending);
    return;
  }
  if (status != model::RunStatus::dead && status != model::RunStatus::cancelled) return;
  auto policy = c.query(std::string("SELECT on_failure, cancelled_at FROM dag_runs WHERE id = $1") +
                            c.row_lock("FOR SHARE"),
                        {dag_run_id});
  if (policy.empty() || !policy[0].is_null(1)) return;  // a cancel of the whole run is doing this already
  auto node = c.query("SELECT dag_node FROM runs WHERE dag_run_id = $1 AND job_id = $2 ORDER BY id DESC LIMIT 1",
                      {dag_run_id, job_id});
  const std::string name = node.empty() ? job_id : node[0].text(0);
  if (dag::parse_on_failure(policy[0].text(0)) == dag::OnFailure::stop) {
    // Not started: never attempted (a node waiting out a retry's backoff
    // has started, and runs on).
    c.exec("UPDATE runs SET status = 'cancelled', finished_at = NOW_US, error = $2 "
           "WHERE dag_run_id = $1 AND status IN ('blocked', 'pending') AND attempts = 0",
           {dag_run_id, fmt::format("cancelled: node {} ended {} (--on-failure stop)", name, model::to_string(status))});
    return;
  }
  // continue: only what depends on it, however far down.
  c.exec("WITH RECURSIVE below (job) AS (SELECT child FROM dag_edges WHERE parent = $2 "
         "UNION SELECT e.child FROM dag_edges e JOIN below b ON e.parent = b.job) "
         "UPDATE runs SET status = 'cancelled', finished_at = NOW_US, error = $3 "
         "WHERE dag_run_id = $1 AND status = 'blocked' AND job_id IN (SELECT job FROM below)",
         {dag_run_id, job_id,
          fmt::format("cancelled: it depends on node {}, which ended {}", name, model::to_string(status))});
}

std::map<std::string, std::string> parent_results(Connection& c, const std::string& dag_run_id,
                                                  const std::string& job_id) {
  std::map<std::string, std::string> out;
  auto rows = c.query(c.dialect() == Dialect::postgres ? kParentResultsPostgres : kParentResults, {dag_run_id, job_id});
  for (const auto& row : rows) {
    std::string tail = row.text(1);
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
    auto nl = tail.rfind('\n');
    out[row.text(0)] = nl == std::string::npos ? tail : tail.substr(nl + 1);
  }
  return out;
}

DagSubmitResult Dags::submit_dag(const DagSubmit& d) {
  // A concurrent submit with the same idempotency key can win the race
  // between our lookup and our insert; the second try then finds its DAG.
  for (int tries = 0;; ++tries) {
    try {
      return write_dag(d);
    } catch (const UniqueViolation& e) {
      if (d.idempotency_key.empty() || tries == 2)
        throw Error(ExitCode::internal, fmt::format("dag submit kept conflicting: {}", e.what()));
    }
  }
}

DagSubmitResult Dags::write_dag(const DagSubmit& d) {
  // One transaction around the whole: the nodes' jobs, the graph, and the
  // first DAG run.
  Transaction tx(*conn_, TxMode::write);
  DagSubmitResult result;
  if (!d.idempotency_key.empty()) {
    auto same = conn_->query("SELECT id FROM dags WHERE idempotency_key = $1", {d.idempotency_key});
    if (!same.empty()) {
      result.existed = true;
      result.dag_id = same[0].text(0);
      result.schedule_job_id = schedule_job_of(result.dag_id);
      // The run the first submit started (gc may have taken it since).
      auto first = conn_->query("SELECT min(id) FROM dag_runs WHERE dag_id = $1", {result.dag_id});
      if (result.schedule_job_id.empty() && !first[0].is_null(0)) result.dag_run_id = first[0].text(0);
      tx.commit();
      return result;
    }
  }
  result.dag_id = util::new_ulid();
  conn_->exec("INSERT INTO dags (id, name, definition, on_failure, created_at, idempotency_key) "
              "VALUES ($1, $2, $3, $4, NOW_US, $5)",
              {result.dag_id, d.definition.name, d.document, std::string(dag::to_string(d.on_failure)),
               nullable(d.idempotency_key)});
  std::vector<model::JobSpec> specs;
  for (const auto& n : d.definition.nodes) specs.push_back(n.spec);
  auto jobs = insert_node_jobs(*conn_, actor_, specs, JobOrigin{"node", result.dag_id});
  std::map<std::string, std::string> job_of;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto& n = d.definition.nodes[i];
    job_of[n.name] = jobs[i];
    conn_->exec("INSERT INTO dag_nodes (dag_id, name, job_id, position) VALUES ($1, $2, $3, $4)",
                {result.dag_id, n.name, jobs[i], static_cast<int64_t>(i)});
  }
  for (const auto& n : d.definition.nodes)
    for (const auto& p : n.depends_on)
      conn_->exec("INSERT INTO dag_edges (dag_id, parent, child) VALUES ($1, $2, $3)",
                  {result.dag_id, job_of[p], job_of[n.name]});
  if (d.schedule) {
    // The job that fires the DAG: the leader turns its occurrences into DAG
    // runs (see materialise), never into runs of its own.
    model::JobSpec fire;
    fire.name = d.definition.name;
    fire.command.argv = {"jobctl", "dag", "run", result.dag_id};
    fire.schedule = d.schedule;
    fire.schedule->overlap = model::Overlap::allow;
    result.schedule_job_id = insert_node_jobs(*conn_, actor_, {fire}, JobOrigin{"dag", result.dag_id}).at(0);
  } else {
    result.dag_run_id = start_dag_run(*conn_, result.dag_id, std::nullopt, std::nullopt);
  }
  tx.commit();
  return result;
}

std::string start_dag_run(Connection& c, const std::string& dag_id, std::optional<int64_t> occurrence,
                                 std::optional<int64_t> at) {
  const std::string id = util::new_ulid();
  auto inserted = c.exec(
      "INSERT INTO dag_runs (id, dag_id, on_failure, occurrence, created_at) "
      "SELECT $1, d.id, d.on_failure, $3, NOW_US FROM dags d WHERE d.id = $2 ON CONFLICT DO NOTHING",
      {id, dag_id, nullable(occurrence)});
  if (inserted == 0) return "";  // this occurrence has its DAG run already
  const int64_t due = at.value_or(now_us(c));
  auto nodes = c.query(
      "SELECT n.name, n.job_id, (SELECT count(*) FROM dag_edges e WHERE e.child = n.job_id) FROM dag_nodes n "
      "WHERE n.dag_id = $1 ORDER BY n.position",
      {dag_id});
  for (const auto& n : nodes)
    c.exec(kNodeRunInsert, {util::new_ulid(), id, n.text(0), n.i64(2), due, int64_t{0}, n.text(1)});
  wake_queues(c, c.query("SELECT DISTINCT queue FROM runs WHERE dag_run_id = $1 AND status = 'pending'", {id}));
  return id;
}

std::string resolve_dag_run(Connection& c, const std::string& id) {
  if (!c.query("SELECT 1 FROM dag_runs WHERE id = $1", {id}).empty()) return id;
  auto newest = c.query("SELECT max(id) FROM dag_runs WHERE dag_id = $1", {id});
  if (!newest.empty() && !newest[0].is_null(0)) return newest[0].text(0);
  if (!c.query("SELECT 1 FROM dags WHERE id = $1", {id}).empty())
    throw Error(ExitCode::not_found, fmt::format("DAG {} has no run yet", id),
                "a scheduled DAG's first run starts at its first occurrence (`jobctl schedules ls`)");
  throw Error(ExitCode::not_found, fmt::format("no DAG run or DAG with id '{}'", id), "list them with `jobctl dag ls`");
}

namespace {

// A DAG run's row, for get_dag_run and list_dag_runs: dag_runs aliased r,
// its DAG d.
constexpr const char* kDagRunSelect =
    "SELECT r.id, r.dag_id, d.name, r.on_failure, r.created_at, r.occurrence, r.paused, r.cancelled_at, "
    "(SELECT max(x.finished_at) FROM runs x WHERE x.dag_run_id = r.id), d.idempotency_key "
    "FROM dag_runs r JOIN dags d ON d.id = r.dag_id ";

constexpr const char* kCancelledByDelete = "cancelled: its schedule was deleted";

// The DAG runs of `dag_id` made ahead for an occurrence: none of their
// nodes' runs is due yet, nor `unlike` (an SQL test on runs r).
std::vector<std::string> dag_runs_ahead(Connection& c, const std::string& dag_id, const std::string& unlike) {
  std::vector<std::string> ids;
  for (const auto& row : c.query(fmt::format("SELECT d.id FROM dag_runs d WHERE d.dag_id = $1 AND d.occurrence IS NOT "
                                             "NULL AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.dag_run_id = d.id AND "
                                             "(r.available_at <= NOW_US OR {}))",
                                             unlike),
                                 {dag_id}))
    ids.push_back(row.text(0));
  return ids;
}

}  // namespace

int64_t cancel_dag_runs_ahead(Connection& c, const std::string& dag_id) {
  const auto ids = dag_runs_ahead(c, dag_id, "r.status NOT IN ('pending', 'blocked')");
  if (ids.empty()) return 0;
  const auto list = c.list(ids);
  c.exec("UPDATE dag_runs SET cancelled_at = NOW_US WHERE " + c.in_list("id", 1), {list});
  // Tested again: a node that became due since (PostgreSQL's NOW_US is the
  // transaction's start) and was claimed runs on, its DAG run cancelling.
  c.exec(fmt::format("UPDATE runs SET status = 'cancelled', finished_at = NOW_US, error = '{}' WHERE {} AND status "
                     "IN ('pending', 'blocked')",
                     kCancelledByDelete, c.in_list("dag_run_id", 1)),
         {list});
  return static_cast<int64_t>(ids.size());
}

void restore_dag_runs_ahead(Connection& c, const std::string& dag_id) {
  const auto ids =
      dag_runs_ahead(c, dag_id, fmt::format("r.status <> 'cancelled' OR r.error <> '{}'", kCancelledByDelete));
  if (ids.empty()) return;
  const auto list = c.list(ids);
  c.exec("UPDATE dag_runs SET cancelled_at = NULL WHERE " + c.in_list("id", 1), {list});
  // As kNodeRunInsert made them: a node waits on its parents, or on a
  // paused DAG run.
  c.exec("UPDATE runs SET status = CASE WHEN waiting_on = 0 AND (SELECT d.paused FROM dag_runs d WHERE d.id = "
         "runs.dag_run_id) = 0 THEN 'pending' ELSE 'blocked' END, finished_at = NULL, error = '' WHERE " +
             c.in_list("dag_run_id", 1),
         {list});
}

namespace {

// The summary of a DAG run (without its nodes) from a kDagRunSelect row.
DagRunView dag_run_from_row(Connection& c, const Row& row) {
  DagRunView v;
  v.id = row.text(0);
  v.dag_id = row.text(1);
  v.name = row.text(2);
  v.on_failure = dag::parse_on_failure(row.text(3));
  v.created_at = row.i64(4);
  v.occurrence = row.opt_i64(5);
  v.counts = node_counts(c, v.id);
  v.status = dag_status(v.counts, row.i64(6) != 0, !row.is_null(7));
  if (v.status == "succeeded" || v.status == "failed" || v.status == "cancelled") v.finished_at = row.opt_i64(8);
  if (!row.is_null(9)) v.idempotency_key = row.text(9);
  return v;
}

// What a DAG run's cancel, pause, resume or retry did to its nodes, in
// the history of each node job it changed (`which`: their runs' test, $1
// the DAG run), with the DAG run's id: they changed the nodes' runs and
// left no trace (a tester). Read before the change; none: nothing is said.
std::vector<std::string> nodes_where(Connection& c, const std::string& run_id, const char* which) {
  std::vector<std::string> jobs;
  for (const auto& row : c.query(fmt::format("SELECT DISTINCT job_id FROM runs WHERE dag_run_id = $1 AND ({}) "
                                             "ORDER BY job_id",
                                             which),
                                 {run_id}))
    jobs.push_back(row.text(0));
  return jobs;
}
void audit_nodes(Connection& c, const std::string& actor, const std::string& run_id,
                 const std::vector<std::string>& jobs, const char* action) {
  for (const auto& job : jobs) audit(c, actor, job, action, nlohmann::json{{"dag_run", run_id}}.dump());
}
// The nodes a cancel stops (waiting, or running and not yet asked), and
// those a pause or resume holds or lets go (not ended).
constexpr const char* kStopped = "status IN ('blocked', 'pending') OR (status = 'running' AND cancel_requested = 0)";
constexpr const char* kNotEnded = "status IN ('blocked', 'pending', 'running')";

}  // namespace

DagRunView Dags::get_dag_run(const std::string& id) {
  // One snapshot: the counts, the status and the nodes of one moment (a
  // node ending between two reads showed counts its nodes did not add to).
  Transaction tx(*conn_, TxMode::read);
  const std::string run_id = resolve_dag_run(*conn_, id);
  DagRunView v = dag_run_from_row(*conn_, conn_->query(std::string(kDagRunSelect) + "WHERE r.id = $1", {run_id}).at(0));
  std::map<std::string, std::vector<std::string>> parents;
  for (const auto& row : conn_->query("SELECT c.name, p.name FROM dag_edges e JOIN dag_nodes c ON c.job_id = e.child "
                                      "JOIN dag_nodes p ON p.job_id = e.parent WHERE e.dag_id = $1 ORDER BY p.position",
                                      {v.dag_id}))
    parents[row.text(0)].push_back(row.text(1));
  auto rows = conn_->query(
      fmt::format("SELECT n.name, n.job_id, {} FROM dag_nodes n JOIN runs r ON r.id = (SELECT max(x.id) FROM runs x "
                  "WHERE x.dag_run_id = $1 AND x.job_id = n.job_id) WHERE n.dag_id = $2 ORDER BY n.position",
                  select_list(kRuns)),
      {v.id, v.dag_id});
  for (const auto& row : rows)
    v.nodes.push_back(DagNodeView{row.text(0), row.text(1), parents[row.text(0)], run_from_row(row, 2)});
  return v;
}

std::vector<DagRunView> Dags::list_dag_runs(int limit, const std::string& dag_id) {
  Transaction tx(*conn_, TxMode::read);  // each run's status of the same moment as its counts
  std::vector<DagRunView> out;
  for (const auto& row : conn_->query(std::string(kDagRunSelect) + "WHERE ($2 = '' OR r.dag_id = $2) ORDER BY r.id DESC LIMIT $1",
                                      {int64_t{limit}, dag_id}))
    out.push_back(dag_run_from_row(*conn_, row));
  return out;
}

int Dags::cancel_dag_run(const std::string& id) {
  Transaction tx(*conn_, TxMode::write);
  const std::string run_id = lock_dag_run(*conn_, resolve_dag_run(*conn_, id));
  refuse_finished(*conn_, run_id, "cancel");
  const auto stopped = nodes_where(*conn_, run_id, kStopped);
  conn_->exec("UPDATE dag_runs SET cancelled_at = NOW_US WHERE id = $1", {run_id});
  // Running nodes first, then those waiting: a completion also locks a
  // parent before its children, so the two cannot deadlock.
  auto asked = ask_to_stop(*conn_, CancelReason::dag, "dag_run_id = $1", {run_id});
  int64_t n = conn_->exec("UPDATE runs SET status = 'cancelled', finished_at = NOW_US, error = 'cancelled by user "
                          "(dag cancel)' WHERE dag_run_id = $1 AND status IN ('blocked', 'pending')",
                          {run_id});
  audit_nodes(*conn_, actor_, run_id, stopped, "cancel");
  tx.commit();
  return static_cast<int>(n + static_cast<int64_t>(asked.size()));
}

bool Dags::set_dag_run_paused(const std::string& id, bool paused) {
  Transaction tx(*conn_, TxMode::write);
  const std::string run_id = lock_dag_run(*conn_, resolve_dag_run(*conn_, id));
  refuse_finished(*conn_, run_id, paused ? "pause" : "resume");
  if (conn_->exec("UPDATE dag_runs SET paused = $2 WHERE id = $1 AND paused <> $2", {run_id, int64_t{paused}}) == 0)
    return false;
  if (paused) {
    // Nodes due to start wait again, with nothing left to wait on.
    conn_->exec("UPDATE runs SET status = 'blocked' WHERE dag_run_id = $1 AND status = 'pending'", {run_id});
  } else {
    // Each keeps its due time (a retry's backoff still counts).
    conn_->exec("UPDATE runs SET status = 'pending' WHERE dag_run_id = $1 AND status = 'blocked' AND waiting_on = 0",
                {run_id});
    // With the nodes that came back pending while it was paused (a retry,
    // a run given back), which no claim took meanwhile.
    wake_queues(*conn_, conn_->query("SELECT DISTINCT queue FROM runs WHERE dag_run_id = $1 AND status = 'pending'",
                                     {run_id}));
  }
  audit_nodes(*conn_, actor_, run_id, nodes_where(*conn_, run_id, kNotEnded), paused ? "pause" : "resume");
  tx.commit();
  return true;
}

int Dags::retry_dag_run(const std::string& id) {
  Transaction tx(*conn_, TxMode::write);
  const std::string run_id = lock_dag_run(*conn_, resolve_dag_run(*conn_, id));
  auto counts = node_counts(*conn_, run_id);
  if (counts["running"] + counts["pending"] + counts["blocked"] > 0)
    throw Error(ExitCode::invalid_state, fmt::format("DAG run {} still has nodes waiting or running", run_id),
                "wait for it to end (resume it if it is paused), or `jobctl dag cancel` it, before retrying");
  // The latest run of each node, and which of them succeeded.
  auto latest = conn_->query(
      "SELECT r.job_id, r.dag_node, r.status FROM runs r WHERE r.dag_run_id = $1 AND r.id = "
      "(SELECT max(x.id) FROM runs x WHERE x.dag_run_id = r.dag_run_id AND x.job_id = r.job_id)",
      {run_id});
  std::set<std::string> done;
  for (const auto& row : latest)
    if (row.text(2) == "succeeded") done.insert(row.text(0));
  if (done.size() == latest.size())
    throw Error(ExitCode::invalid_state, fmt::format("DAG run {} succeeded; there is nothing to retry", run_id));
  std::map<std::string, int64_t> waiting;
  for (const auto& row : conn_->query("SELECT e.child, e.parent FROM dag_edges e JOIN dag_runs d ON d.dag_id = e.dag_id "
                                      "WHERE d.id = $1",
                                      {run_id}))
    if (!done.count(row.text(1))) ++waiting[row.text(0)];
  conn_->exec("UPDATE dag_runs SET cancelled_at = NULL, paused = 0 WHERE id = $1", {run_id});
  // The dead nodes it runs again leave the dead-letter queue, as a replay's do.
  conn_->exec("UPDATE runs SET replayed_at = NOW_US WHERE dag_run_id = $1 AND status = 'dead' AND replayed_at IS NULL",
              {run_id});
  const int64_t due = now_us(*conn_);
  std::vector<std::string> again;
  for (const auto& row : latest) {
    if (done.count(row.text(0))) continue;
    conn_->exec(kNodeRunInsert, {util::new_ulid(), run_id, row.text(1), waiting[row.text(0)], due, int64_t{0}, row.text(0)});
    again.push_back(row.text(0));
  }
  const int n = static_cast<int>(again.size());
  wake_queues(*conn_, conn_->query("SELECT DISTINCT queue FROM runs WHERE dag_run_id = $1 AND status = 'pending'", {run_id}));
  audit_nodes(*conn_, actor_, run_id, again, "retry");
  tx.commit();
  return n;
}

std::string Dags::schedule_job_of(const std::string& dag_id) {
  auto rows = conn_->query("SELECT id FROM jobs WHERE dag_id = $1 AND kind = 'dag'", {dag_id});
  return rows.empty() ? "" : rows[0].text(0);
}

std::string Dags::dag_document(const std::string& dag_id) {
  auto rows = conn_->query("SELECT definition FROM dags WHERE id = $1", {dag_id});
  if (rows.empty()) throw Error(ExitCode::not_found, fmt::format("no DAG with id '{}'", dag_id));
  return rows[0].text(0);
}

}  // namespace jobctl::store
