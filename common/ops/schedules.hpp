#pragma once
// Schedules as `schedules ls|runs|trigger -o json` show them, for jobctl
// and jobctl serve alike.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/model/job.hpp"
#include "common/store/store.hpp"

namespace jobctl::ops {

// The newest `limit` runs of a schedule (job id, run id, or a scheduled
// DAG's id). A scheduled DAG's occurrences are its DAG runs:
// {"dag_run_id", "dag_id", "status", "occurrence", "created_at"} each.
nlohmann::json schedule_runs_json(store::Store& store, const std::string& id, int limit);

// The schedule's next occurrence after `now`, from its expression (the
// leader may have made its run already); empty when paused or never. In a
// time zone this host does not know, the leader's next_fire_at.
std::optional<int64_t> next_fire(const model::Job& job, int64_t now);

// Every schedule: the job with its latest run, as `get -o json`, and
// "next_fire", its next occurrence (RFC 3339; null when paused or never).
nlohmann::json schedules_json(store::Store& store);

// Makes one occurrence of the schedule now (obeying its overlap policy
// unless `force`): {"id": the schedule's job id, "run": the new run's id}.
nlohmann::json trigger_schedule(store::Store& store, const std::string& id, bool force);

}  // namespace jobctl::ops
