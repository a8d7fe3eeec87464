#pragma once
// The environment a job runs with (DESIGN.md, "Execution contract"): the
// agent's own environment minus its secrets, then the job's --env, then
// the JOB_* identifiers, which a job cannot override.
#include <string>
#include <vector>

#include "common/store/agent.hpp"

namespace jobctl::agent {

// The idempotency key of a run, stable across its attempts: for a
// schedule's occurrence "<job id or key>:<fire time>", else the user's key
// when the job has one, else "<job id>:<run id>".
std::string idempotency_key(const store::ClaimedRun& run);

// A DAG node sees each parent's result (the last line of its stdout) in
// JOB_DAG_RESULT_<PARENT>, the name upper-cased with - and . as _.
std::string dag_result_variable(const std::string& node);

// `store_dsn` becomes JOBCTL_DB (so `jobctl progress` finds the store);
// empty: not set (jobagent --no-export-db). JOB_CHECKPOINT carries the
// run's last checkpoint, when an earlier attempt left one. A job that runs
// as another user (`other_user`) gets its own HOME, USER, LOGNAME, SHELL
// (exec::start_process sets them), not the agent's, nor its MAIL or
// XDG_RUNTIME_DIR.
enum class OtherUser { no, yes };
std::vector<std::string> job_environment(const store::ClaimedRun& run, char** agent_env, const std::string& store_dsn,
                                         OtherUser other_user = OtherUser::no);

}  // namespace jobctl::agent
