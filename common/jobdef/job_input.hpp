#pragma once
// A job definition from its JSON form: a `submit --file` line or a DAG
// node. Strict: unknown fields, wrong types and bad values are errors
// naming the field, because a typo silently ignored becomes a job that
// runs wrong. (The output form, `-o json`, is model/job_json.hpp.)
//
// jobdef sits above model and cron (it checks a schedule's expression and
// zone) and below the store, the DAGs and the CLI.
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/model/job.hpp"
#include "common/util/error.hpp"

namespace jobctl::jobdef {

// Parses one job object. Throws jobctl::Error(ExitCode::usage) whose message
// names the offending field.
model::JobSpec job_spec_from_json(const nlohmann::json& j);

// `e` about one job of a batch, which is refused whole: `item` names the
// job ("line 5", "job 2") ahead of the message, and the hint ends
// "nothing was submitted".
Error refused_in_batch(const Error& e, std::string_view item);

}  // namespace jobctl::jobdef
