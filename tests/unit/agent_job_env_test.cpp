// The environment a job runs with (agent/job_env.hpp): the agent's own
// minus its secrets, then the job's --env, then the JOB_* identifiers.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "agent/job_env.hpp"

using namespace jobctl;
using namespace jobctl::agent;

namespace {

std::map<std::string, std::string> as_map(const std::vector<std::string>& env) {
  std::map<std::string, std::string> m;
  for (const auto& kv : env) {
    auto eq = kv.find('=');
    REQUIRE(eq != std::string::npos);
    CHECK(m.emplace(kv.substr(0, eq), kv.substr(eq + 1)).second);  // each name once
  }
  return m;
}

store::ClaimedRun a_run() {
  store::ClaimedRun r;
  r.run_id = "r1";
  r.job_id = "j1";
  r.attempt = 2;
  r.fence = 7;
  r.available_at = 0;
  r.spec.name = "nightly";
  r.spec.queue = "q";
  return r;
}

}  // namespace

TEST_CASE("agent: a job inherits the agent's environment but its secrets, and its own --env and JOB_* win") {
  std::vector<std::string> agent_vars = {
      "PATH=/usr/bin", "HOME=/root", "LANG=C", "JOBAGENT_SECRET_TOKEN=s3cret", "NOTIFY_SOCKET=/run/x",
      "WATCHDOG_USEC=1", "WATCHDOG_PID=1", "CREDENTIALS_DIRECTORY=/run/creds", "JOBCTL_DB=sqlite:/agent.db",
      "JOB_ID=inherited", "JOB_CHECKPOINT=stale", "JOB_PAYLOAD=stale", "ZED=last", "LANG=C.UTF-8", "NOEQUALS"};
  std::vector<char*> env;
  for (auto& v : agent_vars) env.push_back(v.data());
  env.push_back(nullptr);
  JobEnvironment environment(env.data(), "postgresql://store");

  auto run = a_run();
  run.spec.env = {{"LANG", "de_DE.UTF-8"}, {"JOB_NAME", "mine"}, {"EXTRA", "1"}, {"JOB_CHECKPOINT", "mine"}};
  auto out = environment.for_run(run, OtherUser::no);
  CHECK(std::is_sorted(out.begin(), out.end()));
  auto m = as_map(out);
  CHECK(m.at("PATH") == "/usr/bin");
  CHECK(m.at("HOME") == "/root");
  CHECK(m.at("ZED") == "last");
  CHECK(m.at("LANG") == "de_DE.UTF-8");  // --env over the agent's
  CHECK(m.at("EXTRA") == "1");
  CHECK(m.at("JOB_NAME") == "nightly");  // JOB_* over --env
  CHECK(m.at("JOB_ID") == "j1");
  CHECK(m.at("JOB_RUN_ID") == "r1");
  CHECK(m.at("JOB_ATTEMPT") == "2");
  CHECK(m.at("JOB_FENCE_TOKEN") == "7");
  CHECK(m.at("JOB_QUEUE") == "q");
  CHECK(m.at("JOB_IDEMPOTENCY_KEY") == "j1:r1");
  CHECK(m.at("JOBCTL_DB") == "postgresql://store");
  for (const char* gone : {"JOBAGENT_SECRET_TOKEN", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID",
                           "CREDENTIALS_DIRECTORY", "JOB_CHECKPOINT", "JOB_PAYLOAD", "NOEQUALS"})
    CHECK_MESSAGE(m.count(gone) == 0, gone);

  // Another user's job: not the agent's HOME; a checkpoint and a payload
  // from the run; a job's own JOBCTL_DB wins over the agent's store.
  run.checkpoint = "step 3";
  run.spec.payload = "{\"n\":1}";
  run.spec.env["JOBCTL_DB"] = "sqlite:/job.db";
  m = as_map(environment.for_run(run, OtherUser::yes));
  CHECK(m.count("HOME") == 0);
  CHECK(m.at("JOB_CHECKPOINT") == "step 3");
  CHECK(m.at("JOB_PAYLOAD") == "{\"n\":1}");
  CHECK(m.at("JOBCTL_DB") == "sqlite:/job.db");

  // No store to give: JOBCTL_DB is not set, not even the agent's own.
  JobEnvironment without_store(env.data(), "");
  CHECK(as_map(without_store.for_run(a_run(), OtherUser::no)).count("JOBCTL_DB") == 0);
}
