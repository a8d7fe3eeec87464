// Failure handling end to end: retries with backoff, permanent failures,
// the dead-letter queue from the CLI, poison runs and at-most-once.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/model/retry.hpp"
#include "common/util/time.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using nlohmann::json;
using test::get;
using test::run_jobctl;
using test::submit;

namespace {

// A test that failed may leave a job's sleeps behind: end those (and only
// processes that are still a sleep), not what reuses their pids later.
struct SleepsReaper {
  std::vector<int> pids;
  // The pids a job writes to these files in `dir`, once it has, to end.
  std::vector<int> read(const test::TempDir& dir, std::initializer_list<const char*> names) {
    for (const char* name : names) {
      std::string file = dir.file(name);
      test::eventually([&] { return !test::trim(test::read_file(file)).empty(); }, std::string(name) + " to be written");
      pids.push_back(std::stoi(test::trim(test::read_file(file))));
    }
    return pids;
  }
  ~SleepsReaper() {
    for (int pid : pids)
      if (!test::process_ended(pid) &&
          test::read_file("/proc/" + std::to_string(pid) + "/cmdline").rfind("sleep", 0) == 0)
        kill(pid, SIGKILL);
  }
};

}  // namespace

TEST_CASE("failure: a job that fails twice then succeeds is retried at spacings within the policy's bounds") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, test::kFastPoll);
  std::string counter = dir.file("count"), sched = dir.file("scheduled");
  // Attempts 1 and 2 fail, attempt 3 succeeds; each records when it was
  // scheduled to run (JOB_SCHEDULED_AT = the run's available_at).
  auto id = submit(db, dir, {"--retries", "3", "--backoff", "exponential-jitter", "--retry-delay", "400ms", "--",
                             "echo $JOB_SCHEDULED_AT >> " + sched + "; echo x >> " + counter +
                                 "; [ $(wc -l < " + counter + ") -ge 3 ]"});
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 0);
  auto attempts = json::parse(run_jobctl(db, dir, {"runs", id, "-o", "json"}).out);
  REQUIRE(attempts.size() == 3);
  CHECK(attempts[0]["outcome"] == "failed");
  CHECK(attempts[1]["outcome"] == "failed");
  CHECK(attempts[2]["outcome"] == "succeeded");
  CHECK(get(db, dir, id)["run"]["failures"] == 2);

  model::RetryPolicy p;
  p.delay_us = 400'000;
  auto scheduled = test::lines(test::read_file(sched));
  REQUIRE(scheduled.size() == 3);
  int64_t now = util::now_micros();
  for (int n = 1; n <= 2; ++n) {
    // Retry n was scheduled at (attempt n's end + delay) with delay within
    // the bounds; the store's timestamps have millisecond resolution here.
    int64_t ended = util::parse_time_arg(attempts[n - 1]["finished_at"], "finished_at", now);
    int64_t due = util::parse_time_arg(scheduled[static_cast<size_t>(n)], "scheduled", now);
    int64_t started = util::parse_time_arg(attempts[n]["started_at"], "started_at", now);
    auto [lo, hi] = model::backoff_bounds(p, n);
    CAPTURE(n);
    CHECK(due - ended >= lo - 2000);
    CHECK(due - ended <= hi + 2000);
    CHECK(started >= due - 1000);  // never before it was due
  }
}

TEST_CASE("failure: a permanent exit code goes dead at once, without a retry") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, test::kFastPoll);
  auto id = submit(db, dir, {"--retries", "5", "--no-retry-exit-codes", "2,64-78", "--", "exit 65"});
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 1);
  auto job = get(db, dir, id);
  CHECK(job["status"] == "dead");
  CHECK(job["run"]["error"] == "exited with code 65; permanent exit code 65");
  CHECK(job["run"]["attempts"] == 1);
}

TEST_CASE("failure: exhausted retries end dead with every attempt kept, and the DLQ can replay it") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, test::kFastPoll);
  auto id = submit(db, dir, {"--name", "flaky", "--retries", "2", "--backoff", "fixed", "--retry-delay", "50ms",
                             "--payload", R"({"order": 7})", "--", "echo attempt $JOB_ATTEMPT; exit 1"});
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 1);
  auto job = get(db, dir, id);
  CHECK(job["status"] == "dead");
  CHECK(job["run"]["error"] == "exited with code 1; retries exhausted after 3 failed attempts");
  std::string dead_run = job["run"]["id"];

  auto ls = json::parse(run_jobctl(db, dir, {"dlq", "ls", "-o", "json"}).out);
  REQUIRE(ls.size() == 1);
  CHECK(ls[0]["id"] == id);
  auto show = run_jobctl(db, dir, {"dlq", "show", dead_run, "-o", "json"});
  REQUIRE(show.code == 0);
  auto shown = json::parse(show.out);
  CHECK(shown["payload"]["order"] == 7);
  REQUIRE(shown["attempts"].size() == 3);
  CHECK(shown["attempts"][2]["stdout"] == "attempt 3\n");
  auto table = run_jobctl(db, dir, {"dlq", "show", id, "-o", "table"});
  CHECK(table.out.find("retries exhausted") != std::string::npos);
  CHECK(table.out.find("attempt 2") != std::string::npos);

  // The table shows the last lines of the output, each on its own line and
  // kept to it: the tail flattened to one line showed the first 117 of a
  // thousand lines, and an escape sequence reached the terminal (a tester).
  auto chatty = submit(db, dir, {"--retries", "0", "--", "for i in $(seq 1000); do echo progress line $i; done; "
                                                         "echo final stdout line; printf '\\033[31mred\\n' >&2; exit 1"});
  CHECK(run_jobctl(db, dir, {"wait", chatty}).code == 1);
  auto last = run_jobctl(db, dir, {"dlq", "show", chatty, "-o", "table"}).out;
  CAPTURE(last);
  CHECK(last.find("--- stdout (last 20 lines)\nprogress line 982\n") != std::string::npos);
  CHECK(last.find("progress line 1000\nfinal stdout line\n") != std::string::npos);
  CHECK(last.find("--- stderr (last 1 line)\n\\x1B[31mred\n") != std::string::npos);
  CHECK(last.find('\x1b') == std::string::npos);
  // Moved to another queue since, it is listed in the queue it died in,
  // which --queue matches (the table showed the job's new one, a tester).
  REQUIRE(run_jobctl(db, dir, {"update", chatty, "--queue", "fast"}).code == 0);
  auto in_default = json::parse(run_jobctl(db, dir, {"dlq", "ls", "--queue", "default", "-o", "json"}).out);
  auto moved = std::find_if(in_default.begin(), in_default.end(), [&](const json& v) { return v["id"] == chatty; });
  REQUIRE(moved != in_default.end());
  CHECK((*moved)["run"]["queue"] == "default");
  CHECK((*moved)["queue"] == "fast");  // the job's
  bool listed = false;
  for (const auto& line : test::lines(run_jobctl(db, dir, {"dlq", "ls", "-o", "table"}).out))
    if (line.rfind(chatty, 0) == 0) listed = line.find(" default ") != std::string::npos;
  CHECK(listed);

  // Named twice, and by its job too, the dead run is replayed once.
  auto replay = run_jobctl(db, dir, {"dlq", "replay", dead_run, dead_run, id});
  REQUIRE_MESSAGE(replay.code == 0, replay.err);
  CHECK(test::lines(replay.out).size() == 1);
  std::string fresh = test::trim(replay.out);
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 1);  // it fails again, with a fresh budget of 3 attempts
  auto again = get(db, dir, id);
  CHECK(again["run"]["id"] == fresh);
  CHECK(again["run"]["replay_of"] == dead_run);
  CHECK(again["run"]["attempts"] == 3);
  CHECK(run_jobctl(db, dir, {"dlq", "replay", "not-a-ulid"}).code == 2);
  CHECK(run_jobctl(db, dir, {"dlq", "replay"}).code == 2);
}

TEST_CASE("failure: dlq dismiss takes a dead DAG node out of the queue, and check --max-dlq 0 passes again") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, test::kFastPoll);
  json broken{{"name", "broken"}, {"jobs", {{"a", {{"command", "exit 3"}, {"retries", 0}}}}}};
  auto dag = run_jobctl(db, dir, {"dag", "submit", "-", "--wait"}, broken.dump());
  REQUIRE(dag.code == 1);
  const std::string dag_run = test::trim(dag.out);
  auto dead = json::parse(run_jobctl(db, dir, {"dlq", "ls", "-o", "json"}).out);
  REQUIRE(dead.size() == 1);
  const std::string node_job = dead[0]["id"], node_run = dead[0]["run"]["id"];
  auto ok = submit(db, dir, {"--", "true"});
  CHECK(run_jobctl(db, dir, {"wait", ok}).code == 0);

  // A node is not replayed on its own: before dismiss, nothing but dag retry took it out.
  CHECK(run_jobctl(db, dir, {"check", "--max-dlq", "0"}).code == 1);
  CHECK(run_jobctl(db, dir, {"dlq", "replay", node_run}).code == 4);
  // Not dead, or no run named: exit 4 and 2, and nothing is dismissed.
  auto alive = run_jobctl(db, dir, {"dlq", "dismiss", node_run, ok});
  CHECK(alive.code == 4);
  CHECK(alive.err.find("not in the dead-letter queue (its run is succeeded)") != std::string::npos);
  auto none = run_jobctl(db, dir, {"dlq", "dismiss"});
  CHECK(none.code == 2);
  CHECK(none.err.find("name the runs to dismiss, or pass --all") != std::string::npos);
  CHECK(run_jobctl(db, dir, {"dlq", "dismiss", "--all", node_run}).code == 2);
  CHECK(run_jobctl(db, dir, {"check", "--max-dlq", "0"}).code == 1);

  // By its job's id: the run id on standard output, the count on standard error.
  auto dismissed = run_jobctl(db, dir, {"dlq", "dismiss", node_job});
  REQUIRE_MESSAGE(dismissed.code == 0, dismissed.err);
  CHECK(dismissed.out == node_run + "\n");
  CHECK(dismissed.err == "dismissed 1 dead run\n");
  CHECK(run_jobctl(db, dir, {"check", "--max-dlq", "0"}).code == 0);
  CHECK(json::parse(run_jobctl(db, dir, {"dlq", "ls", "-o", "json"}).out).empty());
  auto node = get(db, dir, node_job);
  CHECK(node["status"] == "dead");
  CHECK(node["run"]["id"] == node_run);
  CHECK(node["run"]["dismissed_at"].is_string());
  CHECK(run_jobctl(db, dir, {"dlq", "show", node_run}).out.find("dismissed") != std::string::npos);
  auto history = json::parse(run_jobctl(db, dir, {"history", node_job, "-o", "json"}).out);
  CHECK(std::any_of(history.begin(), history.end(), [](const json& e) { return e["action"] == "dismiss"; }));
  CHECK(json::parse(run_jobctl(db, dir, {"dag", "status", dag_run, "-o", "json"}).out)["status"] == "failed");
  // Again: nothing left to dismiss, and no error.
  auto again = run_jobctl(db, dir, {"dlq", "dismiss", node_run, "-o", "json"});
  CHECK(again.code == 0);
  CHECK(json::parse(again.out) == json{{"dismissed", 0}, {"runs", json::array()}});
  // dag retry still runs the dismissed node again.
  CHECK(run_jobctl(db, dir, {"dag", "retry", dag_run}).code == 0);
  CHECK(run_jobctl(db, dir, {"dag", "wait", dag_run}).code == 1);
  CHECK(run_jobctl(db, dir, {"check", "--max-dlq", "0"}).code == 1);
  auto all = run_jobctl(db, dir, {"dlq", "dismiss", "--all"});
  CHECK(all.code == 0);
  CHECK(all.out == "dismissed 1 dead run\n");
  CHECK(run_jobctl(db, dir, {"check", "--max-dlq", "0"}).code == 0);
}

TEST_CASE("failure: bulk replay, purge and manual retry from the CLI") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, test::kFastPoll);
  std::vector<std::string> ids;
  for (const char* q : {"a", "a", "b"}) {
    auto id = submit(db, dir, {"--queue", q, "--retries", "0", "--", "exit 1"});
    ids.push_back(id);
  }
  auto agent_ab = test::start_agent(db, dir, {"--queues", "a,b", "--poll-interval", "100ms"}, "ab");
  for (const auto& id : ids) CHECK(run_jobctl(db, dir, {"wait", id}).code == 1);
  auto bulk = run_jobctl(db, dir, {"dlq", "replay", "--all", "--queue", "a"});
  CHECK(bulk.code == 0);
  CHECK(bulk.out == "replayed 2 dead runs\n");
  CHECK(run_jobctl(db, dir, {"dlq", "replay", "--queue", "a"}).code == 2);  // a filter needs --all
  for (const auto& id : ids) CHECK(run_jobctl(db, dir, {"wait", id}).code == 1);

  auto purge = run_jobctl(db, dir, {"dlq", "purge", "--older-than", "1h"});
  CHECK(purge.out == "purged 0 dead runs\n");
  CHECK(run_jobctl(db, dir, {"dlq", "purge", "--older-than", "1ms"}).out == "purged 3 dead runs\n");
  CHECK(json::parse(run_jobctl(db, dir, {"dlq", "ls", "-o", "json"}).out).empty());

  auto ok = submit(db, dir, {"--", "true"});
  CHECK(run_jobctl(db, dir, {"wait", ok}).code == 0);
  auto refused = run_jobctl(db, dir, {"retry", ok});
  CHECK(refused.code == 4);
  CHECK(refused.err.find("succeeded") != std::string::npos);
}

TEST_CASE("failure: a job that kills its own agent every time goes dead as poison") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto id = submit(db, dir, {"--max-deliveries", "2", "--", "kill -9 $PPID; sleep 5"});
  std::vector<std::unique_ptr<test::Process>> agents;
  for (int i = 0; i < 6 && get(db, dir, id)["status"] != "dead"; ++i) {
    agents.push_back(test::start_agent(db, dir, {"--lease", "1s", "--poll-interval", "100ms"},
                                       "agent" + std::to_string(i)));
    auto& a = *agents.back();
    test::eventually([&] { return !a.running() || get(db, dir, id)["status"] == "dead"; },
                     "the agent to be killed or the run to die");
  }
  auto job = get(db, dir, id);
  CHECK(job["status"] == "dead");
  CHECK(job["run"]["error"] == "poison: delivered 2 times without a result");
  // Following it (as jobctl run does) says why it is dead: its last
  // attempt's error was that the agent died.
  auto followed = run_jobctl(db, dir, {"logs", "-f", id});
  CHECK(followed.code == 1);
  CHECK_MESSAGE(followed.err.find("dead: poison: delivered 2 times without a result") != std::string::npos, followed.err);
  auto attempts = json::parse(run_jobctl(db, dir, {"runs", id, "-o", "json"}).out);
  INFO(attempts.dump());
  REQUIRE(attempts.size() == 2);
  for (const auto& a : attempts) CHECK(a["outcome"] == "lost");
}

TEST_CASE("failure: an at-most-once job is never run twice when its agent is killed") {
  test::TempDir dir;
  test::TestDb db(dir);
  std::string ledger = dir.file("ledger");
  auto first = test::start_agent(db, dir, {"--lease", "1s", "--poll-interval", "100ms"}, "first");
  auto id = submit(db, dir, {"--delivery", "at-most-once", "--", "echo ran >> " + ledger + "; sleep 3"});
  test::eventually([&] { return !test::read_file(ledger).empty(); }, "the job to start");
  first->signal(SIGKILL);
  first->wait();
  auto second = test::start_agent(db, dir, {"--lease", "1s", "--poll-interval", "100ms"}, "second");
  test::eventually([&] { return get(db, dir, id)["status"] == "dead"; }, "the run to be declared dead");
  CHECK(std::string(get(db, dir, id)["run"]["error"]).find("at-most-once") != std::string::npos);
  CHECK(test::lines(test::read_file(ledger)).size() == 1);
}

TEST_CASE("failure: kill -9 of the agent and its supervisor: the restart ends what the job started before it runs it again") {
  test::TempDir dir;
  test::TestDb db(dir);
  const std::vector<std::string> flags{"--lease", "10m", "--kill-grace", "1s", "--poll-interval", "100ms"};
  auto first = test::start_agent(db, dir, flags);
  // Attempt 1 leaves a background child and a pipeline in the job's group;
  // attempt 2 says whether either still ran when it began (a zombie init
  // has not reaped yet is dead).
  auto id = submit(db, dir, {"--", fmt::format("if [ $JOB_ATTEMPT -ge 2 ]; then "
                                               "for f in child pipe; do grep -qs ') [^Z]' /proc/$(cat {0}/$f.pid)/stat "
                                               "&& echo $f; done "
                                               "> {0}/beside; exit 0; fi; "
                                               "sleep 300 & echo $! > {0}/child.pid; "
                                               "sh -c 'echo $$ > {0}/pipe.pid; exec sleep 300' | cat & "
                                               "echo $$ > {0}/job.pid; wait",
                                               dir.path())});
  SleepsReaper reaper;
  const std::vector<int> pids = reaper.read(dir, {"job.pid", "child.pid", "pipe.pid"});
  const std::string children = dir.file("children");
  REQUIRE(std::system(("pgrep -P " + std::to_string(first->pid()) + " > " + children).c_str()) == 0);
  const auto supervisors = test::lines(test::read_file(children));
  REQUIRE(supervisors.size() == 1);
  const pid_t supervisor = std::stoi(supervisors[0]);
  // The supervisor has written the job's group to the lock file.
  test::eventually([&] {
    for (const auto& lock : std::filesystem::directory_iterator(dir.file("jobagent")))
      if (test::read_file(lock.path()).find(" groups " + std::to_string(pids[0])) != std::string::npos) return true;
    return false;
  }, "the job's group to be recorded");
  // Stopped first: woken by the agent's death, it would end the jobs
  // before its own SIGKILL came.
  kill(supervisor, SIGSTOP);
  first->signal(SIGKILL);
  kill(supervisor, SIGKILL);
  first->wait();
  // The job's own process dies with its supervisor; what it started does not.
  test::eventually([&] { return test::process_ended(pids[0]); }, "the job's process to die with its supervisor");
  REQUIRE_FALSE(test::process_ended(pids[1]));
  REQUIRE_FALSE(test::process_ended(pids[2]));

  auto second = test::start_agent(db, dir, flags);
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 0);
  CHECK(test::process_ended(pids[1]));
  CHECK(test::process_ended(pids[2]));
  CHECK(test::read_file(dir.file("beside")).empty());
  auto attempts = json::parse(run_jobctl(db, dir, {"runs", id, "-o", "json"}).out);
  REQUIRE(attempts.size() == 2);
  CHECK(attempts[0]["outcome"] == "lost");
  CHECK(std::string(attempts[0]["error"]).find("previous incarnation of agent agent") != std::string::npos);
}

TEST_CASE("failure: kill -9 of the agent ends every process of its jobs, and its restart runs them again at once") {
  test::TempDir dir;
  test::TestDb db(dir);
  // A lease far longer than this test waits: only the restarted agent's
  // clean-up can explain attempt 2.
  const std::vector<std::string> flags{"--lease", "10m", "--kill-grace", "1s", "--poll-interval", "100ms"};
  auto first = test::start_agent(db, dir, flags);
  // Attempt 1 leaves one process of each kind behind: a background child,
  // a pipeline, and a grandchild in a session of its own.
  auto id = submit(db, dir, {"--", fmt::format("[ $JOB_ATTEMPT -ge 2 ] && exit 0; "
                                               "setsid sh -c 'echo $$ > {0}/setsid.pid; exec sleep 300' & "
                                               "sh -c 'echo $$ > {0}/pipe.pid; exec sleep 300' | cat & "
                                               "echo $! > {0}/cat.pid; "
                                               "sleep 300 & echo $! > {0}/child.pid; "
                                               "echo $$ > {0}/job.pid; wait",
                                               dir.path())});
  SleepsReaper reaper;
  const std::vector<int> pids = reaper.read(dir, {"job.pid", "child.pid", "cat.pid", "pipe.pid", "setsid.pid"});
  for (int pid : pids) REQUIRE_FALSE(test::process_ended(pid));

  first->signal(SIGKILL);
  first->wait();
  test::eventually([&] { return std::all_of(pids.begin(), pids.end(), test::process_ended); },
                   "every process of the job to end with its agent");

  auto second = test::start_agent(db, dir, flags);
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 0);
  auto attempts = json::parse(run_jobctl(db, dir, {"runs", id, "-o", "json"}).out);
  REQUIRE(attempts.size() == 2);
  CHECK(attempts[0]["outcome"] == "lost");
  CHECK(std::string(attempts[0]["error"]).find("previous incarnation of agent agent") != std::string::npos);
  CHECK(attempts[1]["outcome"] == "succeeded");
  CHECK(get(db, dir, id)["run"]["deliveries"] == 2);
  auto workers = json::parse(run_jobctl(db, dir, {"workers", "--all", "-o", "json"}).out);
  REQUIRE(workers.size() == 2);
  CHECK(workers[1]["state"] == "gone");  // the first incarnation, listed last
}
