// DAGs end to end: real agents run a graph; the CLI refuses bad ones.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/support/fixtures.hpp"

using namespace jobctl;
using nlohmann::json;
using test::run_jobctl;

namespace {

std::string dag_status(const test::TestDb& db, const test::TempDir& dir, const std::string& id) {
  auto r = run_jobctl(db, dir, {"dag", "status", id, "-o", "json"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  return json::parse(r.out)["status"].get<std::string>();
}

}  // namespace

TEST_CASE("dag: a 1,000-node layered DAG on two agents runs every node once, each after its parents") {
  test::TempDir dir;
  test::TestDb db(dir);
  const int layers = 10, width = 100;
  std::string ledger = dir.file("ledger");
  json doc{{"name", "layers"}, {"jobs", json::object()}};
  auto name = [](int l, int i) { return fmt::format("n{}-{}", l, i); };
  for (int l = 0; l < layers; ++l)
    for (int i = 0; i < width; ++i) {
      json node{{"command", "echo $JOB_DAG_NODE s $(date +%s%N) >> " + ledger + "; echo $JOB_DAG_NODE e $(date +%s%N) >> " + ledger}};
      if (l > 0) node["depends_on"] = {name(l - 1, i), name(l - 1, (i + 1) % width)};
      doc["jobs"][name(l, i)] = node;
    }
  auto submitted = run_jobctl(db, dir, {"dag", "submit", "-"}, doc.dump());
  REQUIRE_MESSAGE(submitted.code == 0, submitted.err);
  std::string id = test::trim(submitted.out);
  auto a = test::start_agent(db, dir, {"--concurrency", "8", "--poll-interval", "100ms"}, "a");
  auto b = test::start_agent(db, dir, {"--concurrency", "8", "--poll-interval", "100ms"}, "b");
  test::eventually([&] { return dag_status(db, dir, id) == "succeeded"; }, "the DAG run to succeed",
                   std::chrono::seconds(600));
  std::map<std::string, std::pair<int64_t, int64_t>> span;
  std::map<std::string, int> starts;
  for (const auto& line : test::lines(test::read_file(ledger))) {
    std::istringstream in(line);
    std::string node, what;
    int64_t ns = 0;
    in >> node >> what >> ns;
    if (what == "s") {
      span[node].first = ns;
      ++starts[node];
    } else {
      span[node].second = ns;
    }
  }
  REQUIRE(span.size() == static_cast<size_t>(layers * width));
  for (const auto& [node, n] : starts) CHECK_MESSAGE(n == 1, node << " started " << n << " times");
  for (int l = 1; l < layers; ++l)
    for (int i = 0; i < width; ++i)
      for (const auto& parent : {name(l - 1, i), name(l - 1, (i + 1) % width)})
        CHECK_MESSAGE(span[name(l, i)].first >= span[parent].second, name(l, i) << " started before " << parent);
  auto store = db.open();
  CHECK(store->connection().query("SELECT count(*) FROM attempts").at(0).i64(0) == layers * width);
  MESSAGE("agents that ran nodes: "
          << store->connection().query("SELECT count(DISTINCT worker_id) FROM attempts").at(0).i64(0));
}

TEST_CASE("dag: a cycle, an unknown dependency, nodes sharing a result variable or too long a name is refused with exit 2 and writes nothing") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto cycle = run_jobctl(db, dir, {"dag", "submit", "-"},
                          R"({"name": "c", "jobs": {"a": {"command": "true", "depends_on": ["b"]},
                              "b": {"command": "true", "depends_on": ["a"]}, "ok": {"command": "true"}}})");
  CHECK(cycle.code == 2);
  CHECK(cycle.err.find("the DAG has a cycle: a -> b -> a") != std::string::npos);
  auto unknown = run_jobctl(db, dir, {"dag", "submit", "-"},
                            R"({"name": "u", "jobs": {"a": {"command": "true", "depends_on": ["ghost"]}}})");
  CHECK(unknown.code == 2);
  CHECK(unknown.err.find("'ghost', which is not a node of the DAG") != std::string::npos);
  // A child of both would see one parent's result.
  auto same_variable = run_jobctl(db, dir, {"dag", "submit", "-"},
                                  R"({"name": "v", "jobs": {"a": {"command": "true"}, "A": {"command": "true"},
                                      "c": {"command": "true", "depends_on": ["a", "A"]}}})");
  CHECK(same_variable.code == 2);
  CHECK(same_variable.err.find("nodes 'A' and 'a' would both pass their result in JOB_DAG_RESULT_A") !=
        std::string::npos);
  // Its nodes' jobs would be named past a job's longest name.
  auto long_name = run_jobctl(db, dir, {"dag", "submit", "-"},
                              R"({"name": ")" + std::string(100000, 'x') + R"(", "jobs": {"a": {"command": "true"}}})");
  CHECK(long_name.code == 2);
  CHECK(long_name.err.find("the DAG's name is 100000 bytes, more than 959") != std::string::npos);
  auto store = db.open();
  for (const char* table : {"dags", "dag_runs", "jobs", "runs"})
    CHECK_MESSAGE(store->connection().query(fmt::format("SELECT count(*) FROM {}", table)).at(0).i64(0) == 0, table);
  CHECK(run_jobctl(db, dir, {"dag", "status", "01m839z2zw3txsmscrj9h9fvm3"}).code == 3);
}

TEST_CASE("dag: dag status shows a node waiting for its retry as pending, with no running duration") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto submitted = run_jobctl(db, dir, {"dag", "submit", "-"},
                              R"({"name": "r", "jobs": {"a": {"command": "exit 3", "retries": 2, "retry_delay": "1h",
                                  "max_retry_delay": "2h"}, "b": {"command": "true", "depends_on": ["a"]}}})");
  REQUIRE_MESSAGE(submitted.code == 0, submitted.err);
  std::string id = test::trim(submitted.out);
  auto a = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  test::eventually(
      [&] {
        auto v = json::parse(run_jobctl(db, dir, {"dag", "status", id, "-o", "json"}).out);
        return v["nodes"][0]["run"]["failures"] == 1;
      },
      "node a's first failure");
  auto table = run_jobctl(db, dir, {"dag", "status", id, "-o", "table"}).out;
  auto row = table.substr(table.find("\na ") + 1);
  row = row.substr(0, row.find('\n'));
  CHECK_MESSAGE(row.find("pending (retry after 1 failure)") != std::string::npos, row);
  CHECK_MESSAGE(row.find("running") == std::string::npos, row);
}

TEST_CASE("dag: cancel mid-run stops the running node and cancels the rest, and retry keeps what succeeded") {
  test::TempDir dir;
  test::TestDb db(dir);
  std::string marker = dir.file("second-try");
  // b sleeps the first time; after the cancel, retry finds the marker and b ends at once.
  std::string b_cmd = "if [ -e " + marker + " ]; then echo again; else sleep 60; fi";
  json doc{{"name", "c"},
           {"jobs",
            {{"a", {{"command", "echo a-result"}}},
             {"b", {{"command", b_cmd}, {"depends_on", {"a"}}}},
             {"c", {{"command", "echo got=$JOB_DAG_RESULT_B"}, {"depends_on", {"b"}}}}}}};
  auto submitted = run_jobctl(db, dir, {"dag", "submit", "-"}, doc.dump());
  REQUIRE(submitted.code == 0);
  std::string id = test::trim(submitted.out);
  auto a = test::start_agent(db, dir, {"--poll-interval", "100ms"}, "a");
  test::eventually(
      [&] {
        auto s = json::parse(run_jobctl(db, dir, {"dag", "status", id, "-o", "json"}).out);
        return s["nodes"][1]["run"]["status"] == "running";
      },
      "node b to run");
  auto cancelled = run_jobctl(db, dir, {"dag", "cancel", id});
  CHECK(cancelled.code == 0);
  test::eventually([&] { return dag_status(db, dir, id) == "cancelled"; }, "the DAG run to end cancelled");
  auto s = json::parse(run_jobctl(db, dir, {"dag", "status", id, "-o", "json"}).out);
  CHECK(s["nodes"][0]["run"]["status"] == "succeeded");
  CHECK(s["nodes"][1]["run"]["status"] == "cancelled");
  CHECK(s["nodes"][2]["run"]["status"] == "cancelled");
  CHECK(run_jobctl(db, dir, {"dag", "cancel", id}).code == 4);
  // Shell completion offers the DAG run's id.
  auto offered = test::lines(run_jobctl(db, dir, {"__complete", "--", "dag", "status", ""}).out);
  REQUIRE(offered.size() == 2);  // how to complete, then one candidate a line: id, tab, description
  CHECK(offered[1].substr(0, offered[1].find('\t')) == id);

  REQUIRE(run_jobctl(db, dir, {"submit", "--", "touch " + marker}).code == 0);
  test::eventually([&] { return std::ifstream(marker).good(); }, "the marker");
  REQUIRE(run_jobctl(db, dir, {"dag", "retry", id}).code == 0);
  test::eventually([&] { return dag_status(db, dir, id) == "succeeded"; }, "the retried DAG run to succeed");
  auto after = json::parse(run_jobctl(db, dir, {"dag", "status", id, "-o", "json"}).out);
  CHECK(after["nodes"][0]["run"]["attempts"] == 1);  // a was not run again
  // Nor is a finished run paused or resumed: pause answered "paused", exit
  // 0, and the run stayed succeeded.
  for (const std::string verb : {"pause", "resume"}) {
    CAPTURE(verb);
    auto r = run_jobctl(db, dir, {"dag", verb, id, "-o", "json"});
    CHECK(r.code == 4);
    CHECK(r.err.find("DAG run " + id + " has finished; there is nothing to " + verb) != std::string::npos);
    CHECK(r.out.empty());
  }
  CHECK(dag_status(db, dir, id) == "succeeded");
  auto c_job = after["nodes"][2]["job_id"].get<std::string>();
  CHECK(test::trim(run_jobctl(db, dir, {"logs", c_job}).out) == "got=again");
  auto dot = run_jobctl(db, dir, {"dag", "graph", id});
  CHECK(dot.code == 0);
  CHECK(dot.out.find("\"a\" -> \"b\";") != std::string::npos);
}

TEST_CASE("dag: the id dag submit --cron prints is taken by schedule trigger, backfill and runs") {
  test::TempDir dir;
  test::TestDb db(dir);
  json doc{{"name", "nightly"}, {"jobs", {{"a", {{"command", "true"}}}, {"b", {{"command", "true"}, {"depends_on", {"a"}}}}}}};
  auto submitted = run_jobctl(db, dir, {"dag", "submit", "-", "--cron", "0 3 * * *"}, doc.dump());
  REQUIRE_MESSAGE(submitted.code == 0, submitted.err);
  std::string dag_id = test::trim(submitted.out);

  auto triggered = run_jobctl(db, dir, {"schedule", "trigger", dag_id});
  REQUIRE_MESSAGE(triggered.code == 0, triggered.err);
  auto dag_run = test::trim(triggered.out);
  CHECK(run_jobctl(db, dir, {"dag", "status", dag_run}).code == 0);
  // wait takes it as dag wait does: its newest DAG run (no agent runs it
  // here). Taken as its schedule's job, which never runs, it waited for ever.
  auto waited = run_jobctl(db, dir, {"wait", "--timeout", "1s", "-o", "json", dag_id});
  CHECK(waited.code == 124);
  CHECK_MESSAGE(waited.out.find(dag_run) != std::string::npos, waited.out);

  auto backfilled = run_jobctl(db, dir, {"schedule", "backfill", dag_id, "--from", "2026-01-01 00:00", "--to",
                                         "2026-01-02 23:59", "-o", "json"});
  REQUIRE_MESSAGE(backfilled.code == 0, backfilled.err);
  CHECK(json::parse(backfilled.out)["created"] == 2);

  auto runs = run_jobctl(db, dir, {"schedule", "runs", dag_id, "-o", "json"});
  REQUIRE_MESSAGE(runs.code == 0, runs.err);
  auto listed = json::parse(runs.out);
  REQUIRE(listed.size() == 3);  // the trigger and two nights
  std::set<std::string> seen;
  for (const auto& r : listed) {
    CHECK(r["dag_id"] == dag_id);
    seen.insert(r["occurrence"].is_null() ? r["dag_run_id"].get<std::string>() : r["occurrence"].get<std::string>());
  }
  CHECK(seen == std::set<std::string>{dag_run, "2026-01-01T03:00:00.000Z", "2026-01-02T03:00:00.000Z"});
  // The commands that take a job take it too, as the schedule's job (they
  // said "no job or run with id", a tester).
  auto got = run_jobctl(db, dir, {"get", dag_id, "-o", "json"});
  REQUIRE_MESSAGE(got.code == 0, got.err);
  const std::string schedule_job = json::parse(got.out)["id"];
  CHECK(schedule_job != dag_id);
  CHECK(run_jobctl(db, dir, {"pause", dag_id}).code == 0);
  CHECK(json::parse(run_jobctl(db, dir, {"get", schedule_job, "-o", "json"}).out)["paused"] == true);
  CHECK(run_jobctl(db, dir, {"history", dag_id}).code == 0);
  CHECK(run_jobctl(db, dir, {"delete", dag_id}).code == 0);
  CHECK_FALSE(json::parse(run_jobctl(db, dir, {"get", schedule_job, "-o", "json"}).out)["deleted_at"].is_null());
}

TEST_CASE("dag: dag wait and dag submit --wait exit 0, 1 or 124 by how the run ends, and wait takes DAG runs too") {
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string go = dir.file("go");
  json failing{{"name", "broken"},
               {"jobs",
                {{"a", {{"command", "true"}}},
                 {"b", {{"command", "exit 3"}, {"retries", 0}, {"depends_on", {"a"}}}},
                 {"c", {{"command", "true"}, {"depends_on", {"b"}}}}}}};
  json slow{{"name", "slow"}, {"jobs", {{"a", {{"command", "while [ ! -e " + go + " ]; do sleep 0.05; done"}}}}}};
  json fine{{"name", "fine"}, {"jobs", {{"a", {{"command", "true"}}}, {"b", {{"command", "true"}, {"depends_on", {"a"}}}}}}};

  // Bad flags: exit 2, nothing submitted.
  auto lonely = run_jobctl(db, dir, {"dag", "submit", "-", "--timeout", "5s"}, fine.dump());
  CHECK(lonely.code == 2);
  CHECK(lonely.err.find("--timeout goes with --wait") != std::string::npos);
  CHECK(run_jobctl(db, dir, {"dag", "submit", "-", "--wait", "--cron", "@daily"}, fine.dump()).code == 2);
  CHECK(run_jobctl(db, dir, {"dag", "submit", "-", "--wait", "--timeout", "soon"}, fine.dump()).code == 2);
  CHECK(json::parse(run_jobctl(db, dir, {"dag", "ls", "-o", "json"}).out).empty());

  // No agent yet: the wait times out with 124, and says how far it got.
  auto pending = run_jobctl(db, dir, {"dag", "submit", "-", "--wait", "--timeout", "300ms"}, fine.dump());
  CHECK(pending.code == 124);
  const std::string fine_id = test::trim(pending.out);
  CHECK(pending.err.find("timed out waiting for DAG run " + fine_id + " (still running, 0 of 2 nodes done)") !=
        std::string::npos);
  // With -o json, the DAG run as it stands, as dag status shows it: it
  // printed nothing (for one id; several printed each).
  for (const auto& args : std::vector<std::vector<std::string>>{{"wait", fine_id, "--timeout", "300ms", "-o", "json"},
                                                                 {"dag", "wait", fine_id, "--timeout", "300ms", "-o", "json"}}) {
    CAPTURE(args);
    auto timed_json = run_jobctl(db, dir, args);
    CHECK(timed_json.code == 124);
    REQUIRE_MESSAGE(!timed_json.out.empty(), timed_json.err);
    CHECK(json::parse(timed_json.out)["status"] == "running");
  }

  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  auto done = run_jobctl(db, dir, {"dag", "wait", fine_id});
  CHECK(done.code == 0);
  CHECK(done.err.find("DAG run " + fine_id + " succeeded") != std::string::npos);

  auto broken = run_jobctl(db, dir, {"dag", "submit", "-", "--wait"}, failing.dump());
  CHECK(broken.code == 1);
  const std::string broken_id = test::trim(broken.out);
  CHECK(broken.err.find("DAG run " + broken_id + " failed: ") != std::string::npos);
  CHECK(broken.err.find("b dead") != std::string::npos);
  CHECK(broken.err.find("c cancelled") != std::string::npos);
  auto as_json = run_jobctl(db, dir, {"dag", "wait", broken_id, "-o", "json"});
  CHECK(as_json.code == 1);
  CHECK(json::parse(as_json.out)["status"] == "failed");
  auto submitted_json = run_jobctl(db, dir, {"dag", "submit", "-", "--wait", "-o", "json"}, fine.dump());
  CHECK(submitted_json.code == 0);
  CHECK(json::parse(submitted_json.out)["status"] == "succeeded");  // the finished run, one document

  // A CI step run again: with its idempotency key, the first DAG run is
  // printed and waited for, and nothing is submitted.
  auto keyed = run_jobctl(db, dir, {"dag", "submit", "-", "--wait", "--idempotency-key", "ci-step-42"}, fine.dump());
  CHECK(keyed.code == 0);
  const std::string keyed_id = test::trim(keyed.out);
  CHECK(keyed.err.find("already exists") == std::string::npos);
  CHECK(json::parse(run_jobctl(db, dir, {"dag", "status", keyed_id, "-o", "json"}).out)["idempotency_key"] ==
        "ci-step-42");
  CHECK(json::parse(run_jobctl(db, dir, {"dag", "status", fine_id, "-o", "json"}).out)["idempotency_key"].is_null());
  CHECK(run_jobctl(db, dir, {"dag", "status", keyed_id, "-o", "table"}).out.find("idempotency key:  ci-step-42") !=
        std::string::npos);
  const size_t dag_runs = json::parse(run_jobctl(db, dir, {"dag", "ls", "-o", "json"}).out).size();
  auto rerun = run_jobctl(db, dir, {"dag", "submit", "-", "--wait", "--idempotency-key", "ci-step-42"}, failing.dump());
  CHECK(rerun.code == 0);
  CHECK(test::trim(rerun.out) == keyed_id);
  CHECK(rerun.err.find("already exists with idempotency key 'ci-step-42'; not submitted again") != std::string::npos);
  auto rerun_json = run_jobctl(db, dir, {"dag", "submit", "-", "--idempotency-key", "ci-step-42", "-o", "json"}, fine.dump());
  CHECK(rerun_json.code == 0);
  CHECK(json::parse(rerun_json.out)["dag_run_id"] == keyed_id);
  auto too_long = run_jobctl(db, dir, {"dag", "submit", "-", "--idempotency-key", std::string(256, 'k')}, fine.dump());
  CHECK(too_long.code == 2);
  CHECK(too_long.err.find("--idempotency-key is 256 bytes, more than 255") != std::string::npos);
  CHECK(json::parse(run_jobctl(db, dir, {"dag", "ls", "-o", "json"}).out).size() == dag_runs);
  // A scheduled DAG's key: its id again; --wait has no run to wait for.
  auto nightly = run_jobctl(db, dir, {"dag", "submit", "-", "--cron", "0 3 * * *", "--idempotency-key", "nightly"},
                            fine.dump());
  REQUIRE(nightly.code == 0);
  auto nightly_again = run_jobctl(db, dir, {"dag", "submit", "-", "--idempotency-key", "nightly"}, fine.dump());
  CHECK(nightly_again.code == 0);
  CHECK(nightly_again.out == nightly.out);
  auto nightly_wait = run_jobctl(db, dir, {"dag", "submit", "-", "--wait", "--idempotency-key", "nightly"}, fine.dump());
  CHECK(nightly_wait.code == 4);
  CHECK(nightly_wait.err.find("is scheduled: its runs start at its occurrences") != std::string::npos);
  // A refusal is its one error line and hint, with no note before it (a tester).
  CHECK(nightly_wait.err.rfind("jobctl: error: ", 0) == 0);
  CHECK(test::lines(nightly_wait.err).size() == 2);

  // wait: several ids, jobs and DAG runs alike; the worst outcome wins.
  const std::string job = test::submit(db, dir, {"--", "true"});
  auto both = run_jobctl(db, dir, {"wait", job, fine_id});
  CHECK(both.code == 0);
  CHECK(run_jobctl(db, dir, {"wait", job, broken_id, fine_id}).code == 1);
  auto listed = run_jobctl(db, dir, {"wait", job, fine_id, "-o", "json"});
  REQUIRE(listed.code == 0);
  auto arr = json::parse(listed.out);
  REQUIRE(arr.size() == 2);
  CHECK(arr[0]["id"] == job);
  CHECK(arr[1]["id"] == fine_id);
  const std::string slow_id = test::trim(run_jobctl(db, dir, {"dag", "submit", "-"}, slow.dump()).out);
  auto timed = run_jobctl(db, dir, {"wait", job, slow_id, "--timeout", "500ms"});
  CHECK(timed.code == 124);
  auto unknown = run_jobctl(db, dir, {"wait", job, "01J00000000000000000000000"});
  CHECK(unknown.code == 3);  // known before waiting on any
  std::ofstream(go).put('x');
  CHECK(run_jobctl(db, dir, {"dag", "wait", slow_id, "--timeout", "60s"}).code == 0);

  // A prefix of a DAG run's id names it, its node runs beginning with it
  // too; one that a job submitted beside it also begins is ambiguous
  // (found by a tester: wait took the DAG run, exit 0, for a failing job).
  CHECK(run_jobctl(db, dir, {"wait", fine_id.substr(0, 12)}).code == 0);
  const std::string lost = test::submit(db, dir, {"--queue", "nowhere", "--", "exit 1"});
  const std::string beside = test::trim(run_jobctl(db, dir, {"dag", "submit", "-"}, fine.dump()).out);
  size_t shared = 0;
  while (shared < lost.size() && lost[shared] == beside[shared]) ++shared;
  REQUIRE(shared >= 6);  // submitted within a second of each other
  auto either = run_jobctl(db, dir, {"wait", beside.substr(0, shared)});
  CHECK(either.code == 2);
  CHECK(either.err.find("is ambiguous") != std::string::npos);
}
