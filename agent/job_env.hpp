#pragma once
// The environment a job runs with (DESIGN.md, "Execution contract"): the
// agent's own environment minus its secrets, then the job's --env, then
// the JOB_* identifiers, which a job cannot override.
#include <string>
#include <vector>

#include "common/store/store.hpp"

namespace jobctl::agent {

// The idempotency key of a run: the user's key when the job has one, else
// "<job id>:<run id>". Stable across attempts of the run.
std::string idempotency_key(const store::ClaimedRun& run);

// A DAG node sees each parent's result (the last line of its stdout) in
// JOB_DAG_RESULT_<PARENT>, the name upper-cased with - and . as _.
std::string dag_result_variable(const std::string& node);

std::vector<std::string> job_environment(const store::ClaimedRun& run, char** agent_env);

}  // namespace jobctl::agent
