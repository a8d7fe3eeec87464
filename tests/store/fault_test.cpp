// Faults at the connection seam: a write whose commit reached the database
// but whose answer was lost, as a server crash or a dropped connection at
// the worst moment leaves it.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <functional>

#include "common/dag/dag.hpp"
#include "common/store/agent.hpp"
#include "common/store/dags.hpp"
#include "common/store/dead_letter.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "tests/support/faults.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using model::RunStatus;

namespace {

std::string fault_worker(store::Store& s, const std::string& name) {
  return s.agent().register_worker(store::WorkerRegistration{name, "host", 1, {"default"}, 8, "test", 60'000'000, {}});
}

// A store on a FaultyConnection, a clean one to check it with, and one
// pending run of `true`.
struct FaultyStore {
  test::TempDir dir;
  test::TestDb db{dir};
  std::unique_ptr<store::Store> check = db.open();
  test::FaultyConnection* faulty = nullptr;
  std::unique_ptr<store::Store> s = open_faulty();
  std::string run_id = submit_one();

  std::unique_ptr<store::Store> open_faulty() {
    auto conn = std::make_unique<test::FaultyConnection>(db.connect());
    faulty = conn.get();
    return std::make_unique<store::Store>(std::move(conn));
  }
  std::string submit_one() {
    model::JobSpec spec;
    spec.command.argv = {"true"};
    return s->jobs().submit({spec})[0].run_id;
  }
};

}  // namespace

TEST_CASE("fault: a claim whose commit answer is lost is read back by the heartbeat and given back unspent") {
  FaultyStore f;
  auto& s = *f.s;
  auto& check = f.check;
  auto* faulty = f.faulty;
  const auto& run_id = f.run_id;
  auto a = fault_worker(s, "a"), b = fault_worker(s, "b");

  faulty->lose_next_answer();
  try {
    s.agent().claim(a, {"default"}, 1, 60'000'000);
    FAIL("the claim's lost answer did not surface");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::store);
  }
  // The claim committed: the run is leased to `a`, which does not know it.
  auto run = check->jobs().get_run(run_id);
  REQUIRE(run);
  CHECK(run->status == RunStatus::running);

  // Reading back by lease owner finds it, with what giving it back needs.
  auto leases = s.agent().heartbeat(a, model::WorkerState::active, 60'000'000);
  REQUIRE(leases.size() == 1);
  CHECK(leases[0].run_id == run_id);
  CHECK(leases[0].attempt == 1);
  CHECK(leases[0].job_id == run->job_id);

  store::Completion back;
  back.run_id = leases[0].run_id;
  back.job_id = leases[0].job_id;
  back.fence = leases[0].fence;
  back.attempt = leases[0].attempt;
  back.status = RunStatus::pending;
  back.outcome = model::AttemptOutcome::released;
  back.error = "not run";
  s.agent().release({back});
  run = check->jobs().get_run(run_id);
  CHECK(run->status == RunStatus::pending);
  CHECK(run->deliveries == 0);  // no delivery used up: the poison budget is whole
  CHECK(run->failures == 0);

  // Anyone may claim it now, at once, not after the lease.
  auto again = s.agent().claim(b, {"default"}, 1, 60'000'000);
  REQUIRE(again.size() == 1);
  CHECK(again[0].run_id == run_id);
  auto attempts = check->jobs().attempts(run_id);
  REQUIRE(attempts.size() == 2);
  CHECK(attempts[0].outcome == "released");
}

TEST_CASE("fault: a completion whose answer is lost is applied once, and sending it again changes nothing") {
  FaultyStore f;
  auto& s = *f.s;
  auto& check = f.check;
  auto* faulty = f.faulty;
  const auto& run_id = f.run_id;
  auto a = fault_worker(s, "a");
  auto claimed = s.agent().claim(a, {"default"}, 1, 60'000'000);
  REQUIRE(claimed.size() == 1);
  auto done = store::completion_of(claimed[0], RunStatus::succeeded);

  faulty->lose_next_answer();
  CHECK_THROWS_AS(s.agent().complete({done}), Error);
  CHECK(check->jobs().get_run(run_id)->status == RunStatus::succeeded);
  // The agent sends it again after the outage: fenced, a no-op.
  auto applied = s.agent().complete({done});
  REQUIRE(applied.size() == 1);
  CHECK_FALSE(applied[0]);
  CHECK(check->jobs().attempts(run_id).size() == 1);
}

namespace {

// A write that breaks at each of its statements and at its commit, refused
// or with its answer lost: `write(round)` makes the write of a round (its
// first, round 0, counts the steps), and `check(round, committed)` what it
// left and a retry, as a script's after exit 5.
void break_at_each_step(FaultyStore& f, const std::function<void(int)>& write,
                        const std::function<void(int, bool)>& check) {
  using Fault = test::FaultyConnection::Fault;
  int before = f.faulty->steps();
  write(0);
  const int steps = f.faulty->steps() - before;
  REQUIRE(steps >= 2);
  int round = 1;
  for (auto fault : {Fault::refused, Fault::answer_lost}) {
    for (int n = 1; n <= steps; ++n, ++round) {
      CAPTURE(n);
      CAPTURE(static_cast<int>(fault));
      f.faulty->fail_at(n, fault);
      try {
        write(round);
        FAIL("the injected fault did not surface");
      } catch (const Error& e) {
        CHECK(e.code() == ExitCode::store);
      }
      // Only a commit that was applied leaves anything; nothing is half there.
      check(round, fault == Fault::answer_lost && n == steps);
    }
  }
}

}  // namespace

TEST_CASE("fault: a submit that breaks at any statement or at its commit writes all or nothing, and a retry makes each job once") {
  FaultyStore f;
  auto specs = [](int round) {
    std::vector<model::JobSpec> out(2);
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].command.argv = {"true"};
      out[i].idempotency_key = fmt::format("round-{}-{}", round, i);
    }
    out[1].delay_us = 60'000'000;
    return out;
  };
  size_t jobs = 0;
  break_at_each_step(
      f,
      [&](int round) {
        f.s->jobs().submit(specs(round));
        if (round == 0) jobs = f.check->jobs().list_jobs({}).size();
      },
      [&](int round, bool committed) {
        CHECK(f.check->jobs().list_jobs({}).size() == jobs + (committed ? 2 : 0));
        auto again = f.s->jobs().submit(specs(round));
        CHECK(again[0].existed == committed);
        CHECK(again[1].existed == committed);
        jobs += 2;
        CHECK(f.check->jobs().list_jobs({}).size() == jobs);
      });
}

TEST_CASE("fault: a DAG submit that breaks at any statement or at its commit, retried with its key, makes one DAG") {
  FaultyStore f;
  constexpr const char* kDoc =
      R"({"name": "nightly", "jobs": {"a": {"command": "true"}, "b": {"command": "true", "depends_on": ["a"]}}})";
  auto keyed = [&](int round) {
    store::DagSubmit d;
    d.document = kDoc;
    d.definition = dag::parse(kDoc);
    d.idempotency_key = fmt::format("nightly-{}", round);
    return d;
  };
  auto dags = [&] { return f.check->connection().query("SELECT count(*) FROM dags").at(0).i64(0); };
  int64_t made = 0;
  break_at_each_step(
      f,
      [&](int round) {
        f.s->dags().submit_dag(keyed(round));
        if (round == 0) made = dags();
      },
      [&](int round, bool committed) {
        CHECK(dags() == made + (committed ? 1 : 0));
        // "The outcome is unknown": the caller submits again with the key.
        auto again = f.s->dags().submit_dag(keyed(round));
        CHECK(again.existed == committed);
        CHECK_FALSE(again.dag_run_id.empty());
        ++made;
        CHECK(dags() == made);
      });
}

TEST_CASE("fault: a claim whose locked groups stopped waiting before it claimed locks others instead of reading every due run") {
  // On PostgreSQL a claim locks the concurrency groups it may take from,
  // then claims in a second statement. A group whose runs another agent
  // claimed just before the lock was tried (that claim committed after the
  // lock statement's snapshot) looks due there and is locked, but has
  // nothing left: a claim short of runs read every due run looking for
  // more, and in a herd of 100,000 schedules a third of each claim's groups
  // were such (0.8-1.6 s a claim). That moment cannot be timed from here;
  // the same state comes from the runs leaving between the two statements.
  FaultyStore f;
  auto& s = *f.s;
  if (s.connection().dialect() != store::Dialect::postgres) return;  // SQLite claims one at a time
  auto a = fault_worker(s, "a");
  model::JobSpec grouped;
  grouped.command.argv = {"true"};
  grouped.max_concurrent = 1;  // a group of its own per job
  s.jobs().submit(std::vector<model::JobSpec>(600, grouped));
  constexpr const char* kGroupedInClaimOrder =
      "SELECT id FROM runs WHERE group_key IS NOT NULL ORDER BY priority, available_at, id";
  std::vector<std::string> order;
  for (const auto& row : f.check->connection().query(kGroupedInClaimOrder)) order.push_back(row.text(0));
  REQUIRE(order.size() == 600);
  // The lock statement takes the first 256 groups; their runs are then
  // cancelled on another connection.
  f.faulty->after_next("pg_try_advisory_xact_lock", [&] {
    CHECK(f.check->connection().exec(fmt::format("UPDATE runs SET status = 'cancelled', finished_at = 1 WHERE id IN ({} "
                                                 "LIMIT 256)",
                                                 kGroupedInClaimOrder)) == 256);
  });
  // Without the groups locked again, it read all 600 and took the
  // ungrouped run alone.
  auto claimed = s.agent().claim(a, {"default"}, 4, 60'000'000);
  REQUIRE(claimed.size() == 4);
  CHECK(claimed[0].run_id == f.run_id);  // the ungrouped run, submitted first
  for (size_t i = 1; i < claimed.size(); ++i) CHECK(claimed[i].run_id == order[256 + i - 1]);
}

TEST_CASE("fault: a run claimed as a completion frees its group starts, on record, after the run it waited for ended") {
  // On PostgreSQL a claim's transaction starts at its lock statement and
  // claims in the next. A completion that commits between the two frees a
  // group of one, and the claim fills it: the run it claims starts after
  // that completion, and so must its recorded start. Stamped with the
  // transaction's start, the next occurrence of an overlap-skip schedule
  // began, on record, 8.7 ms before the one it waited for had finished (a
  // CI run of the e2e overlap test). SQLite claims inside the write lock:
  // no completion commits during a claim.
  FaultyStore f;
  auto& s = *f.s;
  if (s.connection().dialect() != store::Dialect::postgres) return;
  auto a = fault_worker(s, "a"), b = fault_worker(s, "b");
  model::JobSpec one_at_a_time;
  one_at_a_time.command.argv = {"true"};
  one_at_a_time.concurrency_key = "one";
  one_at_a_time.max_concurrent = 1;
  auto grouped = s.jobs().submit({one_at_a_time, one_at_a_time});
  // The ungrouped run submitted first, and the group's first run.
  auto claimed = s.agent().claim(a, {"default"}, 3, 60'000'000);
  REQUIRE(claimed.size() == 2);
  REQUIRE(claimed[1].run_id == grouped[0].run_id);
  f.faulty->after_next("pg_try_advisory_xact_lock", [&] {
    auto done = f.check->agent().complete({store::completion_of(claimed[1], RunStatus::succeeded)});
    REQUIRE(done.size() == 1);
    CHECK(done[0]);
  });
  auto next = s.agent().claim(b, {"default"}, 2, 60'000'000);
  REQUIRE(next.size() == 1);
  CHECK(next[0].run_id == grouped[1].run_id);
  const auto ended = f.check->jobs().attempts(grouped[0].run_id).at(0);
  const auto started = f.check->jobs().attempts(grouped[1].run_id).at(0);
  REQUIRE(ended.finished_at);
  CHECK(started.started_at >= *ended.finished_at);
  CHECK(f.check->jobs().get_run(grouped[1].run_id)->started_at == started.started_at);
}

TEST_CASE("fault: a cancel that meets its run ending or going back to wait looks again, never answering 'requested already'") {
  // On PostgreSQL the cancel reads the run's status, then acts on it in a
  // statement of its own. A completion that committed between the two left
  // the ask nothing to change, and the cancel answered "cancel requested
  // already" (exit 0) of a run that had succeeded; one that put the run
  // back to wait for a retry was not cancelled either. SQLite cancels
  // inside the write lock: no completion commits meanwhile.
  FaultyStore f;
  auto& s = *f.s;
  if (s.connection().dialect() != store::Dialect::postgres) return;
  const std::string a = fault_worker(*f.check, "a");
  const std::string job_id = f.check->jobs().get_run(f.run_id)->job_id;
  auto claimed = f.check->agent().claim(a, {"default"}, 1, 60'000'000);
  REQUIRE(claimed.size() == 1);
  constexpr const char* kLook = "SELECT r.id, r.status FROM runs r WHERE r.id =";
  f.faulty->after_next(kLook, [&] {
    REQUIRE(f.check->agent().complete({store::completion_of(claimed[0], RunStatus::succeeded)}) ==
            std::vector<bool>{true});
  });
  try {
    s.jobs().cancel(job_id);
    FAIL("the cancel of a run that ended meanwhile answered as if it still ran");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::invalid_state);
    CHECK(std::string(e.what()) == "job " + job_id + " already finished (succeeded); there is nothing to cancel");
  }
  CHECK(f.check->jobs().get_run(f.run_id)->status == RunStatus::succeeded);
  for (const auto& e : f.check->jobs().history(job_id, 10)) CHECK(e.action != "cancel");

  // Its attempt fails as the cancel looks, and the run waits for a retry:
  // the cancel looks again and cancels it.
  model::JobSpec spec;
  spec.command.argv = {"false"};
  auto retried = f.check->jobs().submit({spec})[0];
  auto failing = f.check->agent().claim(a, {"default"}, 1, 60'000'000);
  REQUIRE(failing.size() == 1);
  f.faulty->after_next(kLook, [&] {
    auto failed = store::completion_of(failing[0], RunStatus::pending);
    failed.retry_delay_us = 60'000'000;
    REQUIRE(f.check->agent().complete({failed}) == std::vector<bool>{true});
    REQUIRE(f.check->jobs().get_run(retried.run_id)->status == RunStatus::pending);
  });
  CHECK(s.jobs().cancel(retried.job_id) == store::CancelOutcome::cancelled);
  CHECK(f.check->jobs().get_run(retried.run_id)->status == RunStatus::cancelled);

  // A run asked to stop before, and still running, is still "requested already".
  spec.command.argv = {"true"};
  auto second = f.check->jobs().submit({spec})[0];
  REQUIRE(f.check->agent().claim(fault_worker(*f.check, "b"), {"default"}, 1, 60'000'000).size() == 1);
  CHECK(s.jobs().cancel(second.job_id) == store::CancelOutcome::requested);
  CHECK(s.jobs().cancel(second.job_id) == store::CancelOutcome::requested_already);
}

TEST_CASE("fault: a retry or a bulk replay that meets a delete of its job makes no run on the deleted job") {
  // They read the job's deleted_at before they lock the run and its job.
  // On PostgreSQL a delete that committed between the two left the job
  // deleted with a new pending run, which no agent claims (a tester: 1 in 8
  // retries racing a delete). SQLite retries inside the write lock.
  FaultyStore f;
  auto& s = *f.s;
  if (s.connection().dialect() != store::Dialect::postgres) return;
  const std::string a = fault_worker(*f.check, "a");
  auto dead_job = [&] {
    model::JobSpec spec;
    spec.command.argv = {"false"};
    spec.queue = "doomed";  // not the pending run FaultyStore made
    auto made = f.check->jobs().submit({spec})[0];
    auto claimed = f.check->agent().claim(a, {"doomed"}, 1, 60'000'000);
    REQUIRE(claimed.size() == 1);
    REQUIRE(f.check->agent().complete({store::completion_of(claimed[0], RunStatus::dead)}) ==
            std::vector<bool>{true});
    return made.job_id;
  };
  auto runs_left_to_run = [&](const std::string& job_id) {
    int n = 0;
    for (const auto& r : f.check->jobs().runs_of(job_id)) n += r.status == RunStatus::pending;
    return n;
  };
  // The statement rerun makes before it locks the run and its job.
  constexpr const char* kBeforeLock = "SELECT dag_run_id FROM runs WHERE id =";

  const std::string retried = dead_job();
  f.faulty->after_next(kBeforeLock, [&] { f.check->jobs().delete_job(retried, store::CancelRunning::yes); });
  try {
    s.dead_letter().retry_job(retried);
    FAIL("a retry made a run on a job deleted meanwhile");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::invalid_state);
    CHECK(std::string(e.what()) == "job " + retried + " is deleted: it cannot be retried");
  }
  CHECK(runs_left_to_run(retried) == 0);

  const std::string replayed = dead_job();
  f.faulty->after_next(kBeforeLock, [&] { f.check->jobs().delete_job(replayed, store::CancelRunning::yes); });
  CHECK(s.dead_letter().replay_all(store::DeadFilter{}) == 0);  // the deleted job's dead run stays
  CHECK(runs_left_to_run(replayed) == 0);
}
