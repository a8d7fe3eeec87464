// What a job can reach (jobagent(8), SECURITY), with a real agent and
// real jobs: the agent's secrets are not in any environment a job can
// read, and a job runs as the user it names when the agent allows it.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "tests/support/fixtures.hpp"

using namespace jobctl;
using test::run_jobctl;
using test::submit;

namespace {


}  // namespace

TEST_CASE("security: a job finds the agent's secrets in no environment it can read") {
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string token = "tok-9d2e71c04b";
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"},
                                 "agent", {"JOBAGENT_SECRET_API_TOKEN=" + token});
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

TEST_CASE("security: the password of --db's DSN is not in the arguments that ps shows, the agent's or jobctl's") {
  if (test::test_backend() != config::Backend::postgres) return;  // a SQLite path holds no password
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string password = "pw-51c7e0a9d3";
  const std::string dsn = db.dsn() + " password=" + password;
  test::Process agent({JOBAGENT_BIN, "--db=" + dsn, "--poll-interval", "100ms", "--no-export-db"},
                      {"XDG_RUNTIME_DIR=" + dir.path()}, dir, "agent");
  // Every user of the host reads these: a job run as another user, too.
  auto id = submit(db, dir, {"--", "sh", "-ec",
                             "tr '\\0' ' ' < /proc/$PPID/cmdline; echo; "
                             "tr '\\0' ' ' < /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/cmdline; echo; sleep 600"});
  test::Process waiting({JOBCTL_BIN, "--db", dsn, "wait", id}, {}, dir, "wait");
  test::eventually([&] { return test::lines(run_jobctl(db, dir, {"logs", id}).out).size() == 2; }, "the job's two lines");
  const std::string shown = run_jobctl(db, dir, {"logs", id}).out +
                            test::read_file(fmt::format("/proc/{}/cmdline", waiting.pid()));
  CHECK(shown.find(password) == std::string::npos);
  CHECK_MESSAGE(shown.find("password=***") != std::string::npos, shown);
  CHECK(run_jobctl(db, dir, {"cancel", id}).code == 0);
  CHECK(waiting.wait() != 0);  // the job was cancelled: parsed from its copy, the DSN worked
  agent.signal(SIGTERM);
  CHECK(agent.wait() == 0);
}

TEST_CASE("security: a job runs as the user it names, when the agent allows it, and reaches none of the agent's") {
  if (geteuid() != 0) return;  // only root may switch users (CI runs as root)
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string token = "tok-3b8c0d5e1f", password = "pw-6a2f9e0c7d";
  std::string secrets = dir.file("secrets");
  std::ofstream(secrets) << "DB_PASSWORD=" << password << "\n";
  chmod(secrets.c_str(), 0600);
  // The test's directory is root's: nobody's jobs work in /tmp.
  auto agent = test::start_agent(
      db, dir, {"--poll-interval", "100ms", "--allow-users", "nobody,daemon", "--secrets-file", secrets}, "agent",
      {"JOBAGENT_SECRET_API_TOKEN=" + token});
  auto as_nobody = submit(db, dir, {"--user", "nobody", "--cwd", "/tmp", "--", "sh", "-c",
                                    "id -un; echo HOME=$HOME; cat /proc/$PPID/environ || echo environ-refused; "
                                    "cat " + secrets + " || echo file-refused"});
  auto as_bin = submit(db, dir, {"--user", "bin", "--", "true"});
  auto as_self = submit(db, dir, {"--user", "root", "--", "true"});  // the agent's own user: nothing to switch
  REQUIRE(run_jobctl(db, dir, {"wait", as_nobody}).code == 0);
  auto out = run_jobctl(db, dir, {"logs", as_nobody}).out;
  CHECK(out.find("nobody\nHOME=/nonexistent\n") != std::string::npos);
  CHECK(out.find("environ-refused") != std::string::npos);
  CHECK(out.find("file-refused") != std::string::npos);
  CHECK(out.find(token) == std::string::npos);
  CHECK(out.find(password) == std::string::npos);
  auto job = test::get(db, dir, as_nobody);
  CHECK(job["user"] == "nobody");

  // A user the agent does not allow: the run is dead at once, and says why.
  CHECK(run_jobctl(db, dir, {"wait", as_bin}).code == 1);
  auto refused = test::get(db, dir, as_bin);
  CHECK(refused["status"] == "dead");
  CHECK(refused["run"]["error"].get<std::string>().find(
            "this agent (agent) does not run jobs as user 'bin' (its --allow-users: nobody,daemon); start it with "
            "--allow-users bin") != std::string::npos);
  CHECK(run_jobctl(db, dir, {"wait", as_self}).code == 0);

  // update --user moves the job to another user; "" back to the agent's own.
  CHECK(run_jobctl(db, dir, {"update", as_nobody, "--user", "daemon"}).code == 0);
  CHECK(test::get(db, dir, as_nobody)["user"] == "daemon");
  CHECK(run_jobctl(db, dir, {"update", as_nobody, "--user", ""}).code == 0);
  CHECK(test::get(db, dir, as_nobody)["user"].is_null());
  agent->signal(SIGTERM);
  CHECK(agent->wait() == 0);
}

TEST_CASE("security: --run-as runs jobs that name no user as that user") {
  if (geteuid() != 0) return;
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms", "--run-as", "nobody"}, "agent", {});
  auto id = submit(db, dir, {"--cwd", "/tmp", "--", "id", "-un"});
  REQUIRE(run_jobctl(db, dir, {"wait", id}).code == 0);
  CHECK(run_jobctl(db, dir, {"logs", id}).out == "nobody\n");
  // The agent's own user (root) is not the default any more: naming it
  // must not undo --run-as.
  auto as_root = submit(db, dir, {"--user", "root", "--", "id", "-un"});
  CHECK(run_jobctl(db, dir, {"wait", as_root}).code == 1);
  CHECK(test::get(db, dir, as_root)["run"]["error"].get<std::string>().find("does not run jobs as user 'root'") !=
        std::string::npos);
  agent->signal(SIGTERM);
  CHECK(agent->wait() == 0);
}

TEST_CASE("security: user names are checked where they are given, and nothing is written") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto bad = run_jobctl(db, dir, {"submit", "--user", "bad name", "--", "true"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--user: invalid user name 'bad name'") != std::string::npos);
  auto hook = run_jobctl(db, dir, {"submit", "--user", "nobody", "--webhook", "http://127.0.0.1:1/x"});
  CHECK(hook.code == 2);
  CHECK(hook.err.find("a webhook job takes no user (--user)") != std::string::npos);
  auto line = run_jobctl(db, dir, {"submit", "--file", "-"}, R"({"command": "true", "user": "-x"})" "\n");
  CHECK(line.code == 2);
  CHECK(line.err.find("field 'user': invalid user name '-x'") != std::string::npos);
  CHECK(run_jobctl(db, dir, {"ls", "-o", "json"}).out == "[]\n");
  // The agent's flags name users of this host.
  std::vector<std::string> argv{JOBAGENT_BIN, "--db", db.dsn(), "--allow-users", "nobody,no-such-user-7f3"};
  test::Process agent(argv, {"XDG_RUNTIME_DIR=" + dir.path()}, dir, "agent");
  CHECK(agent.wait() == 2);
  CHECK(agent.err().find("--allow-users: no user 'no-such-user-7f3' on this host") != std::string::npos);
}
