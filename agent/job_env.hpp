#pragma once
// The environment a job runs with (DESIGN.md, "Execution contract"): the
// agent's own environment minus its secrets, then the job's --env, then
// the JOB_* identifiers, which a job cannot override.
#include <string>
#include <string_view>
#include <vector>

#include "common/store/agent.hpp"

namespace jobctl::agent {

// The idempotency key of a run, stable across its attempts: for a
// schedule's occurrence "<job id or key>:<fire time>", else the user's key
// when the job has one, else "<job id>:<run id>".
std::string idempotency_key(const store::ClaimedRun& run);

// A job that runs as another user gets its own HOME, USER, LOGNAME, SHELL
// (exec::start_process sets them), not the agent's, nor its MAIL or
// XDG_RUNTIME_DIR.
enum class OtherUser { no, yes };

// The environments of the agent's jobs. What each inherits from the agent
// is read once, when the agent starts (after it took its secrets out of
// its environment, which it does not change again): rebuilt for every run,
// a map of every variable, it was 15 % of the agent's CPU while it drained
// `true` jobs (perf). `store_dsn` becomes JOBCTL_DB (so `jobctl progress`
// finds the store); empty: not set (jobagent --no-export-db).
class JobEnvironment {
 public:
  JobEnvironment(char** agent_env, std::string store_dsn);

  // The agent's environment minus its secrets, then the job's --env, then
  // the JOB_* identifiers, which a job cannot override; sorted by name.
  // JOB_CHECKPOINT carries the run's last checkpoint, when an earlier
  // attempt left one.
  std::vector<std::string> for_run(const store::ClaimedRun& run, OtherUser other_user) const;

 private:
  struct Variable {
    std::string entry;  // "NAME=value", as a job gets it
    size_t name_size;
    bool users_own;  // HOME and the like: not given to a job run as another user
    std::string_view name() const { return std::string_view(entry).substr(0, name_size); }
  };
  std::vector<Variable> inherited_;  // sorted by name
  std::string store_dsn_;
};

}  // namespace jobctl::agent
