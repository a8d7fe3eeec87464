// History retention (jobctl gc) at the store level.
#include <doctest/doctest.h>

#include "common/store/admin.hpp"
#include "common/store/agent.hpp"
#include "common/store/dags.hpp"
#include "common/store/dead_letter.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using model::RunStatus;

namespace {

constexpr int64_t kDay = 86'400'000'000;

struct GcFixture {
  test::TempDir dir;
  test::TestDb db{dir};
  std::unique_ptr<store::Store> s = db.open();
  std::string worker = s->agent().register_worker({"w", "host", 1, {"default"}, 64, "test", 60'000'000, {}});

  // A one-off job whose run ended with `status` `age` ago.
  store::SubmitResult ended(RunStatus status, int64_t age) {
    model::JobSpec spec;
    spec.command.argv = {"true"};
    auto res = s->jobs().submit({spec})[0];
    auto c = s->agent().claim(worker, {"default"}, 1, 60'000'000);
    REQUIRE(c.size() == 1);
    auto done = store::completion_of(c[0], status);
    if (status == RunStatus::dead) done.outcome = model::AttemptOutcome::failed;
    REQUIRE(s->agent().complete({done}) == std::vector<bool>{true});
    age_run(res.run_id, age);
    return res;
  }

  void age_run(const std::string& run, int64_t age) {
    s->connection().exec("UPDATE runs SET finished_at = $2 WHERE id = $1", {run, s->now() - age});
  }

  int64_t count(const std::string& sql) { return s->connection().query(sql).at(0).i64(0); }

  // A DAG run of one node, whose run ended dead: {DAG run, node run}.
  std::pair<std::string, std::string> dead_node() {
    store::DagSubmit d;
    d.document = R"({"name": "one", "jobs": {"a": {"command": "false"}}})";
    d.definition = dag::parse(d.document);
    auto res = s->dags().submit_dag(d);
    auto c = s->agent().claim(worker, {"default"}, 1, 60'000'000);
    REQUIRE(c.size() == 1);
    auto dead = store::completion_of(c[0], RunStatus::dead);
    dead.outcome = model::AttemptOutcome::failed;
    REQUIRE(s->agent().complete({dead}) == std::vector<bool>{true});
    return {res.dag_run_id, c[0].run_id};
  }
};

}  // namespace

TEST_CASE("gc: finished history past retention goes in batches, while waiting runs, the DLQ and recent history stay") {
  GcFixture f;
  std::vector<store::SubmitResult> old;
  for (int i = 0; i < 5; ++i) old.push_back(f.ended(RunStatus::succeeded, 40 * kDay));
  auto recent = f.ended(RunStatus::succeeded, 1 * kDay);
  auto in_dlq = f.ended(RunStatus::dead, 40 * kDay);
  auto dismissed = f.ended(RunStatus::dead, 40 * kDay);
  f.s->dead_letter().dismiss({dismissed.run_id});
  auto replayed = f.ended(RunStatus::dead, 40 * kDay);
  auto fresh_run = f.s->dead_letter().replay({replayed.run_id}).at(0);  // pending now: its job stays
  model::JobSpec waiting;
  waiting.command.argv = {"true"};
  auto pending = f.s->jobs().submit({waiting})[0];
  f.s->connection().exec("UPDATE runs SET finished_at = NULL WHERE id = $1", {pending.run_id});
  // A schedule with an old run: the run goes, the schedule stays.
  model::JobSpec sched;
  sched.command.argv = {"true"};
  sched.schedule = model::ScheduleSpec{};
  sched.schedule->cron = "0 3 * * *";
  auto schedule = f.s->jobs().submit({sched})[0];
  f.s->connection().exec(
      "INSERT INTO runs (id, job_id, queue, priority, status, available_at, created_at, finished_at) "
      "VALUES ('01OLDSCHEDULERUN00000000000', $1, 'default', 2, 'succeeded', 0, 0, $2)",
      {schedule.job_id, f.s->now() - 40 * kDay});

  auto r = f.s->admin().gc(30 * kDay, 2);
  CHECK(r.runs == 8);  // five old successes, the replayed and the dismissed dead runs, the schedule's old run
  CHECK(r.jobs == 6);  // the one-off jobs left with no run
  CHECK(r.batches == 4);
  CHECK(r.attempts == 7);
  CHECK_FALSE(r.more);
  for (const auto& o : old) {
    CHECK_FALSE(f.s->jobs().get_job(o.job_id));
    CHECK(f.count("SELECT count(*) FROM job_events WHERE job_id = '" + o.job_id + "'") == 0);
  }
  CHECK(f.s->jobs().get_run(recent.run_id));
  CHECK(f.s->jobs().get_run(in_dlq.run_id));
  CHECK_FALSE(f.s->jobs().get_run(replayed.run_id));
  CHECK_FALSE(f.s->jobs().get_job(dismissed.job_id));
  CHECK(f.s->jobs().get_job(replayed.job_id)->latest_run->id == fresh_run);
  CHECK(f.s->jobs().get_run(pending.run_id));
  CHECK(f.s->jobs().get_job(schedule.job_id));
  CHECK(f.count("SELECT count(*) FROM runs WHERE job_id = '" + schedule.job_id + "'") == 0);

  // Nothing left to do: a second pass removes nothing.
  auto again = f.s->admin().gc(30 * kDay, 2);
  CHECK(again.runs == 0);
  CHECK(again.batches == 0);
}

TEST_CASE("gc: at most max_batches transactions per call, then more") {
  GcFixture f;
  for (int i = 0; i < 5; ++i) f.ended(RunStatus::succeeded, 10 * kDay);
  auto r = f.s->admin().gc(1 * kDay, 2, 1);
  CHECK(r.runs == 2);
  CHECK(r.more);
  CHECK(f.s->admin().gc(1 * kDay, 2).runs == 3);
  CHECK_THROWS_AS(f.s->admin().gc(0, 2), Error);
}

TEST_CASE("gc: a DAG run goes whole once every node ended before the cutoff") {
  GcFixture f;
  store::DagSubmit d;
  d.document = R"({"name": "pair", "jobs": {"a": {"command": "true"}, "b": {"command": "true", "depends_on": ["a"]}}})";
  d.definition = dag::parse(d.document);
  auto res = f.s->dags().submit_dag(d);
  for (int i = 0; i < 2; ++i) {
    auto c = f.s->agent().claim(f.worker, {"default"}, 1, 60'000'000);
    REQUIRE(c.size() == 1);
    REQUIRE(f.s->agent().complete({store::completion_of(c[0], RunStatus::succeeded)}) == std::vector<bool>{true});
  }
  CHECK(f.s->admin().gc(1 * kDay).dag_runs == 0);  // it just ended
  f.s->connection().exec("UPDATE runs SET finished_at = $2 WHERE dag_run_id = $1", {res.dag_run_id, f.s->now() - 2 * kDay});
  f.s->connection().exec("UPDATE dag_runs SET created_at = $2 WHERE id = $1", {res.dag_run_id, f.s->now() - 2 * kDay});
  auto r = f.s->admin().gc(1 * kDay);
  CHECK(r.dag_runs == 1);
  CHECK(r.runs == 2);
  CHECK(f.count("SELECT count(*) FROM runs WHERE dag_run_id = '" + res.dag_run_id + "'") == 0);
  CHECK_THROWS_AS(f.s->dags().get_dag_run(res.dag_run_id), Error);
}

TEST_CASE("gc: dag retry takes the dead nodes it reruns out of the dead-letter queue") {
  GcFixture f;
  const auto [dag_run, run] = f.dead_node();
  CHECK(f.s->dead_letter().dead_runs({}).size() == 1);
  CHECK(f.s->dags().retry_dag_run(dag_run) == 1);
  CHECK(f.s->dead_letter().dead_runs({}).empty());
}

TEST_CASE("gc: a DAG run whose dead node was dismissed goes whole past retention") {
  GcFixture f;
  const auto [dag_run, run] = f.dead_node();
  f.s->connection().exec("UPDATE runs SET finished_at = $2 WHERE dag_run_id = $1", {dag_run, f.s->now() - 2 * kDay});
  f.s->connection().exec("UPDATE dag_runs SET created_at = $2 WHERE id = $1", {dag_run, f.s->now() - 2 * kDay});
  CHECK(f.s->admin().gc(1 * kDay).dag_runs == 0);  // its node is in the dead-letter queue
  f.s->dead_letter().dismiss({run});
  auto r = f.s->admin().gc(1 * kDay);
  CHECK(r.dag_runs == 1);
  CHECK(r.runs == 1);
}
