#pragma once
// Turning an id a user typed (on the command line or in a URL) into a job,
// a run or a schedule: one rule for every front door.
#include <optional>
#include <string>

#include "common/model/job.hpp"
#include "common/store/store.hpp"

namespace jobctl::ops {

struct Resolved {
  model::JobView job;
  std::optional<model::Run> run;  // the run named, or the job's latest
  bool named_run = false;         // the id given was a run id
};

// An id as typed, checked and in the store's spelling: a ULID, upper-case.
// Throws usage Error for anything else.
std::string normalize_id(const std::string& raw);

// Accepts a job id or a run id. Throws usage (not a ULID) or not_found.
Resolved resolve_id(store::Store& store, const std::string& id);

// Accepts a schedule's job id, a run id, or a scheduled DAG's id (its
// schedule job).
Resolved resolve_schedule(store::Store& store, const std::string& id);

}  // namespace jobctl::ops
