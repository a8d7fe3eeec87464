#pragma once
// DAGs: submit, their runs, cancel, pause, retry.
// Every method follows the contract in store.hpp.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/dag/dag.hpp"
#include "common/model/job.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

// jobctl dag submit: a validated definition, as the user wrote it.
struct DagSubmit {
  dag::Definition definition;
  std::string document;  // kept for `dag graph` and `dag status`
  dag::OnFailure on_failure = dag::OnFailure::stop;
  std::optional<model::ScheduleSpec> schedule;  // --cron: one DAG run per occurrence
  std::string idempotency_key;  // --idempotency-key: a DAG with it already is returned, nothing written
};

struct DagSubmitResult {
  std::string dag_id;
  std::string dag_run_id;       // empty for a scheduled DAG
  std::string schedule_job_id;  // a scheduled DAG: the job that fires it
  bool existed = false;         // the idempotency key matched an earlier DAG
};

// One node of a DAG run, with its latest run.
struct DagNodeView {
  std::string name;
  std::string job_id;
  std::vector<std::string> depends_on;
  model::Run run;
};

struct DagRunView {
  std::string id;
  std::string dag_id;
  std::string name;
  dag::OnFailure on_failure = dag::OnFailure::stop;
  std::string status;  // running, paused, succeeded, failed, cancelled
  int64_t created_at = 0;
  std::optional<int64_t> finished_at;  // when its last node ended
  std::optional<int64_t> occurrence;   // a scheduled DAG's fire time
  std::string idempotency_key;         // the DAG's (dag submit --idempotency-key); empty: none
  std::map<std::string, int64_t> counts;  // nodes by the status of their latest run
  std::vector<DagNodeView> nodes;         // get_dag_run only, in topological order
};

class Dags {
 public:
  explicit Dags(Connection& conn, std::string actor = "unknown") : conn_(&conn), actor_(std::move(actor)) {}

  // Writes the DAG, its node jobs and edges, and (unless scheduled) its
  // first DAG run, in one transaction. With an idempotency key that a DAG
  // has already, writes nothing and returns that DAG (its first run).
  DagSubmitResult submit_dag(const DagSubmit& dag);
  // A DAG run with its nodes; `id` may also name a DAG (its newest run).
  // Throws not_found.
  DagRunView get_dag_run(const std::string& id);
  // Newest first, without nodes; of one DAG when `dag_id` is given.
  std::vector<DagRunView> list_dag_runs(int limit, const std::string& dag_id = "");
  // Cancels the nodes not started and asks running ones to stop. Returns
  // how many it cancelled or asked. Throws not_found / invalid_state.
  int cancel_dag_run(const std::string& id);
  // Pause: no node of the run starts until resume. False when it already was.
  // Throws not_found, or invalid_state for a run that has finished, as
  // cancel does.
  bool set_dag_run_paused(const std::string& id, bool paused);
  // A fresh run of every node whose latest run failed or was cancelled,
  // blocked behind those of its parents that have not succeeded; succeeded
  // nodes are kept. Throws invalid_state while a node still runs or waits.
  int retry_dag_run(const std::string& id);
  // The definition the DAG was submitted with.
  std::string dag_document(const std::string& dag_id);
  // A scheduled DAG's schedule: the job that fires it (`dag submit --cron`
  // prints the DAG's id). Empty for an unscheduled DAG or another id.
  std::string schedule_job_of(const std::string& dag_id);

 private:
  DagSubmitResult write_dag(const DagSubmit& dag);  // submit_dag's one try

  Connection* conn_;
  std::string actor_;  // who changes are recorded as
};

}  // namespace jobctl::store
