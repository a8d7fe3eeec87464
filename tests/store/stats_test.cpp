// jobctl stats' figures at the store level, against a store seeded with
// runs whose times are set exactly.
#include <doctest/doctest.h>

#include <algorithm>

#include <fmt/format.h>

#include "common/store/admin.hpp"
#include "common/store/agent.hpp"
#include "common/store/jobs.hpp"
#include "common/store/migrations.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using model::RunStatus;

namespace {

using test::kSecond;

struct StatsFixture {
  test::TempDir dir;
  test::TestDb db{dir};
  std::unique_ptr<store::Store> s = db.open();
  std::string worker = s->agent().register_worker({"w", "host", 1, {"default", "reports"}, 64, "test", 600 * kSecond, {}});
  int64_t now = s->now();

  // A run of a new job in `queue`, claimed; returns it.
  store::ClaimedRun claimed(const std::string& queue = "default", model::Priority p = model::Priority::normal) {
    model::JobSpec spec;
    spec.command.argv = {"true"};
    spec.queue = queue;
    spec.priority = p;
    s->jobs().submit({spec});
    auto c = s->agent().claim(worker, {queue}, 1, 600 * kSecond);
    REQUIRE(c.size() == 1);
    return c[0];
  }

  // Ends the claimed run with `status`, then sets its times: due at
  // `due`, its attempt from `started` to `started + took`.
  void ended(const store::ClaimedRun& r, RunStatus status, int64_t due, int64_t started, int64_t took) {
    auto c = store::completion_of(r, status);
    if (status != RunStatus::succeeded) c.outcome = model::AttemptOutcome::failed;
    REQUIRE(s->agent().complete({c}) == std::vector<bool>{true});
    times(r.run_id, due, started, started + took);
  }

  void times(const std::string& run, int64_t due, int64_t started, std::optional<int64_t> finished) {
    auto& c = s->connection();
    // A running attempt's start is on its run (migration 15).
    c.exec("UPDATE runs SET available_at = $2, started_at = $3, attempt_started_at = $3, finished_at = $4 WHERE id = $1",
           {run, due, started, finished ? store::Value(*finished) : store::Value(nullptr)});
    c.exec("UPDATE attempts SET started_at = $2, finished_at = $3 WHERE run_id = $1",
           {run, started, finished ? store::Value(*finished) : store::Value(nullptr)});
  }

  // A pending run due at `due`.
  void pending(int64_t due) {
    model::JobSpec spec;
    spec.command.argv = {"true"};
    auto res = s->jobs().submit({spec})[0];
    s->connection().exec("UPDATE runs SET available_at = $2 WHERE id = $1", {res.run_id, due});
  }
};

const store::QueueStats& find(const std::vector<store::QueueStats>& all, const std::string& queue,
                              model::Priority p) {
  auto it = std::find_if(all.begin(), all.end(), [&](const auto& s) { return s.queue == queue && s.priority == p; });
  REQUIRE(it != all.end());
  return *it;
}

}  // namespace

TEST_CASE("stats: counts, oldest ready, outcomes, failure rate, lag and duration percentiles per queue and priority") {
  StatsFixture f;
  const int64_t base = f.now - 600 * kSecond;  // ten minutes ago
  // Ten successes: run k waited k × 100 ms for its claim and ran k s.
  for (int k = 1; k <= 10; ++k)
    f.ended(f.claimed(), RunStatus::succeeded, base, base + k * kSecond / 10, k * kSecond);
  // One death, claimed on time, its attempt 1 s.
  f.ended(f.claimed(), RunStatus::dead, base, base, kSecond);
  // One running, claimed 2 s after it was due.
  auto running = f.claimed();
  f.times(running.run_id, base, base + 2 * kSecond, std::nullopt);
  // A success two hours ago: outside the window.
  f.ended(f.claimed(), RunStatus::succeeded, f.now - 7200 * kSecond, f.now - 7200 * kSecond, kSecond);
  // Waiting: three due (the oldest for 30 s), two due in an hour.
  for (int64_t ago : {30, 20, 10}) f.pending(f.now - ago * kSecond);
  for (int i = 0; i < 2; ++i) f.pending(f.now + 3600 * kSecond);
  // Another queue and priority: one death.
  f.ended(f.claimed("reports", model::Priority::high), RunStatus::dead, base, base, kSecond);

  auto all = f.s->admin().stats({});
  REQUIRE(all.size() == 2);
  const auto& d = find(all, "default", model::Priority::normal);
  CHECK(d.window_us == 3600 * kSecond);
  CHECK(d.ready == 3);
  CHECK(d.scheduled == 2);
  CHECK(d.running == 1);
  CHECK(d.blocked == 0);
  REQUIRE(d.oldest_ready_us);
  CHECK(*d.oldest_ready_us >= 30 * kSecond);
  CHECK(*d.oldest_ready_us < 90 * kSecond);  // the store clock moved on by the time stats ran
  CHECK(d.succeeded == 10);
  CHECK(d.dead == 1);
  CHECK(d.dead_letter == 1);
  CHECK(d.succeeded_attempts == 10);
  CHECK(d.failed_attempts == 1);
  // Durations 1,1,2,…,10 s (11 attempts): nearest-rank p50 = 5 s, p95 = p99 = 10 s.
  CHECK(d.duration_s.samples == 11);
  CHECK(d.duration_s.p50 == doctest::Approx(5.0));
  CHECK(d.duration_s.p95 == doctest::Approx(10.0));
  CHECK(d.duration_s.p99 == doctest::Approx(10.0));
  // Lags 0, 0.1 … 1.0, 2.0 s (12 attempts): p50 = 0.5 s, p95 = p99 = 2 s.
  CHECK(d.lag_s.samples == 12);
  CHECK(d.lag_s.p50 == doctest::Approx(0.5));
  CHECK(d.lag_s.p99 == doctest::Approx(2.0));

  const auto& r = find(all, "reports", model::Priority::high);
  CHECK(r.dead == 1);
  CHECK(r.dead_letter == 1);
  CHECK(r.ready == 0);

  // One queue; a window that leaves everything out but what waits now.
  auto one = f.s->admin().stats({std::string("reports"), 3600 * kSecond});
  REQUIRE(one.size() == 1);
  CHECK(one[0].queue == "reports");
  auto narrow = f.s->admin().stats({std::nullopt, 60 * kSecond});
  const auto& n = find(narrow, "default", model::Priority::normal);
  CHECK(n.succeeded == 0);
  CHECK(n.ready == 3);
  CHECK(n.dead_letter == 1);  // the dead-letter queue is not windowed
  CHECK(n.duration_s.samples == 0);
}

TEST_CASE("stats: stuck runs are those past their timeout plus the lease, or quiet for too long") {
  StatsFixture f;
  // Past --timeout 1s plus the 600 s lease: its agent should have killed it.
  model::JobSpec timed;
  timed.command.argv = {"sleep", "1000"};
  timed.timeout_us = kSecond;
  f.s->jobs().submit({timed});
  auto late = f.s->agent().claim(f.worker, {"default"}, 1, 600 * kSecond).at(0);
  f.times(late.run_id, f.now - 700 * kSecond, f.now - 700 * kSecond, std::nullopt);
  // Quiet for 120 s, without a timeout.
  auto quiet = f.claimed();
  f.times(quiet.run_id, f.now - 120 * kSecond, f.now - 120 * kSecond, std::nullopt);
  // Running as long, but it reported progress just now.
  auto busy = f.claimed();
  f.times(busy.run_id, f.now - 120 * kSecond, f.now - 120 * kSecond, std::nullopt);
  f.s->jobs().report_progress(busy.run_id, busy.fence, 0.5, "half", std::nullopt);
  // Fresh.
  f.claimed();

  auto stuck = f.s->admin().stuck_runs(60 * kSecond, 50);
  REQUIRE(stuck.size() == 2);
  CHECK(stuck[0].view.latest_run->id == late.run_id);
  CHECK(stuck[0].why.find("past its --timeout 1s: its agent did not stop it") != std::string::npos);
  CHECK(stuck[1].view.latest_run->id == quiet.run_id);
  CHECK(stuck[1].why.find("without a progress report") != std::string::npos);
  CHECK(stuck[1].running_us >= 120 * kSecond);
  // A longer quiet limit leaves only the timed-out one.
  CHECK(f.s->admin().stuck_runs(3600 * kSecond, 50).size() == 1);
  // The busy one becomes stuck once its last report is old.
  f.s->connection().exec("UPDATE runs SET progress_at = $2 WHERE id = $1", {busy.run_id, f.now - 90 * kSecond});
  auto later = f.s->admin().stuck_runs(60 * kSecond, 50);
  REQUIRE(later.size() == 3);
  auto b = std::find_if(later.begin(), later.end(), [&](const auto& x) { return x.view.latest_run->id == busy.run_id; });
  REQUIRE(b != later.end());
  CHECK(b->why.find("no progress for") != std::string::npos);
  CHECK(b->why.find("(last: 50% half)") != std::string::npos);
}

TEST_CASE("stats: stuck runs of one queue only, with the agent's name") {
  StatsFixture f;
  auto quiet = f.claimed("reports");
  f.times(quiet.run_id, f.now - 120 * kSecond, f.now - 120 * kSecond, std::nullopt);
  CHECK(f.s->admin().stuck_runs(60 * kSecond, 50, std::string("default")).empty());
  auto stuck = f.s->admin().stuck_runs(60 * kSecond, 50, std::string("reports"));
  REQUIRE(stuck.size() == 1);
  CHECK(stuck[0].worker == "w");
}

TEST_CASE("doctor: a healthy store is all ok") {
  StatsFixture f;
  auto findings = f.s->admin().doctor();
  auto named = [&](const std::string& name) {
    auto it = std::find_if(findings.begin(), findings.end(), [&](const auto& x) { return x.name == name; });
    REQUIRE(it != findings.end());
    return *it;
  };
  for (const auto& x : findings) {
    CAPTURE(x.name);
    CAPTURE(x.detail);
    CHECK(x.level == store::Finding::Level::ok);
  }
  CHECK(named("schema").detail == fmt::format("version {}", store::kSchemaVersion));
  CHECK(named("clock").detail.find("the store's clock is") == 0);
  if (test::test_backend() == config::Backend::sqlite) {
    CHECK(named("integrity").detail == "ok");
    named("WAL");
  } else {
    CHECK(named("table runs").detail.find("live rows") != std::string::npos);
    CHECK(named("oldest transaction").level == store::Finding::Level::ok);
    CHECK(named("indexes").detail == "all valid");
  }
}

TEST_CASE("workers: an agent that stopped heartbeating is listed as gone before anyone marks it") {
  StatsFixture f;
  auto stale = f.s->agent().register_worker({"stale", "host", 2, {"default"}, 4, "test", kSecond, {}});
  f.s->connection().exec("UPDATE workers SET heartbeat_at = $2 WHERE id = $1", {stale, f.now - 10 * kSecond});
  auto workers = f.s->admin().list_workers();
  REQUIRE(workers.size() == 2);
  CHECK(workers[0].name == "w");
  CHECK(workers[0].state == model::WorkerState::active);
  CHECK(workers[1].name == "stale");
  CHECK(workers[1].state == model::WorkerState::gone);
}
