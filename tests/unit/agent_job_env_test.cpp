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
      "JOB_ID=inherited", "JOB_CHECKPOINT=stale", "JOB_PAYLOAD=stale", "ZED=first", "ZED=last", "LANG=C.UTF-8",
      "USER=root", "LOGNAME=root", "SHELL=/bin/sh", "MAIL=/var/mail/root", "XDG_RUNTIME_DIR=/run/user/0",
      "A1=x", "A=y", "NOEQUALS"};
  std::vector<char*> env;
  for (auto& v : agent_vars) env.push_back(v.data());
  env.push_back(nullptr);
  JobEnvironment environment(env.data(), "postgresql://store");

  auto run = a_run();
  run.spec.env = {{"LANG", "de_DE.UTF-8"}, {"JOB_NAME", "mine"}, {"EXTRA", "1"}, {"JOB_CHECKPOINT", "mine"}};
  auto out = environment.for_run(run, OtherUser::no);
  auto name_of = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  CHECK(std::is_sorted(out.begin(), out.end(),
                       [&](const std::string& a, const std::string& b) { return name_of(a) < name_of(b); }));
  auto m = as_map(out);
  CHECK(m.at("A") == "y");
  CHECK(m.at("PATH") == "/usr/bin");
  CHECK(m.at("HOME") == "/root");
  CHECK(m.at("ZED") == "last");  // a name set twice: the last one, as before
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
  run.spec.env["SHELL"] = "/bin/bash";  // the job's own, not the agent's user's
  m = as_map(environment.for_run(run, OtherUser::yes));
  for (const char* users : {"HOME", "USER", "LOGNAME", "MAIL", "XDG_RUNTIME_DIR"})
    CHECK_MESSAGE(m.count(users) == 0, users);
  CHECK(m.at("SHELL") == "/bin/bash");
  CHECK(m.at("JOB_CHECKPOINT") == "step 3");
  CHECK(m.at("JOB_PAYLOAD") == "{\"n\":1}");
  CHECK(m.at("JOBCTL_DB") == "sqlite:/job.db");

  // A job's --env JOB_PAYLOAD does not stand in for a payload the run lacks.
  run.spec.payload.reset();
  run.spec.env["JOB_PAYLOAD"] = "mine";
  CHECK(as_map(environment.for_run(run, OtherUser::no)).count("JOB_PAYLOAD") == 0);

  // No store to give: JOBCTL_DB is not set, not even the agent's own.
  JobEnvironment without_store(env.data(), "");
  CHECK(as_map(without_store.for_run(a_run(), OtherUser::no)).count("JOBCTL_DB") == 0);
}
