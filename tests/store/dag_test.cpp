// DAG runs at the store level: release on success, failure policies,
// cancel, pause, retry, schedules, and fan-in under concurrent completions.
#include <doctest/doctest.h>

#include <latch>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "common/dag/dag.hpp"
#include "common/store/agent.hpp"
#include "common/store/dags.hpp"
#include "common/store/dead_letter.hpp"
#include "common/store/jobs.hpp"
#include "common/store/scheduler.hpp"
#include "common/store/schedules.hpp"
#include "common/util/error.hpp"
#include "tests/support/faults.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using model::RunStatus;

namespace {

constexpr int64_t kNodeLease = 30'000'000;

// a -> {b, c} -> d, and e on its own.
constexpr const char* kDiamond = R"({"name": "diamond", "jobs": {
  "a": {"command": "true"},
  "b": {"command": "true", "depends_on": ["a"]},
  "c": {"command": "true", "depends_on": ["a"]},
  "d": {"command": "true", "depends_on": ["b", "c"]},
  "e": {"command": "true"}}})";

struct DagFixture {
  test::TempDir dir;
  test::TestDb db{dir};
  std::unique_ptr<store::Store> s = db.open();
  std::string worker = s->agent().register_worker({"w", "host", 1, {"default"}, 64, "test", kNodeLease, {}});

  store::DagSubmitResult submit(const char* doc, dag::OnFailure on_failure = dag::OnFailure::stop) {
    store::DagSubmit d;
    d.document = doc;
    d.definition = dag::parse(doc);
    d.on_failure = on_failure;
    return s->dags().submit_dag(d);
  }

  // The diamond as a scheduled DAG on `cron`.
  store::DagSubmitResult submit_scheduled(const char* cron) {
    store::DagSubmit d;
    d.document = kDiamond;
    d.definition = dag::parse(kDiamond);
    d.schedule = model::ScheduleSpec{};
    d.schedule->cron = cron;
    return s->dags().submit_dag(d);
  }

  // Claims what is due; returns it by node name.
  std::map<std::string, store::ClaimedRun> claim() {
    std::map<std::string, store::ClaimedRun> out;
    for (auto& c : s->agent().claim(worker, {"default"}, 64, kNodeLease)) out[c.dag_node] = std::move(c);
    return out;
  }

  void finish(const store::ClaimedRun& run, RunStatus status, const std::string& out = "") {
    auto c = store::completion_of(run, status);
    c.stdout_tail = out;
    REQUIRE(s->agent().complete({c}) == std::vector<bool>{true});
  }

  std::map<std::string, RunStatus> statuses(const std::string& dag_run) {
    std::map<std::string, RunStatus> out;
    auto v = s->dags().get_dag_run(dag_run);
    for (const auto& n : v.nodes) out[n.name] = n.run.status;
    return out;
  }
};

std::set<std::string> names(const std::map<std::string, store::ClaimedRun>& m) {
  std::set<std::string> out;
  for (const auto& [k, v] : m) out.insert(k);
  return out;
}

}  // namespace

TEST_CASE("dag: a node starts only once all its parents succeeded, and gets their results") {
  DagFixture f;
  auto r = f.submit(kDiamond);
  auto st = f.statuses(r.dag_run_id);
  CHECK(st["a"] == RunStatus::pending);
  CHECK(st["d"] == RunStatus::blocked);
  auto first = f.claim();
  REQUIRE(names(first) == std::set<std::string>{"a", "e"});
  f.finish(first["a"], RunStatus::succeeded, "line one\nresult-of-a\n");
  auto second = f.claim();
  REQUIRE(names(second) == std::set<std::string>{"b", "c"});
  CHECK(second["b"].parent_results == std::map<std::string, std::string>{{"a", "result-of-a"}});
  f.finish(second["b"], RunStatus::succeeded, "B");
  CHECK(f.claim().empty());  // d still waits for c
  CHECK(f.statuses(r.dag_run_id)["d"] == RunStatus::blocked);
  f.finish(second["c"], RunStatus::succeeded, "C");
  auto third = f.claim();
  REQUIRE(names(third) == std::set<std::string>{"d"});
  CHECK(third["d"].parent_results == std::map<std::string, std::string>{{"b", "B"}, {"c", "C"}});
  CHECK(f.s->dags().get_dag_run(r.dag_run_id).status == "running");
  f.finish(third["d"], RunStatus::succeeded);
  f.finish(first["e"], RunStatus::succeeded);
  auto v = f.s->dags().get_dag_run(r.dag_run_id);
  CHECK(v.status == "succeeded");
  CHECK(v.finished_at.has_value());
  // A DAG id names its newest run.
  CHECK(f.s->dags().get_dag_run(r.dag_id).id == r.dag_run_id);
}

TEST_CASE("dag: a DAG run's status, counts and nodes are read in one snapshot") {
  DagFixture f;
  auto r = f.submit(kDiamond);
  auto first = f.claim();  // a and e run
  auto conn = std::make_unique<test::FaultyConnection>(f.db.connect());
  auto* faulty = conn.get();
  store::Store reader(std::move(conn));
  // a ends between the counts and the nodes: the nodes showed b and c
  // pending while the counts said running 2, blocked 3.
  faulty->after_next("GROUP BY r.status", [&] { f.finish(first["a"], RunStatus::succeeded); });
  auto v = reader.dags().get_dag_run(r.dag_run_id);
  std::map<std::string, int64_t> of_nodes;
  for (const auto& n : v.nodes) ++of_nodes[std::string(model::to_string(n.run.status))];
  CHECK(of_nodes == v.counts);
  CHECK(v.counts == std::map<std::string, int64_t>{{"running", 2}, {"blocked", 3}});
  // The list: e ends between a run's row and its counts.
  faulty->after_next("JOIN dags d ON d.id = r.dag_id", [&] { f.finish(first["e"], RunStatus::succeeded); });
  auto listed = reader.dags().list_dag_runs(10);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].counts == std::map<std::string, int64_t>{{"succeeded", 1}, {"running", 1}, {"pending", 2},
                                                            {"blocked", 1}});
  CHECK(reader.dags().get_dag_run(r.dag_run_id).counts ==
        std::map<std::string, int64_t>{{"succeeded", 2}, {"pending", 2}, {"blocked", 1}});
}

TEST_CASE("dag: on-failure stop cancels every node not started, continue only the dead node's descendants") {
  for (auto policy : {dag::OnFailure::stop, dag::OnFailure::continue_}) {
    CAPTURE(dag::to_string(policy));
    DagFixture f;
    auto r = f.submit(kDiamond, policy);
    auto first = f.claim();  // a and e
    f.finish(first["a"], RunStatus::dead);
    auto st = f.statuses(r.dag_run_id);
    CHECK(st["b"] == RunStatus::cancelled);
    CHECK(st["d"] == RunStatus::cancelled);
    CHECK(st["e"] == RunStatus::running);  // started already: it runs on either way
    f.finish(first["e"], RunStatus::succeeded);
    CHECK(f.s->dags().get_dag_run(r.dag_run_id).status == "failed");
  }
  // An independent branch not started yet: stop cancels it, continue runs it.
  constexpr const char* kTwoBranches = R"({"name": "two", "jobs": {
    "a": {"command": "true"}, "a2": {"command": "true", "depends_on": ["a"]},
    "x": {"command": "true"}, "x2": {"command": "true", "depends_on": ["x"]}}})";
  for (auto policy : {dag::OnFailure::stop, dag::OnFailure::continue_}) {
    DagFixture f;
    auto r = f.submit(kTwoBranches, policy);
    auto first = f.claim();
    f.finish(first["a"], RunStatus::dead);
    f.finish(first["x"], RunStatus::succeeded);
    auto st = f.statuses(r.dag_run_id);
    CHECK(st["a2"] == RunStatus::cancelled);
    CHECK(st["x2"] == (policy == dag::OnFailure::stop ? RunStatus::cancelled : RunStatus::pending));
  }
}

TEST_CASE("dag: cancel stops a DAG run mid-way, and retry reruns only what did not succeed") {
  DagFixture f;
  auto r = f.submit(kDiamond);
  auto first = f.claim();
  f.finish(first["a"], RunStatus::succeeded);
  auto second = f.claim();  // b and c running
  CHECK(f.s->dags().cancel_dag_run(r.dag_run_id) == 4);  // d cancelled; b, c and e asked to stop
  auto v = f.s->dags().get_dag_run(r.dag_run_id);
  CHECK(v.status == "cancelling");
  CHECK(f.statuses(r.dag_run_id)["d"] == RunStatus::cancelled);
  CHECK(f.s->jobs().get_run(second["b"].run_id)->cancel_requested);
  CHECK(f.s->dags().cancel_dag_run(r.dag_run_id) == 0);  // again, while they stop: nothing changes
  CHECK_THROWS_AS(f.s->dags().retry_dag_run(r.dag_run_id), Error);  // still running
  f.finish(second["b"], RunStatus::cancelled);
  f.finish(second["c"], RunStatus::succeeded);
  f.finish(first["e"], RunStatus::succeeded);
  CHECK(f.s->dags().get_dag_run(r.dag_run_id).status == "cancelled");

  CHECK(f.s->dags().retry_dag_run(r.dag_run_id) == 2);  // b and d; a, c and e kept
  auto st = f.statuses(r.dag_run_id);
  CHECK(st["a"] == RunStatus::succeeded);
  CHECK(st["b"] == RunStatus::pending);
  CHECK(st["d"] == RunStatus::blocked);
  auto again = f.claim();
  REQUIRE(names(again) == std::set<std::string>{"b"});
  f.finish(again["b"], RunStatus::succeeded);
  auto last = f.claim();
  REQUIRE(names(last) == std::set<std::string>{"d"});
  f.finish(last["d"], RunStatus::succeeded);
  CHECK(f.s->dags().get_dag_run(r.dag_run_id).status == "succeeded");
  // a ran once in all.
  CHECK(f.s->connection().query("SELECT count(*) FROM runs WHERE dag_run_id = $1 AND dag_node = 'a'",
                                {r.dag_run_id}).at(0).i64(0) == 1);
  CHECK_THROWS_AS(f.s->dags().retry_dag_run(r.dag_run_id), Error);  // nothing left to retry
  // The history of each node the cancel stopped and the retry ran again
  // has them once, with the DAG run; a's, which had succeeded, neither.
  auto actions_of = [&](const std::string& job) {
    std::vector<std::string> actions;
    for (const auto& e : f.s->jobs().history(job, 100)) {
      if (e.action == "create") continue;
      actions.push_back(e.action);
      CHECK(nlohmann::json::parse(e.details)["dag_run"] == r.dag_run_id);
    }
    return actions;
  };
  CHECK(actions_of(second["b"].job_id) == std::vector<std::string>{"retry", "cancel"});  // newest first
  CHECK(actions_of(first["a"].job_id).empty());
}

TEST_CASE("dag: a paused DAG run starts no node until resumed") {
  DagFixture f;
  auto r = f.submit(kDiamond);
  CHECK(f.s->dags().set_dag_run_paused(r.dag_run_id, true));
  CHECK_FALSE(f.s->dags().set_dag_run_paused(r.dag_run_id, true));
  CHECK(f.claim().empty());
  CHECK(f.s->dags().get_dag_run(r.dag_run_id).status == "paused");
  CHECK(f.s->dags().set_dag_run_paused(r.dag_run_id, false));
  auto first = f.claim();
  CHECK(names(first) == std::set<std::string>{"a", "e"});
  // Paused while a runs: its success leaves b and c waiting for resume.
  CHECK(f.s->dags().set_dag_run_paused(r.dag_run_id, true));
  f.finish(first["a"], RunStatus::succeeded);
  CHECK(f.claim().empty());
  CHECK(f.s->dags().set_dag_run_paused(r.dag_run_id, false));
  CHECK(names(f.claim()) == std::set<std::string>{"b", "c"});
  // Each pause and resume is in each node's history; the pause that
  // changed nothing is not.
  std::vector<std::string> actions;
  for (const auto& e : f.s->jobs().history(first["e"].job_id, 100))
    if (e.action != "create") actions.push_back(e.action);
  CHECK(actions == std::vector<std::string>{"resume", "pause", "resume", "pause"});
}

TEST_CASE("dag: a paused DAG run starts no node that comes back to wait: a retry, a run given back") {
  DagFixture f;
  auto r = f.submit(kDiamond);
  auto first = f.claim();
  REQUIRE(names(first) == std::set<std::string>{"a", "e"});
  CHECK(f.s->dags().set_dag_run_paused(r.dag_run_id, true));
  // a fails with retries left; e's draining agent gives it back. Both
  // came back pending and were claimed while the DAG run said paused.
  auto retry = store::completion_of(first["a"], RunStatus::pending);
  retry.outcome = model::AttemptOutcome::failed;
  REQUIRE(f.s->agent().complete({retry}) == std::vector<bool>{true});
  auto released = store::completion_of(first["e"], RunStatus::pending);
  released.outcome = model::AttemptOutcome::released;
  released.error = "released: the agent was draining";
  f.s->agent().release({released});
  CHECK(f.claim().empty());
  CHECK(f.s->dags().get_dag_run(r.dag_run_id).status == "paused");
  CHECK(f.s->dags().set_dag_run_paused(r.dag_run_id, false));
  CHECK(names(f.claim()) == std::set<std::string>{"a", "e"});
}

TEST_CASE("dag: two parents finishing at once on two agents release their child exactly once") {
  DagFixture f;
  auto other = f.db.open();
  std::string worker2 = other->agent().register_worker({"w2", "host", 1, {"default"}, 64, "test", kNodeLease, {}});
  for (int round = 0; round < 10; ++round) {
    auto r = f.submit(kDiamond);
    auto first = f.claim();
    f.finish(first["a"], RunStatus::succeeded);
    f.finish(first["e"], RunStatus::succeeded);
    auto second = f.claim();
    REQUIRE(second.size() == 2);
    auto b = store::completion_of(second["b"], RunStatus::succeeded);
    auto c = store::completion_of(second["c"], RunStatus::succeeded);
    std::latch ready(2);
    std::thread t([&] {
      ready.arrive_and_wait();
      other->agent().complete({c});
    });
    ready.arrive_and_wait();
    f.s->agent().complete({b});
    t.join();
    auto d = f.s->connection().query(
        "SELECT status, waiting_on FROM runs WHERE dag_run_id = $1 AND dag_node = 'd'", {r.dag_run_id});
    REQUIRE(d.size() == 1);
    CHECK(d[0].text(0) == "pending");
    CHECK(d[0].i64(1) == 0);
    auto third = f.claim();
    REQUIRE(names(third) == std::set<std::string>{"d"});
    f.finish(third["d"], RunStatus::succeeded);
  }
}

TEST_CASE("dag: releasing a node's children and reading its parents' results look up its edges, not the whole DAG run") {
  // Three layers of 100 nodes, each on two of the layer before (as
  // scripts/bench's DAG figure). PostgreSQL, asked for a node's children
  // or parents among its DAG run's runs, read every run of the DAG run
  // for each (0.85 ms each at 1,000 nodes).
  DagFixture f;
  constexpr int kWidth = 100;
  std::string doc = R"({"name": "layers", "jobs": {)";
  for (int layer = 0; layer < 3; ++layer)
    for (int i = 0; i < kWidth; ++i) {
      doc += fmt::format(R"({}"n{}_{}": {{"command": "echo {}_{}")", layer + i ? ", " : "", layer, i, layer, i);
      if (layer > 0)
        doc += fmt::format(R"(, "depends_on": ["n{}_{}", "n{}_{}"])", layer - 1, i, layer - 1, (i + 1) % kWidth);
      doc += "}";
    }
  doc += "}}";
  auto r = f.submit(doc.c_str());
  auto& c = f.s->connection();
  auto claim_layer = [&](int layer) {
    std::map<std::string, store::ClaimedRun> got;
    for (auto batch = f.claim(); !batch.empty(); batch = f.claim()) got.merge(batch);
    CHECK(got.size() == kWidth);
    for (const auto& [name, run] : got) CHECK(name.rfind(fmt::format("n{}_", layer), 0) == 0);
    return got;
  };
  auto first = claim_layer(0);
  // The completions of the first layer, in one batch, release the second:
  // a few runs read for each, not the DAG run's 300.
  std::vector<store::Completion> done;
  for (const auto& [name, run] : first) {
    done.push_back(store::completion_of(run, RunStatus::succeeded));
    done.back().stdout_tail = name + "\n";
  }
  const bool counted = test::counts_reads(c);
  const int64_t before = counted ? test::tuples_read(c, "runs") : 0;
  CHECK(f.s->agent().complete(done) == std::vector<bool>(kWidth, true));
  const int64_t read = counted ? test::tuples_read(c, "runs") - before : 0;
  CAPTURE(read);
  if (counted) CHECK(read < 10 * kWidth);
  // Each node of the second layer was released by its two parents, and got
  // their results; the third still waits.
  auto second = claim_layer(1);
  CHECK(second["n1_7"].parent_results == std::map<std::string, std::string>{{"n0_7", "n0_7"}, {"n0_8", "n0_8"}});
  CHECK(second["n1_99"].parent_results == std::map<std::string, std::string>{{"n0_99", "n0_99"}, {"n0_0", "n0_0"}});
  CHECK(f.statuses(r.dag_run_id)["n2_0"] == RunStatus::blocked);
  // The parents' results are read in each claim, among the claim's own
  // reads: on PostgreSQL the kept (generic) plan is what is checked, each
  // parent's run looked up from its edge.
  if (c.dialect() != store::Dialect::postgres) return;
  const std::string plan = test::prepared_plan(c, "SELECT r.dag_node, a.stdout_tail%", "'x', 'y'");
  CAPTURE(plan);
  CHECK(plan.find("job_id = e.parent") != std::string::npos);
}

TEST_CASE("dag: a scheduled DAG starts one DAG run per occurrence, once") {
  DagFixture f;
  auto r = f.submit_scheduled("* * * * * *");
  CHECK(r.dag_run_id.empty());
  REQUIRE_FALSE(r.schedule_job_id.empty());
  auto epoch = f.s->scheduler().lead(f.worker, kNodeLease);
  REQUIRE(epoch);
  store::SchedulerSettings settings;
  settings.horizon_us = 3'000'000;
  f.s->scheduler().materialise(f.worker, *epoch, settings);
  f.s->scheduler().materialise(f.worker, *epoch, settings);  // again: nothing twice
  auto runs = f.s->connection().query("SELECT occurrence, count(*) FROM dag_runs WHERE dag_id = $1 GROUP BY occurrence",
                                      {r.dag_id});
  REQUIRE(runs.size() >= 3);
  for (const auto& row : runs) CHECK(row.i64(1) == 1);
  // Each has its five nodes, and the schedule itself never becomes a run.
  CHECK(f.s->connection().query("SELECT count(*) FROM runs WHERE job_id = $1", {r.schedule_job_id}).at(0).i64(0) == 0);
  CHECK(f.s->connection().query("SELECT count(*) FROM runs r JOIN dag_runs d ON d.id = r.dag_run_id WHERE d.dag_id = $1",
                                {r.dag_id}).at(0).i64(0) == static_cast<int64_t>(runs.size()) * 5);
  // Nodes are not jobs of `ls`.
  CHECK(f.s->jobs().list_jobs({}).empty());
}

TEST_CASE("dag: a DAG submitted again with its idempotency key is the first one, and nothing more is written") {
  DagFixture f;
  auto keyed = [&](const std::string& key, const char* doc = kDiamond) {
    store::DagSubmit d;
    d.document = doc;
    d.definition = dag::parse(doc);
    d.idempotency_key = key;
    return d;
  };
  auto count = [&](const char* table) {
    return f.s->connection().query(fmt::format("SELECT count(*) FROM {}", table)).at(0).i64(0);
  };
  auto first = f.s->dags().submit_dag(keyed("release-1.2"));
  CHECK_FALSE(first.existed);
  REQUIRE_FALSE(first.dag_run_id.empty());
  CHECK(f.s->dags().get_dag_run(first.dag_run_id).idempotency_key == "release-1.2");
  const int64_t dags = count("dags"), runs = count("runs"), jobs = count("jobs");
  // Again, even with another document: the first DAG and its run.
  auto again = f.s->dags().submit_dag(keyed("release-1.2", R"({"name": "other", "jobs": {"x": {"command": "true"}}})"));
  CHECK(again.existed);
  CHECK(again.dag_id == first.dag_id);
  CHECK(again.dag_run_id == first.dag_run_id);
  CHECK(count("dags") == dags);
  CHECK(count("runs") == runs);
  CHECK(count("jobs") == jobs);
  // Another key, or none, is another DAG; a scheduled one is found by its key too.
  CHECK(f.s->dags().submit_dag(keyed("release-1.3")).dag_id != first.dag_id);
  CHECK(f.submit(kDiamond).dag_id != first.dag_id);
  auto scheduled = keyed("nightly");
  scheduled.schedule = model::ScheduleSpec{};
  scheduled.schedule->cron = "0 3 * * *";
  auto nightly = f.s->dags().submit_dag(scheduled);
  auto nightly_again = f.s->dags().submit_dag(scheduled);
  CHECK(nightly_again.existed);
  CHECK(nightly_again.dag_id == nightly.dag_id);
  CHECK(nightly_again.schedule_job_id == nightly.schedule_job_id);
  CHECK(nightly_again.dag_run_id.empty());

  // Two stores at once with one key: one DAG, and the other is told it existed.
  auto other = f.db.open();
  std::latch go(2);
  store::DagSubmitResult a, b;
  std::string failed_a, failed_b;
  auto submit_from = [&](store::Store& s, store::DagSubmitResult& out, std::string& failed) {
    go.arrive_and_wait();
    try {
      out = s.dags().submit_dag(keyed("at-once"));
    } catch (const std::exception& e) {
      failed = e.what();
    }
  };
  std::thread ta([&] { submit_from(*f.s, a, failed_a); });
  std::thread tb([&] { submit_from(*other, b, failed_b); });
  ta.join();
  tb.join();
  CHECK(failed_a == "");
  CHECK(failed_b == "");
  CHECK(a.dag_id == b.dag_id);
  CHECK(a.dag_run_id == b.dag_run_id);
  CHECK(a.existed != b.existed);
  CHECK(f.s->connection().query("SELECT count(*) FROM dags WHERE idempotency_key = 'at-once'").at(0).i64(0) == 1);
}

TEST_CASE("dag: deleting a scheduled DAG cancels the DAG runs made ahead, and a restore in time brings them back") {
  DagFixture f;
  auto r = f.submit_scheduled("* * * * * *");
  auto epoch = f.s->scheduler().lead(f.worker, kNodeLease);
  REQUIRE(epoch);
  store::SchedulerSettings settings;
  settings.horizon_us = 60'000'000;
  f.s->scheduler().materialise(f.worker, *epoch, settings);
  // The DAG runs well ahead (their occurrence 10 s away or more, from
  // now: read at each count, a slow machine saw one fewer), by state.
  const int64_t well_ahead = f.s->now() + 10'000'000;
  auto ahead = [&](const char* where) {
    return f.s->connection()
        .query(fmt::format("SELECT count(*) FROM dag_runs d WHERE d.dag_id = $1 AND d.occurrence > $2 AND {}", where),
               {r.dag_id, well_ahead})
        .at(0)
        .i64(0);
  };
  const int64_t made = ahead("TRUE");
  REQUIRE(made >= 40);
  auto newest = f.s->connection().query("SELECT max(id) FROM dag_runs WHERE dag_id = $1", {r.dag_id}).at(0).text(0);
  REQUIRE(f.s->dags().set_dag_run_paused(newest, true));
  auto deleted = f.s->jobs().delete_job(r.schedule_job_id, store::CancelRunning::no);
  CHECK(deleted.skipped >= made);  // was 0: each ran at its time
  CHECK(ahead("d.cancelled_at IS NOT NULL") == made);
  CHECK(ahead("EXISTS (SELECT 1 FROM runs x WHERE x.dag_run_id = d.id AND x.status <> 'cancelled')") == 0);
  CHECK(f.s->dags().get_dag_run(newest).status == "cancelled");
  f.s->jobs().restore_job(r.schedule_job_id);
  CHECK(ahead("d.cancelled_at IS NULL") == made);
  const auto second = f.s->connection()
                          .query("SELECT max(id) FROM dag_runs WHERE dag_id = $1 AND id < $2", {r.dag_id, newest})
                          .at(0)
                          .text(0);
  CHECK(f.statuses(second) == std::map<std::string, RunStatus>{{"a", RunStatus::pending},
                                                                {"b", RunStatus::blocked},
                                                                {"c", RunStatus::blocked},
                                                                {"d", RunStatus::blocked},
                                                                {"e", RunStatus::pending}});
  // The one paused before the delete is paused still: its roots wait too.
  CHECK(f.s->dags().get_dag_run(newest).status == "paused");
  CHECK(f.statuses(newest)["a"] == RunStatus::blocked);
}

TEST_CASE("dag: a node's cancel under --on-failure continue cancels what depends on it") {
  DagFixture f;
  auto r = f.submit(kDiamond, dag::OnFailure::continue_);
  auto b_job = f.s->dags().get_dag_run(r.dag_run_id).nodes[1].job_id;
  CHECK(f.s->jobs().cancel(b_job) == store::CancelOutcome::cancelled);
  auto st = f.statuses(r.dag_run_id);
  CHECK(st["b"] == RunStatus::cancelled);
  CHECK(st["d"] == RunStatus::cancelled);
  CHECK(st["c"] == RunStatus::blocked);
  CHECK(st["a"] == RunStatus::pending);
}

TEST_CASE("dag: a node is run again only with its DAG run, and its history stays") {
  DagFixture f;
  auto r = f.submit(kDiamond);
  auto first = f.claim();
  f.finish(first["a"], RunStatus::dead);
  auto a_job = first["a"].job_id;
  auto refused = [&](auto&& action) {
    try {
      action();
      return false;
    } catch (const Error& e) {
      return e.code() == ExitCode::invalid_state;
    }
  };
  CHECK(refused([&] { f.s->dead_letter().retry_job(a_job); }));
  CHECK(refused([&] { f.s->dead_letter().replay({first["a"].run_id}); }));
  CHECK(f.s->dead_letter().replay_all({}) == 0);
  CHECK(refused([&] { f.s->jobs().delete_job(a_job, store::CancelRunning::no); }));
  CHECK(f.s->dead_letter().purge_dead(0) == 0);
  f.finish(first["e"], RunStatus::succeeded);
  CHECK(f.s->dags().get_dag_run(r.dag_run_id).status == "failed");
  CHECK(f.s->dags().retry_dag_run(r.dag_run_id) == 4);  // a, b, c, d; e kept
}

TEST_CASE("dag: a dead node dismissed leaves the dead-letter queue, its DAG run stays failed, and dag retry reruns it") {
  DagFixture f;
  auto r = f.submit(kDiamond);
  auto first = f.claim();
  f.finish(first["a"], RunStatus::dead);
  f.finish(first["e"], RunStatus::succeeded);
  REQUIRE(f.s->dead_letter().dead_runs({}).size() == 1);
  CHECK(f.s->dead_letter().dismiss({first["a"].run_id}).size() == 1);
  CHECK(f.s->dead_letter().dead_runs({}).empty());
  CHECK(f.s->dags().get_dag_run(r.dag_run_id).status == "failed");
  CHECK(f.s->dags().retry_dag_run(r.dag_run_id) == 4);  // a, b, c, d; e kept
}

TEST_CASE("dag: triggering or backfilling a scheduled DAG makes DAG runs, never a run of its own") {
  DagFixture f;
  auto r = f.submit_scheduled("0 3 * * *");
  auto triggered = f.s->schedules().trigger(r.schedule_job_id, false);
  CHECK(f.s->dags().get_dag_run(triggered).nodes.size() == 5);
  auto from = 1'700'000'000'000'000;  // 2023-11-14
  auto filled = f.s->schedules().backfill(r.schedule_job_id, from, from + 3 * 86'400'000'000);
  CHECK(filled.created == 3);
  CHECK(f.s->schedules().backfill(r.schedule_job_id, from, from + 3 * 86'400'000'000).created == 0);  // once
  CHECK(f.s->connection().query("SELECT count(*) FROM runs WHERE job_id = $1", {r.schedule_job_id}).at(0).i64(0) == 0);
  CHECK(f.s->dags().list_dag_runs(10).size() == 4);
}
