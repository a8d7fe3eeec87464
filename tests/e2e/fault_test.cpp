// Faults end to end, on both stores: the agent's loop keeps its timing
// while the store is frozen, a lease the agent holds without running it is
// given back, every jobctl command gives up with exit 5, and work that
// finished during an outage is recorded, not run again.
//
// A frozen store is real: PostgreSQL behind a proxy that stops forwarding
// (what a SIGSTOPped server or a hung host looks like to a client), SQLite
// with its write lock held by another connection.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/store/agent.hpp"
#include "common/store/jobs.hpp"
#include "tests/support/faults.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using nlohmann::json;
using test::get;
using test::run_jobctl;
using test::submit;

namespace {

// An agent on `dsn` (a StoreFreeze's), with a store timeout of its own.
std::unique_ptr<test::Process> agent_on(const std::string& dsn, const test::TempDir& dir, const std::string& name,
                                        std::vector<std::string> flags, const std::string& store_timeout) {
  std::vector<std::string> argv{JOBAGENT_BIN, "--db", dsn, "--name", name, "--poll-interval", "100ms"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return std::make_unique<test::Process>(
      argv, std::vector<std::string>{"JOBCTL_STORE_TIMEOUT=" + store_timeout, "XDG_RUNTIME_DIR=" + dir.path()}, dir,
      name);
}

bool logged(const test::Process& p, const std::string& event) { return p.err().find(event) != std::string::npos; }

bool alive(pid_t pid) { return pid > 0 && kill(pid, 0) == 0; }

std::string worker_id(const test::TestDb& db, const test::TempDir& dir, const std::string& name) {
  for (const auto& w : json::parse(run_jobctl(db, dir, {"workers", "-o", "json"}).out))
    if (w["name"] == name) return w["id"];
  FAIL("no worker named " << name);
  return {};
}

}  // namespace

TEST_CASE("fault: a lease the store gives an agent that is not running it is given back at once, unspent") {
  test::TempDir dir;
  test::TestDb db(dir);
  // A long lease: only the agent's reconciliation can explain the run
  // coming back, not its lease running out.
  auto agent = test::start_agent(db, dir, {"--lease", "6s", "--poll-interval", "100ms"});
  test::eventually([&] { return run_jobctl(db, dir, {"workers", "-o", "json"}).out.find("agent") != std::string::npos; },
                   "the agent to register");
  // In a queue the agent does not serve, so it stays pending once given back.
  auto id = submit(db, dir, {"--queue", "elsewhere", "--", "true"});
  // What a claim whose commit answer was lost leaves: a lease the agent
  // holds in the store and knows nothing of.
  auto s = db.open();
  auto claimed = s->agent().claim(worker_id(db, dir, "agent"), {"elsewhere"}, 1, 6'000'000);
  REQUIRE(claimed.size() == 1);
  test::eventually([&] { return get(db, dir, id)["status"] == "pending"; }, "the lease to be given back",
                   std::chrono::seconds(30));
  auto run = s->jobs().get_run(claimed[0].run_id);
  CHECK(run->deliveries == 0);
  CHECK(run->failures == 0);
  auto attempts = s->jobs().attempts(claimed[0].run_id);
  REQUIRE(attempts.size() == 1);
  CHECK(attempts[0].outcome == "released");
  CHECK(logged(*agent, "lease_given_back"));
}

TEST_CASE("fault: while the store is frozen the agent's loop keeps its timing, then records what happened") {
  test::TempDir dir;
  test::TestDb db(dir);
  test::StoreFreeze store(db);
  // The driver would wait two minutes: only the loop can act in between.
  auto agent = agent_on(store.dsn(), dir, "agent", {"--lease", "3s"}, "120s");
  std::string pid_file = dir.file("pid");
  auto id = submit(db, dir, {"--timeout", "3s", "--retries", "0", "--", "echo $$ > " + pid_file + "; exec sleep 300"});
  test::eventually([&] { return !test::read_file(pid_file).empty(); }, "the job to start");
  pid_t job = std::stoi(test::read_file(pid_file));

  store.freeze();
  // The job's --timeout is enforced, and a stalled store is reported, while
  // the store still does not answer.
  test::eventually([&] { return !alive(job); }, "the job's timeout to kill it with the store frozen");
  test::eventually([&] { return logged(*agent, "store_unreachable"); }, "the outage to be logged");
  agent->signal(SIGTERM);
  test::eventually([&] { return logged(*agent, "draining"); }, "SIGTERM to be handled with the store frozen");
  CHECK(agent->running());  // it waits to record the result

  store.thaw();
  CHECK(agent->wait() == 0);
  CHECK(logged(*agent, "store_back"));
  auto job_json = get(db, dir, id);
  CHECK(job_json["status"] == "dead");
  CHECK(job_json["run"]["error"].get<std::string>().find("timed out") != std::string::npos);
  CHECK(json::parse(run_jobctl(db, dir, {"runs", id, "-o", "json"}).out).size() == 1);
}

TEST_CASE("fault: a leading agent sleeps while its scheduler's call waits for a frozen store") {
  test::TempDir dir;
  test::TestDb db(dir);
  test::StoreFreeze store(db);
  auto agent = agent_on(store.dsn(), dir, "agent", {"--lease", "6s"}, "60s");
  test::eventually([&] { return logged(*agent, "scheduler_leading"); }, "the agent to lead");
  // Its CPU time (user + system, in clock ticks) from /proc.
  auto cpu_ticks = [&] {
    const std::string stat = test::read_file("/proc/" + std::to_string(agent->pid()) + "/stat");
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    long ticks = 0;
    for (int i = 3; fields >> field; ++i)
      if (i == 14 || i == 15) ticks += std::stol(field);
    return ticks;
  };
  store.freeze();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // a scheduler tick past, its call waiting
  const long before = cpu_ticks();
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const long used = cpu_ticks() - before;
  store.thaw();
  // It spun at one whole core (4 s: 400 ticks at 100 Hz) while the tick's
  // time had passed and its call still waited. Half a core is far above an
  // idle loop's, even under a sanitizer.
  CHECK_MESSAGE(used < sysconf(_SC_CLK_TCK) * 2, "CPU ticks used in 4 s: " << used);
  agent->signal(SIGTERM);
  CHECK(agent->wait() == 0);
}

TEST_CASE("fault: a drain with the store frozen stops waiting at --drain-timeout, and counts what was sent unanswered") {
  test::TempDir dir;
  test::TestDb db(dir);
  test::StoreFreeze store(db);
  auto agent = agent_on(store.dsn(), dir, "agent", {"--lease", "30s", "--drain-timeout", "2s"}, "120s");
  const std::string started = dir.file("started");
  submit(db, dir, {"--", "touch " + started + "; sleep 1"});
  test::eventually([&] { return std::filesystem::exists(started); }, "the job to start");
  store.freeze();
  test::eventually([&] { return logged(*agent, "finished"); }, "the job to end with the store frozen");
  agent->signal(SIGTERM);
  // It exits with the store still frozen; its completion, sent and never
  // answered, is reported as such (it said completions=0 and nothing else).
  CHECK(agent->wait() == 0);
  CHECK(logged(*agent, "unrecorded completions=0 releases=0 unanswered=1"));
  store.thaw();
}

TEST_CASE("fault: a drain that gives a run back at its timeout exits 0 when a store answer comes after its supervisor ended") {
  // Found by a tester: the heartbeat held by the frozen store was answered
  // after the shutdown had ended the job supervisor; its reconcile read the
  // closed lifeline as the supervisor's death, and the agent exited 70
  // ("the job supervisor (pid -1) died"), its worker left draining.
  test::TempDir dir;
  test::TestDb db(dir);
  test::StoreFreeze store(db);
  auto agent = agent_on(store.dsn(), dir, "agent", {"--lease", "3s", "--kill-grace", "1s", "--drain-timeout", "2s"}, "60s");
  std::string marks = dir.file("marks");
  auto id = submit(db, dir, {"--", "echo start >> " + marks + "; exec sleep 300"});
  test::eventually([&] { return !test::read_file(marks).empty(); }, "the job to start");
  agent->signal(SIGTERM);
  test::eventually([&] { return logged(*agent, "draining"); }, "the drain to begin");
  store.freeze();
  // The drain times out, the job is killed and its run held to be given
  // back; the shutdown then ends the supervisor while a heartbeat (each
  // second) waits for the store.
  test::eventually([&] { return logged(*agent, "drain_timeout") && logged(*agent, " released "); },
                   "the drain's timeout to end the job");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  store.thaw();
  CHECK_MESSAGE(agent->wait() == 0, agent->err());
  CHECK(logged(*agent, " stopped "));
  CHECK_FALSE(logged(*agent, "supervisor"));
  auto workers = json::parse(run_jobctl(db, dir, {"workers", "--all", "-o", "json"}).out);
  REQUIRE(workers.size() == 1);
  CHECK(workers[0]["state"] == "gone");
  CHECK(get(db, dir, id)["status"] == "pending");  // given back
}

TEST_CASE("fault: every jobctl command gives up on a frozen store with exit 5 and one line") {
  test::TempDir dir;
  test::TestDb db(dir);
  test::StoreFreeze store(db);
  store.freeze();
  // A write waits for SQLite's lock; on PostgreSQL every command waits for
  // an answer. Both give up after JOBCTL_STORE_TIMEOUT.
  test::Process p({JOBCTL_BIN, "--db", store.dsn(), "submit", "--", "true"}, {"JOBCTL_STORE_TIMEOUT=2s"}, dir,
                  "jobctl");
  CHECK(p.wait(std::chrono::seconds(60)) == 5);
  auto err = test::lines(p.err());
  REQUIRE(err.size() >= 1);
  CHECK(err.size() <= 2);  // the error, and its hint
  CHECK(err[0].rfind("jobctl: error: ", 0) == 0);
  store.thaw();
  CHECK(json::parse(run_jobctl(db, dir, {"ls", "-o", "json"}).out).empty());  // nothing was written
}

TEST_CASE("fault: wait and logs -f outlast a cut connection, and wait --timeout holds while the store is frozen") {
  if (test::test_backend() != config::Backend::postgres) return;  // connections that break are PostgreSQL's
  test::TempDir dir;
  test::TestDb db(dir);
  test::StoreFreeze store(db);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});  // not through the proxy
  const std::string go = dir.file("go");
  auto id = submit(db, dir, {"--retries", "0", "--", "echo started; while [ ! -e " + go + " ]; do sleep 0.1; done; echo done"});
  test::Process waiting({JOBCTL_BIN, "--db", store.dsn(), "wait", id}, {}, dir, "wait");
  test::Process following({JOBCTL_BIN, "--db", store.dsn(), "logs", "-f", id}, {}, dir, "follow");
  test::eventually([&] { return following.out() == "started\n"; }, "the job to start");
  // As a failover, or a killed backend, leaves them: both exited 5 while
  // the job went on, and the CI step failed.
  store.cut();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // a look or two on the cut connections
  std::ofstream(go) << "";
  CHECK(waiting.wait() == 0);
  CHECK(following.wait() == 0);
  CHECK_MESSAGE(following.out() == "started\ndone\n", following.err());

  // A wait with --timeout gives up at its time while the store is frozen,
  // not JOBCTL_STORE_TIMEOUT later (exit 5 after 30 s, for --timeout 8s).
  auto long_one = submit(db, dir, {"--", "sleep 600"});
  test::Process timed({JOBCTL_BIN, "--db", store.dsn(), "wait", "--timeout", "3s", long_one},
                      {"JOBCTL_STORE_TIMEOUT=600s"}, dir, "timed");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  store.freeze();
  CHECK(timed.wait(std::chrono::seconds(60)) == 124);
  store.thaw();
}

TEST_CASE("fault: jobctl run acts on Ctrl-C while the store does not answer: the first cancels, the next detaches") {
  test::TempDir dir;
  test::TestDb db(dir);
  test::StoreFreeze store(db);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});  // not through the proxy
  test::Process run({JOBCTL_BIN, "--db", store.dsn(), "run", "--", "echo started; sleep 600"},
                    {"JOBCTL_STORE_TIMEOUT=600s"}, dir, "run");
  test::eventually([&] { return run.out() == "started\n"; }, "the job to start");
  store.freeze();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // a look under way (PostgreSQL)
  // The look waited out the store timeout before the cancel was tried,
  // and the cancel then ignored every further Ctrl-C.
  run.signal(SIGINT);
  test::eventually([&] { return run.err().find("cancelling job") != std::string::npos; }, "the cancel to be tried");
  run.signal(SIGINT);
  CHECK(run.wait(std::chrono::seconds(60)) == 130);
  CHECK_MESSAGE(run.err().find("may still run: its cancel was not answered") != std::string::npos, run.err());
  store.thaw();
  auto id = json::parse(run_jobctl(db, dir, {"ls", "-o", "json"}).out).at(0)["id"].get<std::string>();
  CHECK(get(db, dir, id)["status"] == "running");  // it said so
  CHECK(run_jobctl(db, dir, {"cancel", id}).code == 0);
}

TEST_CASE("fault: wait --timeout of several jobs reads each one's status and prints the JSON after its time") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  auto long_one = submit(db, dir, {"--", "sleep 600"});
  auto quick = submit(db, dir, {"--", "true"});
  REQUIRE(run_jobctl(db, dir, {"wait", quick}).code == 0);
  // The first uses up the time. The wait's deadline stayed on the store's
  // connection: on PostgreSQL the JSON's reads failed at once (exit 5), and
  // the second job was said not to answer.
  auto r = run_jobctl(db, dir, {"wait", "--timeout", "2s", "-o", "json", long_one, quick});
  CHECK(r.code == 124);
  CHECK_MESSAGE(r.err.find("did not answer") == std::string::npos, r.err);
  auto printed = json::parse(r.out);
  REQUIRE(printed.size() == 2);
  CHECK(printed[1]["status"] == "succeeded");
}

TEST_CASE("fault: a claim that comes back after SIGTERM starts nothing, and its runs are given back unspent") {
  test::TempDir dir;
  test::TestDb db(dir);
  test::StoreFreeze store(db);
  // One slot, no scheduler duties, and a long lease (heartbeats 20 s
  // apart): while its one job runs the agent claims nothing.
  auto agent = agent_on(store.dsn(), dir, "agent", {"--lease", "60s", "--no-scheduler", "--concurrency", "1"}, "120s");
  const std::string pid_file = dir.file("pid"), marker = dir.file("started");
  submit(db, dir, {"--retries", "0", "--", "echo $$ > " + pid_file + "; exec sleep 300"});
  test::eventually([&] { return !test::read_file(pid_file).empty(); }, "the first job to start");
  auto id = submit(db, dir, {"--", "touch " + marker});
  store.freeze();
  // The first job ends: its slot is free, and the agent sends its result
  // and then a claim, both held by the frozen store, in the same turn of
  // its loop as it logs the end; a signal is read at the next turn.
  kill(std::stoi(test::read_file(pid_file)), SIGKILL);
  test::eventually([&] { return logged(*agent, "status=dead"); }, "the first job's end to be seen");
  agent->signal(SIGTERM);
  test::eventually([&] { return logged(*agent, "draining"); }, "SIGTERM to be handled with the claim on its way");
  store.thaw();  // the claim commits, and comes back to an agent that is stopping
  CHECK(agent->wait() == 0);
  CHECK(access(marker.c_str(), F_OK) != 0);
  auto job = get(db, dir, id);
  CHECK(job["status"] == "pending");
  auto s = db.open();
  auto run = s->jobs().get_run(job["run"]["id"].get<std::string>());
  REQUIRE(run);
  CHECK(run->status == model::RunStatus::pending);
  CHECK(run->deliveries == 0);
  auto attempts = s->jobs().attempts(run->id);
  REQUIRE(attempts.size() == 1);
  CHECK(attempts[0].outcome == "released");
  CHECK(logged(*agent, "claimed as the agent began to stop"));
}

TEST_CASE("fault: a job that finished during an outage longer than the lease is recorded, not run again") {
  test::TempDir dir;
  test::TestDb db(dir);
  const bool pg = test::test_backend() == config::Backend::postgres;
  // On PostgreSQL each agent has its own path to the store, so the other
  // agent can be given the store back first; SQLite has one lock for all.
  test::StoreFreeze path_a(db);
  std::unique_ptr<test::StoreFreeze> path_b = pg ? std::make_unique<test::StoreFreeze>(db) : nullptr;
  const std::string& dsn_b = pg ? path_b->dsn() : path_a.dsn();
  // One after the other: with a store timeout this short, two agents
  // starting at once on a busy machine can outwait each other's writes.
  auto a = agent_on(path_a.dsn(), dir, "a", {"--lease", "3s"}, "2s");
  test::eventually([&] { return logged(*a, "started"); }, "a to start");
  // b serves another queue: were it to rescue the run, a would run it again.
  auto b = agent_on(dsn_b, dir, "b", {"--lease", "3s", "-q", "other"}, "2s");
  test::eventually([&] { return logged(*b, "started"); }, "b to start");
  std::string marks = dir.file("marks");
  auto id = submit(db, dir, {"--retries", "3", "--", "echo start >> " + marks + "; sleep 2; echo end >> " + marks});
  test::eventually([&] { return test::read_file(marks).find("start") != std::string::npos; }, "the job to start");
  const auto started = std::chrono::steady_clock::now();

  path_a.freeze();
  if (pg) path_b->freeze();
  test::eventually([&] { return test::read_file(marks).find("end") != std::string::npos; },
                   "the job to finish during the outage");
  test::eventually([&] { return logged(*a, "store_unreachable") && logged(*b, "store_unreachable"); },
                   "both agents to lose the store");
  // Past the lease: every lease has expired on the store's clock.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  if (pg) {
    path_b->thaw();
    test::eventually([&] { return logged(*b, "store_back"); }, "b to reach the store again");
  }
  const auto thawed = std::chrono::steady_clock::now();
  path_a.thaw();
  CHECK(run_jobctl(db, dir, {"wait", "--timeout", "60s", id}).code == 0);
  auto runs = json::parse(run_jobctl(db, dir, {"runs", id, "-o", "json"}).out);
  CHECK(runs.size() == 1);
  CHECK(runs[0]["outcome"] == "succeeded");
  // It is recorded as it ended, during the outage, not when the store
  // heard of it: the outage went on for 4 s after the job's end. (It was
  // claimed before the test saw it start, so the store's duration may
  // exceed the test's view of it by that; not by the 4 s.)
  const auto until_thaw = std::chrono::duration_cast<std::chrono::milliseconds>(thawed - started).count();
  CAPTURE(runs.dump());
  CHECK(runs[0]["duration_ms"].get<int64_t>() < until_thaw - 2000);
  CHECK(test::lines(test::read_file(marks)).size() == 2);  // one start, one end
  // On PostgreSQL the completion has a connection of its own: the run can
  // read as recorded before a's loop has heard that it was.
  test::eventually([&] { return logged(*a, "store_back"); }, "a to log that it reached the store again");
}

TEST_CASE("fault: a stall of the store longer than the lease but shorter than 5 s makes no agent rescue a live one") {
  // Found by a tester: a stall under the 5 s an agent took to call it an
  // outage left its calm unbroken, while no agent could renew a lease of
  // 1 s: after it, the agents rescued each other's healthy runs.
  test::TempDir dir;
  test::TestDb db(dir);
  const bool pg = test::test_backend() == config::Backend::postgres;
  test::StoreFreeze path_a(db);
  std::unique_ptr<test::StoreFreeze> path_b = pg ? std::make_unique<test::StoreFreeze>(db) : nullptr;
  const std::string& dsn_b = pg ? path_b->dsn() : path_a.dsn();
  auto a = agent_on(path_a.dsn(), dir, "a", {"--lease", "1s"}, "30s");
  test::eventually([&] { return logged(*a, "started"); }, "a to start");
  std::string marks = dir.file("marks");
  auto id = submit(db, dir, {"--retries", "3", "--", "echo start >> " + marks + "; sleep 6"});
  test::eventually([&] { return test::read_file(marks).find("start") != std::string::npos; }, "the job to start");
  // b may rescue a's runs: it claims from the same queue.
  auto b = agent_on(dsn_b, dir, "b", {"--lease", "1s"}, "30s");
  test::eventually([&] { return logged(*b, "started"); }, "b to start");
  std::this_thread::sleep_for(std::chrono::seconds(2));  // b has had the store calmly for a lease

  path_a.freeze();
  if (pg) path_b->freeze();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  path_a.thaw();
  if (pg) path_b->thaw();
  CHECK(run_jobctl(db, dir, {"wait", "--timeout", "60s", id}).code == 0);
  auto runs = json::parse(run_jobctl(db, dir, {"runs", id, "-o", "json"}).out);
  CAPTURE(runs.dump());
  CHECK(runs.size() == 1);
  CHECK(test::lines(test::read_file(marks)).size() == 1);
  CHECK_FALSE(logged(*a, "lease_lost"));
}

TEST_CASE("fault: a step of the wall clock larger than the lease restarts no running job") {
  test::TempDir dir;
  test::TestDb db(dir);
  // libfaketime steps the agents' wall clock (SQLite's store clock is the
  // host's) and leaves their steady clock alone, as an NTP step does.
  std::string offset = dir.file("faketime");
  std::ofstream(offset) << "+0\n";
  std::vector<std::string> env{"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                               "FAKETIME_TIMESTAMP_FILE=" + offset, "FAKETIME_NO_CACHE=1",
                               "FAKETIME_DONT_FAKE_MONOTONIC=1", "XDG_RUNTIME_DIR=" + dir.path(),
                               "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:verify_asan_link_order=0"};
  auto agent = [&](const std::string& name, const std::string& lease) {
    return std::make_unique<test::Process>(
        std::vector<std::string>{JOBAGENT_BIN, "--db", db.dsn(), "--name", name, "--poll-interval", "100ms", "--lease",
                                 lease, "-c", "3"},
        env, dir, name);
  };
  auto a = agent("a", "6s");
  std::string marks = dir.file("marks");
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(submit(db, dir, {"--", "echo start >> " + marks + "; sleep 15; echo end >> " + marks}));
  test::eventually([&] { return test::lines(test::read_file(marks)).size() == 3; }, "the three jobs to start on a");
  // Idle, all b could do is rescue a's runs; it heartbeats three times as
  // often as a, so it most likely meets a's leases expired by the step
  // before a renews them. It has had the store calmly for longer than
  // a's lease when the clock steps.
  auto b = agent("b", "2s");
  test::eventually([&] { return logged(*b, "started"); }, "b to start");
  std::this_thread::sleep_for(std::chrono::seconds(7));

  std::ofstream(offset) << "+30\n";
  for (const auto& id : ids) CHECK(run_jobctl(db, dir, {"wait", "--timeout", "60s", id}).code == 0);
  for (const auto& id : ids) CHECK(json::parse(run_jobctl(db, dir, {"runs", id, "-o", "json"}).out).size() == 1);
  CHECK(test::lines(test::read_file(marks)).size() == 6);  // three starts, three ends: none ran twice
  if (test::test_backend() == config::Backend::sqlite) {
    CHECK((logged(*a, "clock_step") || logged(*b, "clock_step")));
    CHECK(run_jobctl(db, dir, {"doctor"}).out.find("clock step") != std::string::npos);
  }
}
