// jobagent executing real processes: the execution contract, cancel,
// timeout, output capture, drain and rescue after a crash.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/store/jobs.hpp"
#include "common/store/migrations.hpp"
#include "common/util/time.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using nlohmann::json;
using test::get;
using test::run_jobctl;
using test::submit;

namespace {

// Whether this host has Kerberos set up where the PostgreSQL client
// module looks before it loads GSSAPI (common/config/libpq_lazy_deps.cpp).
bool kerberos_configured() {
  namespace fs = std::filesystem;
  for (const char* name : {"KRB5CCNAME", "KRB5_CONFIG", "KRB5_CLIENT_KTNAME", "GSS_MECH_CONFIG", "GSS_USE_PROXY"})
    if (std::getenv(name)) return true;
  std::error_code ec;
  return fs::exists("/etc/krb5.conf") || fs::exists("/etc/gss/mech") ||
         (fs::exists("/etc/gss/mech.d") && !fs::is_empty("/etc/gss/mech.d", ec)) ||
         fs::exists("/tmp/krb5cc_" + std::to_string(getuid())) || fs::exists("/tmp/krb5cc_" + std::to_string(geteuid())) ||
         fs::exists("/etc/krb5/user/" + std::to_string(geteuid()) + "/client.keytab");
}

std::vector<std::string> with_fast(std::vector<std::string> flags) {
  flags.insert(flags.end(), test::kFastPoll.begin(), test::kFastPoll.end());
  return flags;
}

std::string status_of(const test::TestDb& db, const test::TempDir& dir, const std::string& id) {
  return get(db, dir, id)["status"];
}

json attempts(const test::TestDb& db, const test::TempDir& dir, const std::string& id) {
  return json::parse(run_jobctl(db, dir, {"runs", id, "-o", "json"}).out);
}

// The CPU time (user + system) a process has used, in clock ticks.
long cpu_ticks(pid_t pid) {
  std::string stat = test::read_file(fmt::format("/proc/{}/stat", pid));
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

}  // namespace

TEST_CASE("agent: runs a job with its payload, environment and identifiers, and keeps its output") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, test::kFastPoll);
  auto id = submit(db, dir, {"--env", "GREETING=hi", "--idempotency-key", "k-1", "--queue", "default", "--payload",
                             R"({"n": 7})", "--cwd", dir.path(), "--",
                             "cat; echo; echo $GREETING $JOB_ID $JOB_RUN_ID $JOB_ATTEMPT $JOB_FENCE_TOKEN "
                             "$JOB_IDEMPOTENCY_KEY $JOB_QUEUE; echo \"$JOB_PAYLOAD\"; pwd; echo to-stderr >&2"});
  auto w = run_jobctl(db, dir, {"wait", id});
  CHECK(w.code == 0);
  auto job = get(db, dir, id);
  CHECK(job["status"] == "succeeded");
  std::string run_id = job["run"]["id"];
  auto logs = run_jobctl(db, dir, {"logs", id});
  auto out = test::lines(logs.out);
  REQUIRE(out.size() == 4);
  CHECK(json::parse(out[0]) == json::parse(R"({"n": 7})"));
  CHECK(out[1] == "hi " + id + " " + run_id + " 1 1 k-1 default");
  CHECK(json::parse(out[2]) == json::parse(R"({"n": 7})"));
  CHECK(out[3] == dir.path());
  CHECK(logs.err == "to-stderr\n");
  auto a = attempts(db, dir, id);
  REQUIRE(a.size() == 1);
  CHECK(a[0]["outcome"] == "succeeded");
  CHECK(a[0]["exit_code"] == 0);
  CHECK(a[0]["worker"] == "agent");
}

TEST_CASE("agent: the PostgreSQL client is loaded only for a PostgreSQL store, without LDAP, and OpenSSL only for TLS") {
  // libpq and OpenSSL cost a process about 2 ms to start: an agent, or a
  // jobctl command, on SQLite never loads them. jobctl's own libpq
  // module does not map LDAP and GnuTLS (and their ten libraries), which
  // it opens only for an ldap:// service lookup; libpq.so.5 maps them.
  // Nor OpenSSL, which it opens for TLS or a password's hashing: not for
  // the test server (no TLS, trust), nor on x86-64, where its stubs are
  // (postgres: TLS … checks that a TLS connection opens it).
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, test::kFastPoll);
  const std::string id = submit(db, dir, {"--", "true"});
  test::eventually([&] { return status_of(db, dir, id) == "succeeded"; }, "the job to run");
  const std::string maps = test::read_file(fmt::format("/proc/{}/maps", agent->pid()));
  REQUIRE(maps.find("libc.so") != std::string::npos);
  const bool postgres = test::test_backend() == config::Backend::postgres;
  CHECK((maps.find("/lib/jobctl/libjobctl-postgres.so") != std::string::npos) == postgres);
#if defined(__x86_64__)
  const char* dsn_given = std::getenv("JOBCTL_TEST_PG_DSN");
  const bool plain = !dsn_given || (std::string(dsn_given).find("ssl") == std::string::npos &&
                                    std::string(dsn_given).find("password") == std::string::npos);
  if (plain && !std::getenv("PGSSLMODE")) CHECK(maps.find("libssl.so") == std::string::npos);
#else
  CHECK((maps.find("libssl.so") != std::string::npos) == postgres);
#endif
  CHECK(maps.find("libpq.so") == std::string::npos);
  CHECK(maps.find("libldap") == std::string::npos);
  CHECK(maps.find("libgnutls") == std::string::npos);
  // Over TCP, libpq asks GSSAPI for a Kerberos ticket (gssencmode=prefer);
  // on a host with no Kerberos set up (the test machines) the module
  // answers that there is none without loading the library (the next case
  // shows it loads it where there could be one).
  if (!kerberos_configured()) CHECK(maps.find("libgssapi_krb5") == std::string::npos);
}

TEST_CASE("agent: libpq's question for a Kerberos ticket loads GSSAPI only where Kerberos could have one") {
  // The test server is reached over TCP, where libpq asks; it does not
  // over a Unix socket, nor with GSSAPI turned off.
  const char* dsn = std::getenv("JOBCTL_TEST_PG_DSN");
  if (test::test_backend() != config::Backend::postgres || !dsn || kerberos_configured() ||
      std::string(dsn).find("host=127.0.0.1") == std::string::npos || std::getenv("PGGSSENCMODE") ||
      std::string(dsn).find("gssencmode") != std::string::npos)
    return;
  test::TempDir dir;
  test::TestDb db(dir);
  auto loads_gssapi = [&](const std::vector<std::string>& env) {
    auto r = test::run_jobctl(db, dir, {"ls"}, "", env);
    REQUIRE(r.code == 0);
    return r.err.find("libgssapi_krb5") != std::string::npos;
  };
  CHECK_FALSE(loads_gssapi({"LD_DEBUG=files"}));
  // A credentials cache named by the environment: only the library can
  // tell whether it holds a ticket (it does not, and the command goes on).
  CHECK(loads_gssapi({"LD_DEBUG=files", "KRB5CCNAME=FILE:" + dir.file("krb5cc")}));
  // So does a configuration of its own, which may name another cache.
  std::ofstream(dir.file("krb5.conf")) << "[libdefaults]\n";
  CHECK(loads_gssapi({"LD_DEBUG=files", "KRB5_CONFIG=" + dir.file("krb5.conf")}));
}

TEST_CASE("agent: a payload too large for the environment reaches the job on standard input only") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, test::kFastPoll);
  // 300 KiB: more than Linux takes in one environment variable (128 KiB).
  std::ofstream(dir.file("big.json")) << "\"" << std::string(300 * 1024, 'x') << "\"";
  std::string seen = dir.file("seen");
  auto id = submit(db, dir, {"--payload", "@" + dir.file("big.json"), "--",
                             "wc -c > " + seen + "; echo \"${JOB_PAYLOAD-unset}\" >> " + seen});
  REQUIRE(run_jobctl(db, dir, {"wait", id}).code == 0);
  auto lines = test::lines(test::read_file(seen));
  REQUIRE(lines.size() == 2);
  CHECK(test::trim(lines[0]) == std::to_string(300 * 1024 + 2));
  CHECK(lines[1] == "unset");
}

TEST_CASE("agent: a failing command, a missing command and a signal are recorded as failures") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, test::kFastPoll);
  auto exit3 = submit(db, dir, {"--retries", "0", "--", "exit 3"});
  auto missing = submit(db, dir, {"--", "/no/such/program", "arg"});
  auto killed = submit(db, dir, {"--retries", "0", "--", "kill -9 $$"});
  CHECK(run_jobctl(db, dir, {"wait", exit3}).code == 1);
  CHECK(run_jobctl(db, dir, {"wait", missing}).code == 1);
  CHECK(run_jobctl(db, dir, {"wait", killed}).code == 1);
  CHECK(get(db, dir, exit3)["status"] == "dead");
  CHECK(get(db, dir, exit3)["run"]["error"] == "exited with code 3; no retries allowed");
  CHECK(get(db, dir, exit3)["run"]["exit_code"] == 3);
  CHECK(get(db, dir, missing)["status"] == "dead");  // permanent: not retried despite the default 3 retries
  CHECK(get(db, dir, missing)["run"]["error"] == "command not found: /no/such/program; permanent failure");
  CHECK(get(db, dir, killed)["run"]["error"] == "killed by SIGKILL; no retries allowed");
  CHECK(attempts(db, dir, killed)[0]["signal"] == 9);
}

TEST_CASE("agent: with every slot busy, the agent sleeps: no claim is due, and the loop does not spin") {
  // Each slot busy, the time for the next poll's claim passes with no
  // claim made: the loop waited until then, and then again at once, for
  // ever (a core's worth of CPU until a slot freed).
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--concurrency", "1", "--poll-interval", "100ms"});
  const std::string id = submit(db, dir, {"--", "sleep 4"});
  test::eventually([&] { return status_of(db, dir, id) == "running"; }, "the job to start");
  const long before = cpu_ticks(agent->pid());
  std::this_thread::sleep_for(std::chrono::seconds(2));  // 20 poll intervals
  const long used = cpu_ticks(agent->pid()) - before;
  CHECK(used < sysconf(_SC_CLK_TCK) / 2);  // under a quarter of a core (a spin takes all of one)
}

TEST_CASE("agent: cancel kills a running sleep 60 and its whole process group") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, test::kFastPoll);
  std::string pidfile = dir.file("child.pid");
  auto id = submit(db, dir, {"--", "sleep 60 & echo $! > " + pidfile + "; wait"});
  test::eventually([&] { return !test::trim(test::read_file(pidfile)).empty(); }, "the job to start");
  int child = std::stoi(test::trim(test::read_file(pidfile)));
  auto c = run_jobctl(db, dir, {"cancel", id});
  CHECK(c.code == 0);
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 1);
  CHECK(status_of(db, dir, id) == "cancelled");
  CHECK(attempts(db, dir, id)[0]["outcome"] == "cancelled");
  test::eventually([&] { return kill(child, 0) != 0; }, "the grandchild sleep to be killed");
}

TEST_CASE("agent: a job past its timeout is terminated and fails") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, with_fast({"--kill-grace", "1s"}));
  auto id = submit(db, dir, {"--timeout", "300ms", "--retries", "0", "--", "trap '' TERM; sleep 30"});
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 1);
  auto job = get(db, dir, id);
  CHECK(job["status"] == "dead");
  CHECK(job["run"]["error"] == "timed out after 300ms; no retries allowed");
  CHECK(attempts(db, dir, id)[0]["signal"] == 9);  // it ignored SIGTERM, so SIGKILL
}

TEST_CASE("agent: output beyond 64 KiB keeps the last 64 KiB of each stream") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, test::kFastPoll);
  auto id = submit(db, dir, {"--", "head -c 3000000 /dev/zero | tr '\\0' a; echo END; head -c 100000 /dev/zero | "
                                   "tr '\\0' b >&2; echo ERR-END >&2"});
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 0);
  auto logs = run_jobctl(db, dir, {"logs", id});
  CHECK(logs.out.size() == 65536);
  CHECK(logs.out.substr(logs.out.size() - 4) == "END\n");
  CHECK(logs.out.find('b') == std::string::npos);
  CHECK(logs.err.size() == 65536);
  CHECK(logs.err.substr(logs.err.size() - 8) == "ERR-END\n");
}

TEST_CASE("agent: SIGTERM drains, letting a running job finish") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, test::kFastPoll);
  std::string marker = dir.file("started");
  auto id = submit(db, dir, {"--", "touch " + marker + "; sleep 1; echo finished"});
  test::eventually([&] { return !test::read_file(marker).empty() || access(marker.c_str(), F_OK) == 0; },
                   "the job to start");
  agent->signal(SIGTERM);
  auto later = submit(db, dir, {"--", "true"});
  CHECK(agent->wait() == 0);
  CHECK(status_of(db, dir, id) == "succeeded");
  CHECK(run_jobctl(db, dir, {"logs", id}).out == "finished\n");
  CHECK(status_of(db, dir, later) == "pending");  // a draining agent claims nothing new
  CHECK(agent->err().find("draining") != std::string::npos);
}

TEST_CASE("agent: past the drain timeout, jobs are killed and released for another agent") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, with_fast({"--drain-timeout", "300ms"}));
  std::string marker = dir.file("started");
  auto id = submit(db, dir, {"--", "touch " + marker + "; sleep 60"});
  test::eventually([&] { return access(marker.c_str(), F_OK) == 0; }, "the job to start");
  agent->signal(SIGTERM);
  CHECK(agent->wait() == 0);
  auto job = get(db, dir, id);
  CHECK(job["status"] == "pending");
  CHECK(job["run"]["deliveries"] == 0);
  CHECK(attempts(db, dir, id)[0]["outcome"] == "released");
  // Another agent picks it up.
  unlink(marker.c_str());
  auto second = test::start_agent(db, dir, test::kFastPoll, "second");
  test::eventually([&] { return status_of(db, dir, id) == "running"; }, "the second agent to claim the job");
  CHECK(get(db, dir, id)["run"]["attempts"] == 2);
}

TEST_CASE("agent: a run given back on drain is released only once what its job left running has ended") {
  // Found by a tester: the drain released the run as soon as the job's
  // process group was killed, and another agent ran it again while a
  // process the job had started with setsid still ran (until the
  // supervisor ended it, after the kill grace, as the agent exited).
  test::TempDir dir;
  test::TestDb db(dir);
  auto first = test::start_agent(db, dir, with_fast({"--drain-timeout", "300ms", "--kill-grace", "2s"}), "first");
  const std::string left = dir.file("left-"), overlap = dir.file("overlap");
  // Each attempt leaves a process that ignores SIGTERM, and first says
  // whether the one an earlier attempt left still runs.
  const std::string script =
      "for f in " + left + "*; do [ -f \"$f\" ] && kill -0 \"$(cat \"$f\")\" 2>/dev/null && touch " + overlap +
      "; done; setsid sh -c 'trap \"\" TERM; echo $$ > " + left + "$JOB_ATTEMPT; sleep 60' & sleep 60";
  auto id = submit(db, dir, {"--retries", "2", "--", script});
  const std::string first_left = left + "1";
  test::eventually([&] { return access(first_left.c_str(), F_OK) == 0; }, "the first attempt to leave a process");
  auto second = test::start_agent(db, dir, test::kFastPoll, "second");
  first->signal(SIGTERM);
  const std::string second_left = left + "2";
  test::eventually([&] { return access(second_left.c_str(), F_OK) == 0; }, "the second agent to run it again");
  CHECK(first->wait() == 0);
  CHECK(access(overlap.c_str(), F_OK) != 0);
  CHECK(test::run_jobctl(db, dir, {"cancel", id}).code == 0);
}

TEST_CASE("agent: a second SIGTERM stops at once and releases the runs") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, test::kFastPoll);
  std::string marker = dir.file("started");
  auto id = submit(db, dir, {"--", "touch " + marker + "; sleep 60"});
  test::eventually([&] { return access(marker.c_str(), F_OK) == 0; }, "the job to start");
  agent->signal(SIGTERM);
  test::eventually([&] { return agent->err().find("draining") != std::string::npos; }, "the drain to begin");
  agent->signal(SIGINT);
  CHECK(agent->wait() == 0);
  CHECK(status_of(db, dir, id) == "pending");
}

TEST_CASE("agent: a run whose agent was kill -9ed is run again by another agent after the lease") {
  test::TempDir dir;
  test::TestDb db(dir);
  std::string marker = dir.file("attempts");
  auto first = test::start_agent(db, dir, with_fast({"--lease", "1s"}), "first");
  auto id = submit(db, dir, {"--", "echo $JOB_ATTEMPT >> " + marker + "; sleep 2"});
  test::eventually([&] { return !test::read_file(marker).empty(); }, "the first attempt to start");
  first->signal(SIGKILL);
  first->wait();
  auto second = test::start_agent(db, dir, with_fast({"--lease", "1s"}), "second");
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 0);
  auto a = attempts(db, dir, id);
  REQUIRE(a.size() == 2);
  CHECK(a[0]["outcome"] == "lost");
  CHECK(a[0]["worker"] == "first");
  CHECK(std::string(a[0]["error"]).find("lease expired") != std::string::npos);
  CHECK(a[1]["outcome"] == "succeeded");
  CHECK(a[1]["worker"] == "second");
  CHECK(test::lines(test::read_file(marker)) == std::vector<std::string>{"1", "2"});
  auto workers = json::parse(run_jobctl(db, dir, {"workers", "--all", "-o", "json"}).out);
  bool first_gone = false;
  for (const auto& w : workers)
    if (w["name"] == "first") first_gone = w["state"] == "gone";
  CHECK(first_gone);
}

TEST_CASE("agent: a job's process dies with its supervisor when both are kill -9ed with the agent") {
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string pid_file = dir.file("job.pid");
  auto agent = test::start_agent(db, dir, with_fast({"--lease", "60s"}));
  submit(db, dir, {"--", "echo $$ > " + pid_file + "; exec sleep 600"});
  test::eventually([&] { return test::lines(test::read_file(pid_file)).size() == 1; }, "the job to start");
  const pid_t job = std::stoi(test::trim(test::read_file(pid_file)));
  // The supervisor is the agent's child (jobagent-sup); pkill -9 jobagent
  // kills both at once. The job lived on, and ran beside its rescue.
  const std::string children = dir.file("children");
  REQUIRE(std::system(("pgrep -P " + std::to_string(agent->pid()) + " > " + children).c_str()) == 0);
  std::vector<pid_t> supervisors;
  for (const auto& line : test::lines(test::read_file(children))) supervisors.push_back(std::stoi(line));
  REQUIRE(supervisors.size() == 1);
  agent->signal(SIGKILL);
  kill(supervisors[0], SIGKILL);
  agent->wait();
  const bool died = [&] {
    try {
      test::eventually([&] { return test::process_ended(job); }, "the job's process to die with its supervisor");
      return true;
    } catch (...) {
      kill(job, SIGKILL);  // not left behind by a failing test
      throw;
    }
  }();
  CHECK(died);
}

TEST_CASE("agent: drains and exits 5 when its SQLite file is deleted or replaced under it") {
  if (test::test_backend() != config::Backend::sqlite) return;  // a file of its own
  test::TempDir dir;
  test::TestDb db(dir);
  const std::vector<std::string> flags{"--lease", "3s", "--poll-interval", "100ms"};
  auto agent = test::start_agent(db, dir, flags);
  REQUIRE(run_jobctl(db, dir, {"wait", submit(db, dir, {"--", "true"})}).code == 0);
  // An operator "resets" the store: the agent claimed on from the deleted
  // file, and jobs submitted to a new one waited for ever.
  const std::string file = db.dsn().substr(std::string("sqlite:").size());
  for (const char* end : {"", "-wal", "-shm"}) std::filesystem::remove(file + end);
  REQUIRE(run_jobctl(db, dir, {"init"}).code == 0);
  const std::string job = submit(db, dir, {"--", "true"});
  CHECK(agent->wait() == 5);  // by itself, no signal
  CHECK(agent->err().find("store_replaced") != std::string::npos);
  CHECK(agent->err().find("draining") != std::string::npos);
  // Started again, as Restart=on-failure would, it runs the new file's job.
  auto again = test::start_agent(db, dir, flags, "again");
  CHECK(run_jobctl(db, dir, {"wait", job, "--timeout", "60s"}).code == 0);
  again->signal(SIGTERM);
  CHECK(again->wait() == 0);
}

TEST_CASE("agent: refuses a schema that is not current, until jobctl init upgrades it") {
  test::TempDir dir;
  SUBCASE("older: jobctl init upgrades it, then the agent runs jobs") {
    test::TestDb db(dir, 1);
    auto refused = test::start_agent(db, dir, test::kFastPoll, "refused");
    CHECK(refused->wait() == 5);
    CHECK(refused->err().find("run `jobctl init`") != std::string::npos);
    CHECK(run_jobctl(db, dir, {"submit", "--", "true"}).code == 5);  // jobctl refuses it too
    auto init = run_jobctl(db, dir, {"init", "-o", "table"});
    CHECK(init.code == 0);
    CHECK(init.out == fmt::format("schema upgraded to version {} ({} migrations applied)\n", store::kSchemaVersion,
                                  store::kSchemaVersion - 1));
    auto agent = test::start_agent(db, dir, test::kFastPoll);
    auto id = submit(db, dir, {"--", "true"});
    CHECK(run_jobctl(db, dir, {"wait", id}).code == 0);
  }
  SUBCASE("newer than this build: refused by both programs") {
    test::TestDb db(dir);
    db.open()->connection().exec("INSERT INTO schema_migrations (version, applied_at) VALUES (999, 0)");
    auto agent = test::start_agent(db, dir, test::kFastPoll);
    CHECK(agent->wait() == 5);
    CHECK(agent->err().find("upgrade") != std::string::npos);
    CHECK(run_jobctl(db, dir, {"init"}).code == 5);
  }
}

TEST_CASE("agent: a name, label or queue that is not UTF-8 is exit 2, and the agent never registers") {
  test::TempDir dir;
  test::TestDb db(dir);
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {"--name", "vm\xFF"}, {"--label", "role=\xC0\xAF"}, {"--queues", "q\xFF"}}) {
    CAPTURE(flags[0]);
    std::vector<std::string> argv{JOBAGENT_BIN, "--db", db.dsn()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    test::Process agent(argv, {"XDG_RUNTIME_DIR=" + dir.path()}, dir, "agent");
    CHECK(agent.wait() == 2);
    CHECK(agent.err().find("is not valid UTF-8") != std::string::npos);
  }
  CHECK(json::parse(run_jobctl(db, dir, {"workers", "-o", "json"}).out).empty());
}

TEST_CASE("agent: an option given an empty value is exit 2, and the agent never registers") {
  test::TempDir dir;
  test::TestDb db(dir);
  for (const char* flag : {"--name", "--label", "--queues", "--lease", "--gc-older-than", "--metrics"}) {
    CAPTURE(flag);
    test::Process agent({JOBAGENT_BIN, "--db", db.dsn(), flag, ""}, {"XDG_RUNTIME_DIR=" + dir.path()}, dir, "agent");
    CHECK(agent.wait() == 2);
    CHECK(agent.err().find(std::string(flag) + ": the value is empty") != std::string::npos);
  }
  CHECK(json::parse(run_jobctl(db, dir, {"workers", "-o", "json"}).out).empty());
}

TEST_CASE("agent: a --kill-grace of more than half the lease is exit 2, and the agent never registers") {
  // Found by a tester: with --lease 3s and the default grace of 5s, a job
  // of an agent killed with -9 still ran while another agent ran it again:
  // the rescue comes as soon as two thirds of the lease after the death.
  test::TempDir dir;
  test::TestDb db(dir);
  test::Process agent({JOBAGENT_BIN, "--db", db.dsn(), "--lease", "3s", "--kill-grace", "2s"},
                      {"XDG_RUNTIME_DIR=" + dir.path()}, dir, "agent");
  CHECK(agent.wait() == 2);
  CHECK(agent.err().find("--kill-grace 2s is more than half of --lease 3s") != std::string::npos);
  CHECK(json::parse(run_jobctl(db, dir, {"workers", "-o", "json"}).out).empty());
}

TEST_CASE("agent: --log-format json writes one JSON object per line, with run and job ids") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, with_fast({"--log-format", "json"}));
  auto id = submit(db, dir, {"--retries", "0", "--", "exit 4"});
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 1);
  agent->signal(SIGTERM);
  CHECK(agent->wait() == 0);
  bool saw_finish = false;
  for (const auto& line : test::lines(agent->err())) {
    auto j = json::parse(line);  // throws, failing the test, on a non-JSON line
    CHECK(j.contains("ts"));
    CHECK(j.contains("level"));
    if (j["event"] == "finished") {
      saw_finish = true;
      CHECK(j["job_id"] == id);
      CHECK(j["status"] == "dead");
      CHECK(j["run_id"].get<std::string>().size() == 26);
    }
  }
  CHECK(saw_finish);
}

TEST_CASE("agent: an agent that lost its lease kills its copy and reports nothing") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, with_fast({"--lease", "1s"}));
  std::string pidfile = dir.file("job.pid");
  auto id = submit(db, dir, {"--", "echo $$ > " + pidfile + "; exec sleep 60"});
  test::eventually([&] { return !test::trim(test::read_file(pidfile)).empty(); }, "the job to start");
  int pid = std::stoi(test::trim(test::read_file(pidfile)));
  // Another owner takes the run over, as a rescue after a partition would.
  auto store = db.open();
  std::string run_id = get(db, dir, id)["run"]["id"];
  store->connection().exec("UPDATE runs SET lease_owner = 'other', fence = fence + 1 WHERE id = $1", {run_id});
  test::eventually([&] { return kill(pid, 0) != 0; }, "the agent to kill its copy");
  test::eventually([&] { return agent->err().find("lease_lost") != std::string::npos; }, "the agent to log it");
  auto run = store->jobs().get_run(run_id);
  CHECK(run->status == model::RunStatus::running);
  CHECK(run->lease_owner == "other");
  CHECK(store->jobs().attempts(run_id).at(0).outcome == "running");
}

TEST_CASE("agent: on PostgreSQL a finished run is recorded while the agent's claim waits on a lock") {
  // Completions go on a connection of their own while the claims' is
  // busy: a claim that waits (here on a lock another session holds on the
  // tenants it updates) holds none of them back. On one connection the
  // completion queued behind the claim until the lock went. And a claim
  // that has waited past 5 s is an outage, which the completions recorded
  // meanwhile do not end: only the claim's answer does. SQLite has one
  // writer: its agent keeps one connection.
  if (test::test_backend() != config::Backend::postgres) return;
  test::TempDir dir;
  test::TestDb db(dir);
  // A claim may wait on the lock longer than the test does.
  auto agent = test::start_agent(db, dir, with_fast({"--concurrency", "3"}), "agent", {"JOBCTL_STORE_TIMEOUT=600s"});
  const std::string go_a = dir.file("go-a"), go_b = dir.file("go-b");
  auto a = submit(db, dir, {"--", "while [ ! -e " + go_a + " ]; do sleep 0.05; done"});
  auto b = submit(db, dir, {"--", "while [ ! -e " + go_b + " ]; do sleep 0.05; done"});
  test::eventually([&] { return status_of(db, dir, a) == "running" && status_of(db, dir, b) == "running"; },
                   "both jobs to start");
  auto holder = db.connect();
  holder->exec_script("BEGIN; LOCK TABLE tenants IN ACCESS EXCLUSIVE MODE");
  // This test's own tenants table (the schema is the test's): a session waits for it.
  auto watcher = db.connect();
  auto claim_waits = [&] {
    return watcher->query("SELECT count(*) FROM pg_locks WHERE relation = 'tenants'::regclass AND NOT granted")
               .at(0)
               .i64(0) > 0;
  };
  test::eventually(claim_waits, "the agent's next claim to wait on the lock");
  std::ofstream(go_a).close();  // a ends
  test::eventually([&] { return status_of(db, dir, a) == "succeeded"; }, "a to be recorded, the claim still waiting");
  test::eventually([&] { return agent->err().find("store_unreachable") != std::string::npos; },
                   "the claim's wait to count as an outage");
  std::ofstream(go_b).close();  // b ends
  test::eventually([&] { return status_of(db, dir, b) == "succeeded"; }, "b to be recorded, the claim still waiting");
  CHECK(claim_waits());
  // Time for the agent to hear that b was recorded: it must not call the outage over.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  CHECK(agent->err().find("store_back") == std::string::npos);
  holder->exec_script("ROLLBACK");
  test::eventually([&] { return agent->err().find("store_back") != std::string::npos; }, "the claim to answer");
  // The claim goes on once the lock is gone, and the agent with it.
  auto next = submit(db, dir, {"--", "true"});
  CHECK(run_jobctl(db, dir, {"wait", next}).code == 0);
}

TEST_CASE("agent: a job submitted with --in runs once it is due, not before") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "10s"});  // the due time, not a poll, wakes it
  auto id = submit(db, dir, {"--in", "1s", "--", "true"});
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 0);
  auto job = get(db, dir, id);
  auto a = attempts(db, dir, id);
  REQUIRE(a.size() == 1);
  int64_t now = util::now_micros();
  int64_t created = util::parse_time_arg(job["created_at"], "created", now);
  int64_t due = util::parse_time_arg(job["run"]["available_at"], "due", now);
  int64_t started = util::parse_time_arg(a[0]["started_at"], "started", now);
  CHECK(due - created >= 999'000);
  CHECK(started >= due - 1000);
}

TEST_CASE("agent: never runs more jobs at once than --concurrency, though it claims while it starts") {
  // Half the jobs end at once, half take a while: slots free up while a
  // claim is still being started, and the agent claims them again then.
  // Each job stamps its start and end; at no instant may more than 16
  // jobs be between the two.
  test::TempDir dir;
  test::TestDb db(dir);
  std::string stamps = dir.file("stamps");
  REQUIRE(mkdir(stamps.c_str(), 0700) == 0);
  std::string file = dir.file("jobs.jsonl");
  {
    std::ofstream out(file);
    for (int i = 0; i < 160; ++i) {
      std::string body = fmt::format("date +%s%N > {0}/$JOB_RUN_ID.s; {1}date +%s%N > {0}/$JOB_RUN_ID.e", stamps,
                                     i % 2 ? "" : "sleep 0.3; ");
      out << json{{"command", body}}.dump() << "\n";
    }
  }
  REQUIRE(run_jobctl(db, dir, {"submit", "--file", file}).code == 0);
  auto agent = test::start_agent(db, dir, with_fast({"--concurrency", "16"}));
  auto ended = [&] {
    size_t n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(stamps))
      n += entry.path().extension() == ".e" && test::read_file(entry.path().string()).ends_with("\n");
    return n;
  };
  test::eventually([&] { return ended() == 160; }, "the 160 jobs to end", std::chrono::seconds(60));
  std::vector<std::pair<int64_t, int>> edges;  // (time, +1 start / -1 end)
  for (const auto& entry : std::filesystem::directory_iterator(stamps)) {
    std::string path = entry.path().string();
    int64_t at = std::stoll(test::read_file(path));
    edges.emplace_back(at, path.back() == 's' ? 1 : -1);
  }
  REQUIRE(edges.size() == 320);
  std::sort(edges.begin(), edges.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;  // an end before a start at the same ns
  });
  int now = 0, most = 0;
  for (const auto& [at, step] : edges) most = std::max(most, now += step);
  CHECK(most <= 16);
  CHECK(most >= 8);  // the jobs did run side by side
}

TEST_CASE("agent: runs due one after another each start when due, with no poll to wake the agent") {
  // The agent sleeps until the next run falls due. It counted that from
  // before its claim, so it woke early by the claim's time; and a run that
  // fell due between its claim and that reading left it asleep for the whole
  // poll interval: an hour here, which the wait below would not outlast.
  // Claims are made slow by 20,000 runs due first that this agent may not
  // take (they need a label it lacks); the jobs run on meanwhile, so no
  // completion wakes the agent, and it is no leader, so no schedule does.
  test::TempDir dir;
  test::TestDb db(dir);
  std::string file = dir.file("jobs.jsonl");
  {
    std::ofstream out(file);
    for (int i = 0; i < 20000; ++i) out << R"({"command": "true", "on": "role=gpu", "priority": "critical"})" << "\n";
  }
  REQUIRE(run_jobctl(db, dir, {"submit", "--file", file}).code == 0);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "1h", "--concurrency", "64", "--no-scheduler"});
  constexpr int kJobs = 12;  // due further apart than a claim takes: each claim meets one due time
  {
    std::ofstream out(file);
    for (int i = 0; i < kJobs; ++i)
      out << json{{"command", "sleep 60"}, {"in", fmt::format("{}ms", 1000 + 300 * i)}}.dump() << "\n";
  }
  REQUIRE(test::lines(run_jobctl(db, dir, {"submit", "--file", file}).out).size() == kJobs);
  auto running = [&] {
    auto jobs = json::parse(run_jobctl(db, dir, {"ls", "-o", "json", "--status", "running"}).out);
    return static_cast<int>(jobs.size());
  };
  test::eventually([&] { return running() == kJobs; }, "every job to start", std::chrono::seconds(60));
}
