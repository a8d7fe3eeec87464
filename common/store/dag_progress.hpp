#pragma once
// How a DAG run moves on, for the store's other parts: called inside the
// transaction that ends a node's run (complete, rescue, cancel) and by the
// claim (a node's parents' results).
#include <map>
#include <string>

#include "common/model/job.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

// A node run of `dag_run_id` (its job `job_id`) ended with `status`:
// succeeded lowers its children's counters and releases those at zero;
// dead or cancelled applies the run's on_failure policy. Nothing for other
// statuses, or an empty dag_run_id.
void advance_dag(Connection& c, const std::string& dag_run_id, const std::string& job_id, model::RunStatus status);

// Each parent's result for a node about to run: the last line of the
// parent's stdout, by parent node name.
std::map<std::string, std::string> parent_results(Connection& c, const std::string& dag_run_id,
                                                  const std::string& job_id);

}  // namespace jobctl::store
