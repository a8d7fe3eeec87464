#include "agent/job_env.hpp"

#include <map>

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

std::string dag_result_variable(const std::string& node) {
  std::string out = "JOB_DAG_RESULT_";
  for (char c : node) out += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : (c == '-' || c == '.') ? '_' : c;
  return out;
}

std::vector<std::string> job_environment(const store::ClaimedRun& run, char** agent_env, const std::string& store_dsn,
                                         OtherUser other_user) {
  std::map<std::string, std::string> env;
  for (char** e = agent_env; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string key = kv.substr(0, eq);
    if (key.rfind("JOBAGENT_SECRET_", 0) == 0) continue;  // secrets stay with the agent
    if (key == "JOBCTL_DB") continue;  // the store is the agent's to give (store_dsn), or not
    // systemd's notify socket is the agent's: a job must not speak for it.
    if (key == "NOTIFY_SOCKET" || key == "WATCHDOG_USEC" || key == "WATCHDOG_PID") continue;
    if (key == "CREDENTIALS_DIRECTORY") continue;  // the agent's secrets, from systemd
    if (other_user == OtherUser::yes &&
        (key == "HOME" || key == "USER" || key == "LOGNAME" || key == "SHELL" || key == "MAIL" ||
         key == "XDG_RUNTIME_DIR"))
      continue;  // the agent's user's, not the job's
    env[key] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : run.spec.env) env[k] = v;
  env["JOB_ID"] = run.job_id;
  env["JOB_RUN_ID"] = run.run_id;
  env["JOB_ATTEMPT"] = std::to_string(run.attempt);
  env["JOB_FENCE_TOKEN"] = std::to_string(run.fence);
  env["JOB_IDEMPOTENCY_KEY"] = idempotency_key(run);
  env["JOB_SCHEDULED_AT"] = util::format_time(run.occurrence.value_or(run.available_at));
  env["JOB_QUEUE"] = run.spec.queue;
  env["JOB_NAME"] = run.spec.name;
  if (!run.dag_run_id.empty()) {
    env["JOB_DAG_RUN_ID"] = run.dag_run_id;
    env["JOB_DAG_NODE"] = run.dag_node;
    for (const auto& [parent, result] : run.parent_results) env[dag_result_variable(parent)] = result;
  }
  if (run.checkpoint) env["JOB_CHECKPOINT"] = *run.checkpoint;
  else env.erase("JOB_CHECKPOINT");
  if (!store_dsn.empty() && !run.spec.env.count("JOBCTL_DB")) env["JOBCTL_DB"] = store_dsn;  // a job's own --env wins
  // Standard input always has it; the environment only while it fits well
  // within what Linux allows a variable (128 KiB).
  if (run.spec.payload && run.spec.payload->size() <= model::kMaxPayloadInEnv) env["JOB_PAYLOAD"] = *run.spec.payload;
  else env.erase("JOB_PAYLOAD");
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace jobctl::agent
