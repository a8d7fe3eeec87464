#pragma once
// Submitting a DAG and showing its runs, for jobctl and jobctl serve alike:
// the answers are the JSON of `dag submit|status|ls -o json`.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/store/dags.hpp"
#include "common/store/store.hpp"

namespace jobctl::ops {

// A DAG document with its failure policy ("stop" or "continue") and, for a
// scheduled DAG, a cron expression and zone (a zone needs the expression).
// Throws usage Error naming what is wrong; nothing is written.
store::DagSubmit dag_submission(std::string document, const std::string& on_failure, const std::string& cron,
                                const std::optional<std::string>& tz);
// The same options checked without a document (dag_submission checks them
// first): serve tells the query's mistakes from the document's.
void check_dag_options(const std::string& on_failure, const std::string& cron, const std::optional<std::string>& tz);

// {"dag_id", "dag_run_id" (null when scheduled), "schedule_job_id" (null when not)}.
nlohmann::json dag_submitted_json(const store::DagSubmitResult& r);

// A DAG run without its nodes, as `dag ls` lists it.
nlohmann::json dag_run_summary_json(const store::DagRunView& v);

// The newest `limit` DAG runs, as `dag ls -o json`.
nlohmann::json dag_runs_json(store::Store& store, int limit);

// A DAG run (or a DAG's newest run) cancelled, paused or resumed, or its
// failed and cancelled nodes run again, as `dag cancel|pause|resume|retry -o
// json`: {"id", "result", "nodes": how many} or {"id", "result", "changed"}.
// Throws not_found, or invalid_state for a finished run (retry: one that
// has not finished, or succeeded).
nlohmann::json cancel_dag_run(store::Store& store, const std::string& id);
nlohmann::json pause_dag_run(store::Store& store, const std::string& id, bool pause);
nlohmann::json retry_dag_run(store::Store& store, const std::string& id);

// A DAG run with its nodes and their runs, as `dag status` shows it. Takes a
// DAG run id or a DAG id (its newest run); throws usage or not_found.
nlohmann::json dag_status(store::Store& store, const std::string& id);

}  // namespace jobctl::ops
