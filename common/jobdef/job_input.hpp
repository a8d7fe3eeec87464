#pragma once
// A job definition from its JSON form: a `submit --file` line or a DAG
// node. Strict: unknown fields, wrong types and bad values are errors
// naming the field, because a typo silently ignored becomes a job that
// runs wrong. (The output form, `-o json`, is model/job_json.hpp.)
//
// jobdef sits above model and cron (it checks a schedule's expression and
// zone) and below the store, the DAGs and the CLI.
#include <nlohmann/json.hpp>

#include "common/model/job.hpp"

namespace jobctl::jobdef {

// Parses one job object. Throws jobctl::Error(ExitCode::usage) whose message
// names the offending field.
model::JobSpec job_spec_from_json(const nlohmann::json& j);

}  // namespace jobctl::jobdef
