// What a job can reach (jobagent(8), SECURITY), with a real agent and
// real jobs: the agent's secrets are not in any environment a job can
// read.
#include <doctest/doctest.h>
#include <signal.h>

#include <fmt/format.h>

#include "tests/support/fixtures.hpp"

using namespace jobctl;
using test::run_jobctl;
using test::submit;

namespace {

std::unique_ptr<test::Process> start_agent_env(const test::TestDb& db, const test::TempDir& dir,
                                               const std::vector<std::string>& flags,
                                               const std::vector<std::string>& env) {
  std::vector<std::string> argv{JOBAGENT_BIN, "--db", db.dsn(), "--name", "agent", "--poll-interval", "100ms"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  auto with_lock_dir = env;  // as test::start_agent does
  with_lock_dir.push_back("XDG_RUNTIME_DIR=" + dir.path());
  return std::make_unique<test::Process>(argv, with_lock_dir, dir, "agent");
}

}  // namespace

TEST_CASE("security: a job finds the agent's secrets in no environment it can read") {
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string token = "tok-9d2e71c04b";
  auto agent = start_agent_env(db, dir, {}, {"JOBAGENT_SECRET_API_TOKEN=" + token});
  // Its parent is the job supervisor, whose parent is the agent; each
  // started with the agent's environment.
  auto id = submit(db, dir, {"--", "sh", "-ec",
                             "env; tr '\\0' '\\n' < /proc/$PPID/environ; "
                             "tr '\\0' '\\n' < /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/environ"});
  REQUIRE(run_jobctl(db, dir, {"wait", id}).code == 0);
  auto logs = run_jobctl(db, dir, {"logs", id});
  REQUIRE(logs.code == 0);
  CHECK(logs.out.find("XDG_RUNTIME_DIR=") != std::string::npos);  // and with -e, each read worked
  CHECK(logs.out.find(token) == std::string::npos);
  CHECK(test::read_file(fmt::format("/proc/{}/environ", agent->pid())).find(token) == std::string::npos);
  agent->signal(SIGTERM);
  CHECK(agent->wait() == 0);
}
