#include "agent/job_env.hpp"

#include <map>
#include <string_view>

#include "common/dag/dag.hpp"
#include "common/model/limits.hpp"
#include "common/util/time.hpp"

namespace jobctl::agent {

std::string idempotency_key(const store::ClaimedRun& run) {
  // A schedule's occurrence keeps its key across attempts and across a
  // re-materialisation by another leader: the job (or its key) and the
  // fire time, so each occurrence is an execution of its own.
  const std::string& job = run.spec.idempotency_key.empty() ? run.job_id : run.spec.idempotency_key;
  if (run.occurrence) return job + ":" + util::format_time(*run.occurrence);
  if (!run.spec.idempotency_key.empty()) return run.spec.idempotency_key;
  return run.job_id + ":" + run.run_id;
}

JobEnvironment::JobEnvironment(char** agent_env, std::string store_dsn) : store_dsn_(std::move(store_dsn)) {
  std::map<std::string, std::string> env;  // a name set twice: the last one
  for (char** e = agent_env; e && *e; ++e) {
    std::string_view kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.insert_or_assign(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  for (const auto& [name, value] : env) {
    if (name.rfind("JOBAGENT_SECRET_", 0) == 0) continue;  // secrets stay with the agent
    if (name == "JOBCTL_DB") continue;  // the store is the agent's to give (store_dsn), or not
    // systemd's notify socket is the agent's: a job must not speak for it.
    if (name == "NOTIFY_SOCKET" || name == "WATCHDOG_USEC" || name == "WATCHDOG_PID") continue;
    if (name == "CREDENTIALS_DIRECTORY") continue;  // the agent's secrets, from systemd
    if (name == "JOB_CHECKPOINT" || name == "JOB_PAYLOAD") continue;  // the run's own, or none
    const bool users_own = name == "HOME" || name == "USER" || name == "LOGNAME" || name == "SHELL" ||
                           name == "MAIL" || name == "XDG_RUNTIME_DIR";
    inherited_.push_back({name + "=" + value, name.size(), users_own});
  }
}

std::vector<std::string> JobEnvironment::for_run(const store::ClaimedRun& run, OtherUser other_user) const {
  // What the run sets over what it inherits: a few names, merged in order.
  std::map<std::string, std::string> own(run.spec.env.begin(), run.spec.env.end());
  own["JOB_ID"] = run.job_id;
  own["JOB_RUN_ID"] = run.run_id;
  own["JOB_ATTEMPT"] = std::to_string(run.attempt);
  own["JOB_FENCE_TOKEN"] = std::to_string(run.fence);
  own["JOB_IDEMPOTENCY_KEY"] = idempotency_key(run);
  own["JOB_SCHEDULED_AT"] = util::format_time(run.occurrence.value_or(run.available_at));
  own["JOB_QUEUE"] = run.spec.queue;
  own["JOB_NAME"] = run.spec.name;
  if (!run.dag_run_id.empty()) {
    own["JOB_DAG_RUN_ID"] = run.dag_run_id;
    own["JOB_DAG_NODE"] = run.dag_node;
    for (const auto& [parent, result] : run.parent_results) own[dag::result_variable(parent)] = result;
  }
  if (!store_dsn_.empty() && !run.spec.env.count("JOBCTL_DB")) own["JOBCTL_DB"] = store_dsn_;  // a job's own --env wins
  // Not from --env either (nor inherited): a checkpoint only from the run,
  // and the payload only while it fits well within what Linux allows a
  // variable (128 KiB); standard input always has it.
  if (run.checkpoint) own["JOB_CHECKPOINT"] = *run.checkpoint;
  else own.erase("JOB_CHECKPOINT");
  if (run.spec.payload && run.spec.payload->size() <= model::kMaxPayloadInEnv) own["JOB_PAYLOAD"] = *run.spec.payload;
  else own.erase("JOB_PAYLOAD");

  std::vector<std::string> out;
  out.reserve(inherited_.size() + own.size());
  auto mine = own.begin();
  for (const auto& v : inherited_) {
    const std::string_view name = v.name();
    for (; mine != own.end() && mine->first < name; ++mine) out.push_back(mine->first + "=" + mine->second);
    if (mine != own.end() && mine->first == name) continue;  // the run's, added next round
    if (v.users_own && other_user == OtherUser::yes) continue;
    out.push_back(v.entry);
  }
  for (; mine != own.end(); ++mine) out.push_back(mine->first + "=" + mine->second);
  return out;
}

}  // namespace jobctl::agent
