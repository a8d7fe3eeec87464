#pragma once
// A schedule's past occurrences as `schedule runs -o json` shows them, for
// jobctl and jobctl serve alike.
#include <string>

#include <nlohmann/json.hpp>

#include "common/store/store.hpp"

namespace jobctl::ops {

// The newest `limit` runs of a schedule (job id, run id, or a scheduled
// DAG's id). A scheduled DAG's occurrences are its DAG runs:
// {"dag_run_id", "dag_id", "status", "occurrence", "created_at"} each.
nlohmann::json schedule_runs_json(store::Store& store, const std::string& id, int limit);

}  // namespace jobctl::ops
