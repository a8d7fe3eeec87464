// The lease protocol: heartbeats, fencing, release and rescue.
#include <doctest/doctest.h>

#include <set>
#include <thread>

#include "common/store/admin.hpp"
#include "common/store/agent.hpp"
#include "common/store/jobs.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using model::RunStatus;

namespace {

std::string submit_one(store::Store& s) {
  model::JobSpec spec;
  spec.command.argv = {"true"};
  return s.jobs().submit({spec})[0].run_id;
}

std::string short_lease_worker(store::Store& s, const std::string& name) {
  return s.agent().register_worker(store::WorkerRegistration{name, "host", 1, {"default"}, 8, "test", 50'000, {}});
}

using test::outlive;

}  // namespace

TEST_CASE("lease: heartbeat extends every lease the worker holds and nobody else's") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = short_lease_worker(*s, "a"), b = short_lease_worker(*s, "b");
  submit_one(*s);
  submit_one(*s);
  submit_one(*s);
  auto mine = s->agent().claim(a, {"default"}, 2, 1'000'000);
  auto theirs = s->agent().claim(b, {"default"}, 2, 1'000'000);
  REQUIRE(mine.size() == 2);
  REQUIRE(theirs.size() == 1);
  int64_t before = *s->jobs().get_run(mine[0].run_id)->lease_expires_at;
  auto leases = s->agent().heartbeat(a, model::WorkerState::active, 60'000'000);
  CHECK(leases.size() == 2);
  CHECK(*s->jobs().get_run(mine[0].run_id)->lease_expires_at > before + 30'000'000);
  CHECK(*s->jobs().get_run(theirs[0].run_id)->lease_expires_at < before + 30'000'000);
}

TEST_CASE("lease: a run asked to stop whose agent is lost is cancelled, not run again") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = short_lease_worker(*s, "a");
  auto run_id = submit_one(*s);
  auto first = s->agent().claim(a, {"default"}, 1, 20'000);
  REQUIRE(first.size() == 1);
  CHECK(s->jobs().cancel(first[0].job_id) == store::CancelOutcome::requested);
  outlive(*s, 20'000);
  CHECK(s->agent().rescue_expired() == 1);
  auto run = s->jobs().get_run(run_id);
  CHECK(run->status == RunStatus::cancelled);
  CHECK(run->error == "cancelled by user (its agent was lost before it stopped)");
  CHECK(s->agent().claim(a, {"default"}, 1, 20'000).empty());
}

TEST_CASE("lease: a run asked to stop is cancelled, not run again, however its attempt ends") {
  // Found by a tester: a cancel that came while the attempt was timing out,
  // failing, or being given back by a draining agent was undone by the
  // retry or the release, and the job ran again.
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = short_lease_worker(*s, "a");
  const std::string run_id = submit_one(*s), other_id = submit_one(*s);
  auto claimed = s->agent().claim(a, {"default"}, 2, 20'000'000);
  REQUIRE(claimed.size() == 2);
  const auto& mine = claimed[0].run_id == run_id ? claimed[0] : claimed[1];
  const auto& other = claimed[0].run_id == run_id ? claimed[1] : claimed[0];
  REQUIRE(s->jobs().cancel(mine.job_id) == store::CancelOutcome::requested);
  auto retry = store::completion_of(mine, RunStatus::pending);
  retry.outcome = model::AttemptOutcome::failed;
  retry.error = "timed out after 2s";
  retry.retry_delay_us = 1'000'000;
  std::string outcome = "failed";
  SUBCASE("its attempt fails with a retry left") {
    REQUIRE(s->agent().complete({retry}) == std::vector<bool>{true});
  }
  SUBCASE("its attempt fails in a batch with one that succeeded") {
    REQUIRE(s->agent().complete({store::completion_of(other, RunStatus::succeeded), retry}) ==
            std::vector<bool>{true, true});
    CHECK(s->jobs().get_run(other_id)->status == RunStatus::succeeded);
  }
  SUBCASE("its draining agent gives it back") {
    auto released = store::completion_of(mine, RunStatus::pending);
    released.outcome = model::AttemptOutcome::released;
    released.error = "released: the agent was draining";
    s->agent().release({released});
    outcome = "released";
    retry.error = released.error;
  }
  auto run = s->jobs().get_run(run_id);
  CHECK(run->status == RunStatus::cancelled);
  CHECK(run->error == "cancelled by user");
  CHECK(run->finished_at.has_value());
  // The attempt keeps what happened to it.
  auto attempts = s->jobs().attempts(run_id);
  REQUIRE(attempts.size() == 1);
  CHECK(attempts[0].outcome == outcome);
  CHECK(attempts[0].error == retry.error);
  outlive(*s, 2'000'000);
  for (const auto& again : s->agent().claim(a, {"default"}, 2, 20'000'000)) CHECK(again.run_id != run_id);
}

TEST_CASE("lease: a run an agent older than migration 15 claimed is shown once and rescued into its own attempt row") {
  // Such an agent, still running when `jobctl init` upgraded the store,
  // opens the attempt's row at its claim and leaves the run's attempt
  // columns empty.
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = short_lease_worker(*s, "a");
  auto run_id = submit_one(*s);
  REQUIRE(s->agent().claim(a, {"default"}, 1, 20'000).size() == 1);
  auto& c = s->connection();
  c.exec("UPDATE runs SET attempt_worker = NULL, attempt_started_at = NULL, attempt_job_version = NULL WHERE id = $1",
         {run_id});
  c.exec("INSERT INTO attempts (run_id, attempt, worker_id, started_at, outcome, job_version, stdout_tail) "
         "VALUES ($1, 1, $2, 123, 'running', 1, $3)",
         {run_id, a, store::Blob{"old"}});
  auto attempts = s->jobs().attempts(run_id);
  REQUIRE(attempts.size() == 1);
  CHECK(attempts[0].outcome == "running");
  CHECK(attempts[0].started_at == 123);
  outlive(*s, 20'000);
  CHECK(s->agent().rescue_expired() == 1);
  attempts = s->jobs().attempts(run_id);
  REQUIRE(attempts.size() == 1);
  CHECK(attempts[0].outcome == "lost");
  CHECK(attempts[0].worker_id == a);
  CHECK(attempts[0].started_at == 123);
  CHECK(attempts[0].stdout_tail == "old");
  CHECK(attempts[0].finished_at.has_value());
  CHECK(s->jobs().get_run(run_id)->status == RunStatus::pending);
}

TEST_CASE("lease: an expired lease is rescued, and the old owner's completion is fenced out") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = short_lease_worker(*s, "a"), b = short_lease_worker(*s, "b");
  auto run_id = submit_one(*s);
  auto first = s->agent().claim(a, {"default"}, 1, 20'000);
  REQUIRE(first.size() == 1);
  s->agent().ship_output(a, {{run_id, 1, "partial", "warn", 7, 4}});
  outlive(*s, 20'000);
  CHECK(s->agent().rescue_expired() == 1);
  auto run = s->jobs().get_run(run_id);
  CHECK(run->status == RunStatus::pending);
  CHECK(run->error.find("lease expired") != std::string::npos);

  auto second = s->agent().claim(b, {"default"}, 1, 30'000'000);
  REQUIRE(second.size() == 1);
  CHECK(second[0].fence == first[0].fence + 1);
  CHECK(second[0].attempt == 2);

  // The deposed owner wakes up and reports: nothing changes.
  auto stale = store::completion_of(first[0], RunStatus::succeeded);
  CHECK(s->agent().complete({stale}) == std::vector<bool>{false});
  CHECK(s->jobs().get_run(run_id)->status == RunStatus::running);
  CHECK(s->agent().heartbeat(a, model::WorkerState::active, 30'000'000).empty());

  auto fresh = store::completion_of(second[0], RunStatus::succeeded);
  CHECK(s->agent().complete({fresh}) == std::vector<bool>{true});
  auto attempts = s->jobs().attempts(run_id);
  REQUIRE(attempts.size() == 2);
  CHECK(attempts[0].outcome == "lost");
  CHECK(attempts[0].worker_id == a);
  CHECK(attempts[0].started_at == first[0].claimed_at);
  // What the lost attempt wrote, as far as its agent shipped it.
  CHECK(attempts[0].stdout_tail == "partial");
  CHECK(attempts[0].stderr_tail == "warn");
  CHECK(attempts[0].stdout_bytes == 7);
  CHECK(attempts[1].outcome == "succeeded");
  CHECK(attempts[1].worker_id == b);
  CHECK(s->jobs().get_run(run_id)->status == RunStatus::succeeded);
}

TEST_CASE("lease: rescue takes nothing while the store's clock reads outside the window its caller expects") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = short_lease_worker(*s, "a");  // lease 50 ms
  auto run_id = submit_one(*s);
  REQUIRE(s->agent().claim(a, {"default"}, 1, 20'000).size() == 1);
  outlive(*s, 60'000);
  // The caller last saw the clock an hour from now (or an hour ago): the
  // clock has stepped since, so expired-looking leases may be alive.
  int64_t now = s->now(), hour = 3'600'000'000;
  CHECK(s->agent().rescue_expired(INT64_MAX, now + hour, now + 2 * hour) == 0);
  CHECK(s->agent().rescue_expired(INT64_MAX, now - 2 * hour, now - hour) == 0);
  CHECK(s->jobs().get_run(run_id)->status == RunStatus::running);
  // Where the caller expects it: rescued.
  CHECK(s->agent().rescue_expired(INT64_MAX, now - hour, now + hour) == 1);
  CHECK(s->jobs().get_run(run_id)->status == RunStatus::pending);
}

TEST_CASE("lease: a worker that stops heartbeating is marked gone") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = short_lease_worker(*s, "a");  // lease 50 ms
  outlive(*s, 50'000);
  s->agent().rescue_expired();
  auto workers = s->admin().list_workers();
  REQUIRE(workers.size() == 1);
  CHECK(workers[0].id == a);
  CHECK(workers[0].state == model::WorkerState::gone);
}

TEST_CASE("lease: release gives the run back without spending a delivery") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = short_lease_worker(*s, "a");
  auto run_id = submit_one(*s);
  auto c = s->agent().claim(a, {"default"}, 1, 30'000'000);
  REQUIRE(c.size() == 1);
  CHECK(s->jobs().get_run(run_id)->deliveries == 1);
  auto r = store::completion_of(c[0], RunStatus::failed);
  r.error = "released: the agent was draining";
  s->agent().release({r});
  auto run = s->jobs().get_run(run_id);
  CHECK(run->status == RunStatus::pending);
  CHECK(run->deliveries == 0);
  CHECK(s->jobs().attempts(run_id).at(0).outcome == "released");
  // A stale release after someone else claimed it changes nothing.
  auto again = s->agent().claim(a, {"default"}, 1, 30'000'000);
  REQUIRE(again.size() == 1);
  s->agent().release({r});
  CHECK(s->jobs().get_run(run_id)->status == RunStatus::running);
}

TEST_CASE("lease: concurrent claimers never get the same run") {
  test::TempDir dir;
  test::TestDb db(dir);
  {
    auto s = db.open();
    std::vector<model::JobSpec> specs(600);
    for (auto& sp : specs) sp.command.argv = {"true"};
    s->jobs().submit(specs);
  }
  std::vector<std::vector<std::string>> got(3);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      auto s = store::Store::open(config::parse_dsn(db.dsn()), store::Create::no);
      auto w = short_lease_worker(*s, "t" + std::to_string(t));
      for (;;) {
        auto c = s->agent().claim(w, {"default"}, 7, 30'000'000);
        if (c.empty()) break;
        for (auto& r : c) got[static_cast<size_t>(t)].push_back(r.run_id);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<std::string> all;
  size_t total = 0;
  for (auto& g : got) {
    total += g.size();
    all.insert(g.begin(), g.end());
  }
  CHECK(total == 600);
  CHECK(all.size() == 600);
}

TEST_CASE("lease: a restarted agent gives back its dead incarnation's runs at once, as rescue would") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto dead = s->agent().register_worker(store::WorkerRegistration{"a", "host", 41, {"default"}, 8, "test", 600'000'000, {}});
  auto other = s->agent().register_worker(store::WorkerRegistration{"b", "host", 42, {"default"}, 8, "test", 600'000'000, {}});
  auto again = s->agent().register_worker(store::WorkerRegistration{"a", "host", 43, {"default"}, 8, "test", 600'000'000, {}});
  s->agent().register_worker(store::WorkerRegistration{"a", "elsewhere", 44, {"default"}, 8, "test", 600'000'000, {}});
  auto submit_as = [&](const std::string& name, auto&& tweak) {
    model::JobSpec spec;
    spec.name = name;
    spec.command.argv = {"true"};
    tweak(spec);
    return s->jobs().submit({spec})[0];
  };
  auto plain = submit_as("plain", [](model::JobSpec&) {});
  auto once = submit_as("once", [](model::JobSpec& j) { j.retry_given.delivery = model::Delivery::at_most_once; });
  auto poison = submit_as("poison", [](model::JobSpec& j) { j.retry_given.max_deliveries = 1; });
  auto deleted = submit_as("deleted", [](model::JobSpec&) {});
  REQUIRE(s->agent().claim(dead, {"default"}, 4, 600'000'000).size() == 4);
  auto theirs = submit_as("theirs", [](model::JobSpec&) {});
  REQUIRE(s->agent().claim(other, {"default"}, 4, 600'000'000).size() == 1);
  s->jobs().delete_job(deleted.job_id, store::CancelRunning::no);

  auto seen = s->agent().incarnations("a", "host");
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].worker_id == dead);
  CHECK(seen[0].pid == 41);
  CHECK_FALSE(seen[0].gone);
  CHECK(seen[1].worker_id == again);

  const std::string why = "the previous incarnation of agent a (pid 41) died";
  CHECK(s->agent().give_back_runs(dead, why) == 4);
  auto run = s->jobs().get_run(plain.run_id);
  CHECK(run->status == RunStatus::pending);  // due now: nobody waits for its lease
  CHECK(run->lease_owner.empty());
  CHECK(run->error == why);
  CHECK(s->jobs().attempts(plain.run_id).at(0).outcome == "lost");
  CHECK(s->jobs().attempts(plain.run_id).at(0).error == why);
  CHECK(s->jobs().get_run(once.run_id)->status == RunStatus::dead);
  CHECK(s->jobs().get_run(once.run_id)->error.find("at-most-once") != std::string::npos);
  CHECK(s->jobs().get_run(poison.run_id)->status == RunStatus::dead);
  CHECK(s->jobs().get_run(poison.run_id)->error == "poison: delivered once without a result");
  CHECK(s->jobs().get_run(deleted.run_id)->status == RunStatus::cancelled);
  CHECK(s->jobs().get_run(deleted.run_id)->error == "cancelled: the job was deleted");
  CHECK(s->jobs().get_run(theirs.run_id)->status == RunStatus::running);  // another agent's
  CHECK(s->agent().incarnations("a", "host")[0].gone);
  CHECK_FALSE(s->agent().incarnations("a", "host")[1].gone);

  auto claimed = s->agent().claim(again, {"default"}, 4, 600'000'000);
  REQUIRE(claimed.size() == 1);
  CHECK(claimed[0].run_id == plain.run_id);
  CHECK(claimed[0].attempt == 2);
  CHECK(s->agent().give_back_runs(dead, why) == 0);  // a second time finds nothing
}
