#pragma once
// Turning an id typed by a user into a job or a run.
#include <optional>
#include <string>

#include "cli/context.hpp"
#include "common/model/job.hpp"

namespace jobctl::cli {

struct Resolved {
  model::JobView job;
  std::optional<model::Run> run;  // the run named, or the job's latest
  bool named_run = false;         // the id given was a run id
};

// An id as typed, checked and in the store's spelling: a ULID, upper-case.
// Throws usage Error for anything else.
std::string normalize_id(const std::string& raw);

// Accepts a job id or a run id. Throws usage (not a ULID) or not_found.
Resolved resolve_id(Context& ctx, const std::string& id);

}  // namespace jobctl::cli
