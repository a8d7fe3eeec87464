#pragma once
// A job as `get` and `ls` show it in JSON, for jobctl and jobctl serve
// alike: the job's view, why its pending run waits, and a fan-out job's
// run on each agent.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/model/job.hpp"
#include "common/ops/waiting_reasons.hpp"
#include "common/store/store.hpp"

namespace jobctl::ops {

// A fan-out job's (--on-each) latest runs, one per agent by agent name:
// those of the latest run's occurrence for a schedule, else each agent's
// newest. Empty for other jobs.
std::vector<model::Run> per_agent_runs(store::Store& store, const model::JobView& view);

// The job's JSON with "waiting": why its latest run may wait for ever, or null.
nlohmann::json with_waiting(const model::JobView& v, const WaitingReason& waiting);

// `get -o json`: the job named by a job id, or by a run id with that run as
// its latest; a fan-out job has "per_agent". Throws usage or not_found.
nlohmann::json job_json(store::Store& store, const std::string& id);

// `ls -o json`: each job with "waiting".
nlohmann::json job_list_json(store::Store& store, const std::vector<model::JobView>& jobs);

}  // namespace jobctl::ops
