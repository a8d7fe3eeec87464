#pragma once
// What `jobctl update` and PATCH /api/v1/jobs/{id} change, from the fields
// given by their batch-line keys, each read by its field's apply() as
// submit reads it. An empty name, on, concurrency_key, tenant or user removes it.
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "common/jobdef/fields.hpp"
#include "common/store/jobs.hpp"
#include "common/store/store.hpp"

namespace jobctl::ops {

// The changes of the fields `keys` names, read from `d`.
store::JobUpdate job_update(const jobdef::Draft& d, const std::set<std::string>& keys);

// The changes a JSON object asks for: keys of the fields update takes,
// "command" (a string for sh -c, or an array) and "unset_env" (names).
// Throws usage Error for an unknown key, one update cannot change, or a bad
// value.
store::JobUpdate job_update_from_json(const nlohmann::json& body);

// {"id", "version", "changed", "dropped"}, as `update -o json`. Throws
// usage Error when `u` changes nothing, conflict (exit 6) when
// u.if_version is not the job's version.
nlohmann::json update_job(store::Store& store, const std::string& id, const store::JobUpdate& u);

}  // namespace jobctl::ops
