// Schedules in the store: the leader lease, materialising occurrences,
// misfire and overlap policies, update, trigger and backfill.
#include <doctest/doctest.h>

#include <atomic>
#include <set>
#include <fmt/format.h>
#include <thread>

#include "common/store/admin.hpp"
#include "common/store/agent.hpp"
#include "common/store/jobs.hpp"
#include "common/store/scheduler.hpp"
#include "common/store/schedules.hpp"
#include "common/util/error.hpp"
#include "common/util/time.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using model::RunStatus;

namespace {

using test::kSecond;

// `sc` gives the rest of the schedule (its bounds).
std::string submit_schedule(store::Store& s, const std::string& cron, model::Overlap overlap = model::Overlap::skip,
                            model::Misfire misfire = model::Misfire::latest, model::ScheduleSpec sc = {}) {
  model::JobSpec spec;
  spec.command.argv = {"true"};
  sc.cron = cron;
  sc.overlap = overlap;
  sc.misfire = misfire;
  spec.schedule = sc;
  return s.jobs().submit({spec})[0].job_id;
}

std::string schedule_worker(store::Store& s, const std::string& name) {
  return s.agent().register_worker(store::WorkerRegistration{name, "host", 1, {"default"}, 8, "test", 5 * kSecond, {}});
}

using test::outlive;

std::vector<model::Run> runs_with(store::Store& s, const std::string& job_id, RunStatus status) {
  auto runs = s.jobs().runs_of(job_id);
  std::erase_if(runs, [&](const model::Run& r) { return r.status != status; });
  return runs;
}

// Pretends the scheduler last ran `us` ago: the schedule's next occurrence
// not yet materialised is that far in the past.
void rewind(store::Store& s, const std::string& job_id, int64_t us) {
  int64_t at = s.now() - us;
  s.connection().exec("UPDATE jobs SET next_fire_at = $2 WHERE id = $1", {job_id, at - at % 60'000'000});
}

store::SchedulerSettings settings(int64_t horizon_us);

// `a` takes the leader lease and makes the runs of what is due within
// `horizon_us`, as the leader's tick does.
void make_ahead(store::Store& s, const std::string& a, int64_t horizon_us) {
  auto epoch = s.scheduler().lead(a, 60 * kSecond);
  REQUIRE(epoch);
  s.scheduler().materialise(a, *epoch, settings(horizon_us));
}

store::SchedulerSettings settings(int64_t horizon_us) {
  store::SchedulerSettings st;
  st.horizon_us = horizon_us;
  st.misfire_after_us = 5 * kSecond;
  return st;
}

}  // namespace

TEST_CASE("schedule: submit --cron stores a schedule with its next fire time and no run") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  int64_t before = s->now();
  auto id = submit_schedule(*s, "*/5 * * * *");
  auto job = s->jobs().get_job(id);
  REQUIRE(job);
  REQUIRE(job->job.spec.schedule);
  CHECK(job->job.spec.schedule->cron == "*/5 * * * *");
  CHECK(job->job.spec.schedule->tz == "UTC");
  REQUIRE(job->job.next_fire_at);
  CHECK(*job->job.next_fire_at > before);
  CHECK(*job->job.next_fire_at % (300 * kSecond) == 0);
  CHECK(s->jobs().runs_of(id).empty());
  CHECK(s->schedules().list_schedules().size() == 1);
}

TEST_CASE("schedule: one leader at a time, a new epoch on takeover, and a deposed leader writes nothing") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a"), b = schedule_worker(*s, "b");
  auto job = submit_schedule(*s, "* * * * * *");
  auto epoch_a = s->scheduler().lead(a, 200'000);
  REQUIRE(epoch_a);
  CHECK_FALSE(s->scheduler().lead(b, 200'000));
  CHECK(s->scheduler().lead(a, 200'000) == epoch_a);  // renewal keeps the epoch
  auto workers = s->admin().list_workers();
  CHECK(std::count_if(workers.begin(), workers.end(), [](const model::Worker& w) { return w.leader; }) == 1);
  outlive(*s, 200'000);
  auto epoch_b = s->scheduler().lead(b, 10 * kSecond);
  REQUIRE(epoch_b);
  CHECK(*epoch_b == *epoch_a + 1);
  CHECK_FALSE(s->scheduler().lead(a, 200'000));
  auto fenced = s->scheduler().materialise(a, *epoch_a, settings(3 * kSecond));
  CHECK(fenced.fenced);
  CHECK(s->jobs().runs_of(job).empty());
  auto done = s->scheduler().materialise(b, *epoch_b, settings(3 * kSecond));
  CHECK_FALSE(done.fenced);
  CHECK(done.runs >= 3);
  s->scheduler().resign(b);
  CHECK(s->scheduler().lead(a, 200'000) == *epoch_b + 1);
}

TEST_CASE("schedule: a lease row another transaction has locked holds back no lead or materialise, and the leader still leads") {
  if (test::test_backend() != config::Backend::postgres) return;  // row locks are PostgreSQL's
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a"), b = schedule_worker(*s, "b");
  submit_schedule(*s, "* * * * * *");
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  REQUIRE(epoch);
  // An operator's SELECT ... FOR UPDATE, left open: the agents' lead waited
  // on it until statement_timeout, and their claims with it.
  auto other = db.open();
  other->connection().begin(store::TxMode::write);
  other->connection().query("SELECT holder FROM scheduler_lease WHERE id = 1 FOR UPDATE", {});
  std::atomic<bool> done{false};
  std::optional<int64_t> renewed, taken;
  bool fenced = true;
  std::string failed;
  std::thread steps([&] {
    try {
      renewed = s->scheduler().lead(a, 10 * kSecond);
      taken = s->scheduler().lead(b, 10 * kSecond);
      fenced = s->scheduler().materialise(a, *epoch, settings(3 * kSecond)).fenced;
    } catch (const std::exception& e) {
      failed = e.what();
    }
    done = true;
  });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const bool waited_for_the_lock = !done;
  other->connection().rollback();
  steps.join();
  CHECK_FALSE(waited_for_the_lock);
  CHECK_MESSAGE(failed.empty(), failed);
  CHECK(renewed == epoch);  // still the leader until its lease runs out
  CHECK_FALSE(taken);
  CHECK_FALSE(fenced);
}

TEST_CASE("schedule: occurrences become runs once each, a horizon ahead, at their fire time") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * * *");
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  REQUIRE(epoch);
  int64_t now = s->now();
  auto first = s->scheduler().materialise(a, *epoch, settings(5 * kSecond));
  auto runs = s->jobs().runs_of(job);
  CHECK(first.runs == static_cast<int64_t>(runs.size()));
  CHECK(runs.size() >= 4);
  CHECK(runs.size() <= 6);
  std::set<int64_t> occurrences;
  for (const auto& r : runs) {
    REQUIRE(r.occurrence);
    CHECK(*r.occurrence % kSecond == 0);
    CHECK(r.available_at == *r.occurrence);
    CHECK(*r.occurrence > now - kSecond);
    CHECK(*r.occurrence <= now + 6 * kSecond);
    CHECK(r.status == RunStatus::pending);
    occurrences.insert(*r.occurrence);
  }
  CHECK(occurrences.size() == runs.size());
  // Again at once: nothing doubled. Only an occurrence the horizon reached
  // in between is new, one a second (a loaded machine can take a second
  // between the calls; making them all again would be 4-6).
  auto again = s->scheduler().materialise(a, *epoch, settings(5 * kSecond));
  CHECK(again.runs <= (s->now() - now + kSecond - 1) / kSecond);
  CHECK(s->jobs().runs_of(job).size() == runs.size() + static_cast<size_t>(again.runs));
  // Even a leader that re-materialises the same span (a lost next_fire_at
  // update) cannot double an occurrence.
  s->connection().exec("UPDATE jobs SET next_fire_at = $2 WHERE id = $1", {job, *occurrences.begin()});
  s->scheduler().materialise(a, *epoch, settings(5 * kSecond));
  auto after = s->jobs().runs_of(job);
  std::set<int64_t> unique;
  for (const auto& r : after) unique.insert(*r.occurrence);
  CHECK(unique.size() == after.size());
}

TEST_CASE("schedule: misfire latest runs the newest missed occurrence and records the rest as skipped") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  // The store's clock half a minute past a minute: the newest occurrence
  // is ~30 s old, missed (misfire_after is 5 s), and none is on time in
  // the last 5 s or the 1 s horizon. (Filtering on-time ones by a reading
  // taken after materialise failed when a minute began ~5-6 s before it.)
  const int64_t into_minute = s->now() % (60 * kSecond);
  s->connection().shift_clock((90 * kSecond - into_minute) % (60 * kSecond));
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * *", model::Overlap::skip, model::Misfire::latest);
  rewind(*s, job, 10 * 60 * kSecond);
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  auto r = s->scheduler().materialise(a, *epoch, settings(kSecond));
  auto pending = runs_with(*s, job, RunStatus::pending);
  auto skipped = runs_with(*s, job, RunStatus::skipped);
  REQUIRE(pending.size() == 1);
  const int64_t now = s->now();
  const int64_t newest_minute = now - now % (60 * kSecond);
  CHECK(*pending[0].occurrence == newest_minute);
  REQUIRE(skipped.size() == 1);  // one row for the span
  CHECK(r.skipped >= 9);
  CHECK(skipped[0].error.find("misfire latest") != std::string::npos);
  CHECK(skipped[0].error.find("occurrences") != std::string::npos);
}

TEST_CASE("schedule: misfire skip runs none of the missed occurrences") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * *", model::Overlap::skip, model::Misfire::skip);
  rewind(*s, job, 10 * 60 * kSecond);
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(kSecond));
  for (const auto& run : runs_with(*s, job, RunStatus::pending)) CHECK(*run.occurrence > s->now() - 5 * kSecond);
  auto skipped = runs_with(*s, job, RunStatus::skipped);
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].error.find("misfire skip") != std::string::npos);
}

TEST_CASE("schedule: occurrences a backfill ran during an outage are not recorded as missed too") {
  // Found by a tester: schedule runs showed a run and a skip for each.
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * *", model::Overlap::skip, model::Misfire::skip);
  rewind(*s, job, 10 * 60 * kSecond);
  const int64_t from = *s->jobs().get_job(job)->job.next_fire_at;
  REQUIRE(s->schedules().backfill(job, from, from + 4 * 60 * kSecond).created == 5);
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  auto r = s->scheduler().materialise(a, *epoch, settings(kSecond));
  auto skipped = runs_with(*s, job, RunStatus::skipped);
  REQUIRE_FALSE(skipped.empty());
  for (const auto& run : skipped) CHECK(*run.occurrence > from + 4 * 60 * kSecond);
  const int64_t missed_before = s->now() - 5 * kSecond;
  int64_t missed = 0;
  for (int64_t t = from; t < missed_before; t += 60 * kSecond) ++missed;
  CHECK(r.skipped == missed - 5);
}

TEST_CASE("schedule: misfire all catches up within the window, rate-limited per tick") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  model::JobSpec spec;
  spec.command.argv = {"true"};
  model::ScheduleSpec sc;
  sc.cron = "* * * * *";
  sc.misfire = model::Misfire::all;
  sc.overlap = model::Overlap::buffer_all;
  sc.catchup_window_us = 30 * 60 * kSecond;
  spec.schedule = sc;
  auto job = s->jobs().submit({spec})[0].job_id;
  rewind(*s, job, 60 * 60 * kSecond);  // an hour missed, a 30-minute window
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  auto first = s->scheduler().materialise(a, *epoch, settings(kSecond));
  CHECK(first.more);
  CHECK(runs_with(*s, job, RunStatus::pending).size() == 10);  // kCatchUpPerTick
  auto skipped = runs_with(*s, job, RunStatus::skipped);
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].error.find("catch-up window") != std::string::npos);
  for (int i = 0; i < 5; ++i) s->scheduler().materialise(a, *epoch, settings(kSecond));
  auto pending = runs_with(*s, job, RunStatus::pending);
  CHECK(pending.size() >= 30);
  CHECK(pending.size() <= 32);
}

TEST_CASE("schedule: overlap skip holds the next occurrence at claim time and then records it skipped") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::skip);
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(2 * kSecond));
  // Just past the first occurrence, so that it starts before the next one
  // is due (one due before it started would wait its turn, not be skipped).
  int64_t first = INT64_MAX;
  for (const auto& r : runs_with(*s, job, RunStatus::pending)) first = std::min(first, *r.occurrence);
  outlive(*s, std::max<int64_t>(0, first - s->now()) + 50'000);
  auto claimed = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(claimed.size() == 1);  // one at a time: the earliest
  outlive(*s, 2'100'000);
  CHECK(s->agent().claim(a, {"default"}, 8, 10 * kSecond).empty());
  CHECK(s->scheduler().enforce_overlap() >= 1);
  auto skipped = runs_with(*s, job, RunStatus::skipped);
  REQUIRE_FALSE(skipped.empty());
  CHECK(skipped[0].error.find("overlap skip") != std::string::npos);
}

TEST_CASE("schedule: overlap skip skips only what came due while an earlier occurrence ran: misfire all catches up") {
  // Found by a tester: after every agent was down, misfire all ran the
  // oldest missed occurrence, and the others, due while nothing ran, were
  // skipped as overlapping it: it caught up one, as latest does.
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  model::ScheduleSpec sc;
  sc.catchup_window_us = 60 * kSecond;
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::skip, model::Misfire::all, sc);
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(3 * kSecond));
  outlive(*s, 3'100'000);  // three occurrences due, and none ran
  auto claimed = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(claimed.size() == 1);  // one at a time: the oldest
  s->scheduler().enforce_overlap();
  CHECK(runs_with(*s, job, RunStatus::skipped).empty());
  CHECK(runs_with(*s, job, RunStatus::pending).size() >= 2);  // they wait their turn
  // One that comes due while the oldest runs is skipped.
  s->scheduler().materialise(a, *epoch, settings(3 * kSecond));
  outlive(*s, 1'100'000);
  s->scheduler().enforce_overlap();
  auto skipped = runs_with(*s, job, RunStatus::skipped);
  REQUIRE_FALSE(skipped.empty());
  for (const auto& r : skipped) {
    CHECK(r.error.find("overlap skip") != std::string::npos);
    CHECK(*r.occurrence > claimed[0].claimed_at);
  }
}

TEST_CASE("schedule: overlap skip still skips an occurrence held by another job's run under the same key, however late it started") {
  // A reviewer: the exemption for an older occurrence started late made an
  // occurrence wait, possibly for hours, behind any run of its group that
  // started after it came due.
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  model::JobSpec other;
  other.command.argv = {"true"};
  other.concurrency_key = "shared";
  other.max_concurrent = 1;
  model::ScheduleSpec sc;
  model::JobSpec spec;
  spec.command.argv = {"true"};
  spec.concurrency_key = "shared";
  spec.max_concurrent = 1;
  sc.cron = "* * * * * *";
  sc.overlap = model::Overlap::skip;
  sc.misfire = model::Misfire::all;
  sc.catchup_window_us = 60 * kSecond;
  spec.schedule = sc;
  // Due first, ahead of every occurrence: submitted after the schedule, its
  // run came after the first occurrence when the submit crossed a second
  // (ASan, a loaded machine).
  s->jobs().submit({other});
  auto job = s->jobs().submit({spec})[0].job_id;
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(2 * kSecond));
  outlive(*s, 2'100'000);  // the occurrences due, the other job's run not started
  auto claimed = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(claimed.size() == 1);
  CHECK(claimed[0].job_id != job);  // the other job's, started after they came due
  s->scheduler().enforce_overlap();
  auto skipped = runs_with(*s, job, RunStatus::skipped);
  CHECK_FALSE(skipped.empty());
  for (const auto& r : skipped) CHECK(r.error.find("overlap skip") != std::string::npos);
}

TEST_CASE("schedule: overlap skip counts only a live lease, and a backlog of due occurrences runs the latest") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::skip, model::Misfire::latest);
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(3 * kSecond));
  outlive(*s, 1'100'000);
  // Its agent dies (or loses the store) while it runs: the lease runs out.
  auto claimed = s->agent().claim(a, {"default"}, 8, 200'000);
  REQUIRE(claimed.size() == 1);
  outlive(*s, 2'100'000);
  s->scheduler().enforce_overlap();
  for (const auto& r : runs_with(*s, job, RunStatus::skipped))
    CHECK(r.error.find("overlap skip") == std::string::npos);
  // Of the occurrences due now, the latest waits; the older were missed.
  int64_t now = s->now();
  auto pending = runs_with(*s, job, RunStatus::pending);
  std::vector<model::Run> due;
  for (const auto& r : pending)
    if (r.available_at <= now) due.push_back(r);
  REQUIRE(due.size() == 1);
  auto skipped = runs_with(*s, job, RunStatus::skipped);
  REQUIRE_FALSE(skipped.empty());
  for (const auto& r : skipped) {
    CHECK(r.error == "missed: a later occurrence runs instead (misfire latest)");
    CHECK(*r.occurrence < *due[0].occurrence);
  }
}

TEST_CASE("schedule: an occurrence made ahead that no agent started in time is missed: no claim takes it first") {
  // The leader made the runs a horizon ahead, then every agent stopped.
  // When one starts again, its claim may come before the leader's sweep.
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto misfire = model::Misfire::latest;
  std::string reason = "missed: a later occurrence runs instead (misfire latest)";
  model::ScheduleSpec sc;
  SUBCASE("latest") {}
  SUBCASE("skip") {
    misfire = model::Misfire::skip;
    reason = "missed: no agent started it in time (misfire skip)";
  }
  SUBCASE("all, past its catch-up window") {
    misfire = model::Misfire::all;
    reason = "missed: older than the catch-up window (misfire all)";
    sc.catchup_window_us = 6 * kSecond;
  }
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::skip, misfire, sc);
  auto epoch = s->scheduler().lead(a, 60 * kSecond, 5 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(3 * kSecond));
  auto made = runs_with(*s, job, RunStatus::pending);
  REQUIRE(made.size() >= 3);
  outlive(*s, 10 * kSecond);  // each is more than the 5 s threshold late
  int64_t newest = 0;
  for (const auto& r : made) newest = std::max(newest, *r.occurrence);
  // Under latest, not even the newest made: later ones are due that the
  // leader has not made yet. It ran, 10 minutes late after an outage, and
  // the newest was then skipped as overlap.
  CHECK(s->agent().claim(a, {"default"}, 8, 10 * kSecond).empty());
  CHECK(s->scheduler().enforce_overlap() == static_cast<int>(made.size()));
  auto skipped = runs_with(*s, job, RunStatus::skipped);
  CHECK(skipped.size() == made.size());
  for (const auto& r : skipped) CHECK(r.error == reason);
  if (misfire == model::Misfire::latest) {
    s->scheduler().materialise(a, *epoch, settings(3 * kSecond));
    s->scheduler().enforce_overlap();
    auto claimed = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
    REQUIRE(claimed.size() == 1);  // the newest due now
    CHECK(*claimed[0].occurrence > newest);
    CHECK(*claimed[0].occurrence <= s->now());
  }
}

TEST_CASE("schedule: an occurrence is missed only once late past the leader's threshold, and only before it starts") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::skip, model::Misfire::skip);
  auto epoch = s->scheduler().lead(a, 60 * kSecond, 30 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(3 * kSecond));
  outlive(*s, 10 * kSecond);  // late, but within the 30 s threshold
  auto first = s->agent().claim(a, {"default"}, 8, 5 * kSecond);
  REQUIRE(first.size() == 1);
  // Its agent died: once the lease runs out the run waits again, far past
  // the threshold, and is rescued rather than missed (it started in time).
  outlive(*s, 40 * kSecond);
  s->agent().rescue_expired();
  s->scheduler().enforce_overlap();
  auto rescued = s->agent().claim(a, {"default"}, 8, 5 * kSecond);
  REQUIRE(rescued.size() == 1);
  CHECK(rescued[0].run_id == first[0].run_id);
}

TEST_CASE("schedule: an occurrence given back or rescued starts before the newer ones due meanwhile") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::buffer_all);
  make_ahead(*s, a, 4 * kSecond);
  outlive(*s, 1'100'000);
  auto first = s->agent().claim(a, {"default"}, 8, 200'000);
  REQUIRE(first.size() == 1);  // one at a time: the earliest
  outlive(*s, 1'500'000);        // the next occurrence is due before it is given back
  SUBCASE("given back on drain") {
    store::Completion back;
    back.run_id = first[0].run_id;
    back.job_id = job;
    back.fence = first[0].fence;
    back.attempt = first[0].attempt;
    s->agent().release({back});
  }
  SUBCASE("rescued after its agent died") { REQUIRE(s->agent().rescue_expired() == 1); }
  outlive(*s, kSecond);
  auto next = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(next.size() == 1);
  CHECK(next[0].run_id == first[0].run_id);
}

TEST_CASE("schedule: under misfire latest, a rescued occurrence runs again rather than being skipped for a newer one") {
  // It started: only occurrences that never did are missed (found in review).
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::skip, model::Misfire::latest);
  make_ahead(*s, a, 4 * kSecond);
  outlive(*s, 1'100'000);
  auto first = s->agent().claim(a, {"default"}, 8, 200'000);
  REQUIRE(first.size() == 1);
  outlive(*s, 1'500'000);  // its agent died; a newer occurrence is due
  REQUIRE(s->agent().rescue_expired() == 1);
  s->scheduler().enforce_overlap();
  CHECK(s->jobs().get_run(first[0].run_id)->status == RunStatus::pending);
  auto again = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(again.size() == 1);
  CHECK(again[0].run_id == first[0].run_id);
}

TEST_CASE("schedule: overlap buffer-all waits for the running occurrence and then starts the next in order") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::buffer_all);
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(2 * kSecond));
  outlive(*s, 2'100'000);
  auto first = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(first.size() == 1);
  CHECK(s->agent().claim(a, {"default"}, 8, 10 * kSecond).empty());
  CHECK(s->scheduler().enforce_overlap() == 0);
  s->agent().complete({store::completion_of(first[0], RunStatus::succeeded)});
  auto second = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(second.size() == 1);
  CHECK(*second[0].occurrence > *first[0].occurrence);
  CHECK(runs_with(*s, job, RunStatus::skipped).empty());
}

TEST_CASE("schedule: overlap cancel-other asks the running occurrence to stop") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  submit_schedule(*s, "* * * * * *", model::Overlap::cancel_other);
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(2 * kSecond));
  outlive(*s, 1'100'000);
  auto first = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(first.size() == 1);
  outlive(*s, 1'100'000);
  CHECK(s->scheduler().enforce_overlap() == 1);
  auto leases = s->agent().heartbeat(a, model::WorkerState::active, 10 * kSecond);
  REQUIRE(leases.size() == 1);
  CHECK(leases[0].cancel_requested);

  // The agent stops it and reports a cancel: the run says why, not "by user".
  auto done = store::completion_of(first[0], RunStatus::cancelled);
  done.error = "cancelled by user";
  REQUIRE(s->agent().complete({done}) == std::vector<bool>{true});
  auto run = s->jobs().get_run(first[0].run_id);
  CHECK(run->status == RunStatus::cancelled);
  CHECK(run->error == "cancelled: a newer occurrence is due (overlap cancel-other)");
  CHECK(s->jobs().attempts(first[0].run_id).at(0).error == run->error);
}

TEST_CASE("schedule: update bumps the version and drops the occurrences made under the old one") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * * *");
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(30 * kSecond));
  REQUIRE(runs_with(*s, job, RunStatus::pending).size() >= 25);
  store::JobUpdate u;
  u.schedule.cron = "0 0 1 1 *";
  u.schedule.tz = "Europe/Berlin";
  auto updated = s->jobs().update_job(job, u);
  CHECK(updated.version == 2);
  CHECK(updated.dropped >= 25);
  CHECK(runs_with(*s, job, RunStatus::pending).empty());
  auto dropped = runs_with(*s, job, RunStatus::skipped);
  CHECK(dropped.size() >= 25);
  CHECK(dropped[0].error.find("version 2") != std::string::npos);
  auto view = s->jobs().get_job(job);
  CHECK(view->job.version == 2);
  CHECK(view->job.spec.schedule->tz == "Europe/Berlin");
  CHECK(s->agent().claim(a, {"default"}, 8, 10 * kSecond).empty());
  u = {};
  u.schedule.cron = "61 * * * *";
  CHECK_THROWS_AS(s->jobs().update_job(job, u), Error);
  CHECK(s->jobs().get_job(job)->job.version == 2);  // nothing written
}

TEST_CASE("schedule: trigger obeys the overlap policy unless forced, backfill fills a past span once") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "0 * * * *");
  auto run = s->schedules().trigger(job, false);
  auto claimed = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(claimed.size() == 1);
  CHECK(claimed[0].run_id == run);
  CHECK_THROWS_AS(s->schedules().trigger(job, false), Error);
  auto forced = s->schedules().trigger(job, true);
  auto second = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(second.size() == 1);
  CHECK(second[0].run_id == forced);
  CHECK_FALSE(second[0].occurrence);

  int64_t day = 86400 * kSecond;
  int64_t from = (s->now() / day - 2) * day;  // midnight UTC two days ago
  const int64_t before = s->now();
  auto filled = s->schedules().backfill(job, from, from + 3 * 3600 * kSecond);
  const int64_t after = s->now();
  CHECK(filled.occurrences == 4);  // 00:00, 01:00, 02:00, 03:00
  CHECK(filled.created == 4);
  // Due now, not two days ago: a run is late only from when it was made
  // (stats and check said weeks of lag, a tester); in occurrence order.
  std::vector<model::Run> backfilled;
  for (const auto& r : s->jobs().runs_of(job))
    if (r.occurrence && *r.occurrence >= from && *r.occurrence <= from + 3 * 3600 * kSecond) backfilled.push_back(r);
  REQUIRE(backfilled.size() == 4);
  std::sort(backfilled.begin(), backfilled.end(), [](const auto& x, const auto& y) { return x.id < y.id; });
  for (size_t i = 0; i < backfilled.size(); ++i) {
    CHECK(backfilled[i].available_at >= before);
    CHECK(backfilled[i].available_at <= after);
    CHECK(*backfilled[i].occurrence == from + static_cast<int64_t>(i) * 3600 * kSecond);
  }
  auto again = s->schedules().backfill(job, from, from + 3 * 3600 * kSecond);
  CHECK(again.created == 0);
  CHECK_THROWS_AS(s->schedules().backfill(job, from, from - 1), Error);
  CHECK_THROWS_AS(s->schedules().trigger("01ARZ3NDEKTSV4RRFFQ69G5FAV", false), Error);
}

TEST_CASE("schedule: a forced trigger is never held back, and while it runs it counts against the limit") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::skip);
  auto forced = s->schedules().trigger(job, true);
  auto claimed = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(claimed.size() == 1);
  CHECK(claimed[0].run_id == forced);
  // The schedule runs its one (--max-concurrent 1): a plain trigger would be skipped,
  CHECK_THROWS_AS(s->schedules().trigger(job, false), Error);
  // and the occurrences that come due wait for it, then are skipped.
  make_ahead(*s, a, 2 * kSecond);
  outlive(*s, 1'100'000);
  CHECK(s->agent().claim(a, {"default"}, 8, 10 * kSecond).empty());
  CHECK(s->scheduler().enforce_overlap() >= 1);
  // Another forced one starts beside it all the same.
  auto again = s->schedules().trigger(job, true);
  auto second = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(second.size() == 1);
  CHECK(second[0].run_id == again);
}

TEST_CASE("schedule: an occurrence waiting for its retry is shown by schedule runs and schedules ls") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * * *");
  // An occurrence of now, and no other run: the leader's horizon of a
  // second over a per-second schedule made one run ahead or two, as the
  // second fell (under ASan, two: the newer, ahead, was the latest run).
  const std::string occurrence = s->schedules().trigger(job, false);
  auto claimed = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(claimed.size() == 1);
  REQUIRE(claimed[0].run_id == occurrence);
  auto failed = store::completion_of(claimed[0], RunStatus::pending);  // a retry, in 15 s
  failed.outcome = model::AttemptOutcome::failed;
  failed.retry_delay_us = 15 * kSecond;
  REQUIRE(s->agent().complete({failed}) == std::vector<bool>{true});
  auto shown = s->schedules().schedule_runs(job, 20);
  CHECK(std::any_of(shown.begin(), shown.end(), [&](const model::Run& r) { return r.id == claimed[0].run_id; }));
  for (const auto& v : s->schedules().list_schedules()) {
    REQUIRE(v.last_run);
    CHECK(v.last_run->id == claimed[0].run_id);
  }
}

TEST_CASE("schedule: resume continues from now and skips what came due while paused") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * * *");
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(2 * kSecond));
  s->jobs().set_paused(job, true);
  outlive(*s, 2'100'000);
  CHECK(s->agent().claim(a, {"default"}, 8, 10 * kSecond).empty());
  // The leader's sweep leaves them for resume: it recorded them as
  // "missed: a later occurrence runs instead" though none ran.
  CHECK(s->scheduler().enforce_overlap() == 0);
  int64_t resumed = s->now();
  s->jobs().set_paused(job, false);
  CHECK(s->agent().claim(a, {"default"}, 8, 10 * kSecond).empty());
  auto skipped = runs_with(*s, job, RunStatus::skipped);
  CHECK(skipped.size() >= 2);
  for (const auto& r : skipped) CHECK_MESSAGE(r.error.starts_with("paused when it came due"), r.error);
  CHECK(*s->jobs().get_job(job)->job.next_fire_at > resumed);

  // Paused long past what was made ahead: the occurrences that had no run
  // yet are recorded as one skipped run (they left no trace before).
  s->jobs().set_paused(job, true);
  const int64_t paused_at = s->now();
  outlive(*s, 10 * kSecond);
  s->jobs().set_paused(job, false);
  int64_t span = 0;
  for (const auto& r : runs_with(*s, job, RunStatus::skipped))
    if (*r.occurrence > paused_at && r.error.starts_with("paused when it came due (")) {
      ++span;
      CHECK(r.error.find(" occurrences, through ") != std::string::npos);
    }
  CHECK(span == 1);
}

TEST_CASE("schedule: overlap buffer-one keeps one occurrence waiting and skips the others") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::buffer_one);
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(3 * kSecond));
  outlive(*s, 3'100'000);
  auto first = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(first.size() == 1);
  CHECK(s->scheduler().enforce_overlap() >= 1);
  auto skipped = runs_with(*s, job, RunStatus::skipped);
  REQUIRE_FALSE(skipped.empty());
  CHECK(skipped[0].error.find("buffer-one") != std::string::npos);
  int64_t now = s->now();
  int waiting = 0;
  for (const auto& r : runs_with(*s, job, RunStatus::pending)) waiting += r.available_at <= now ? 1 : 0;
  CHECK(waiting == 1);
  s->agent().complete({store::completion_of(first[0], RunStatus::succeeded)});
  auto second = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(second.size() == 1);
  CHECK(*second[0].occurrence > *first[0].occurrence);
}

TEST_CASE("schedule: backfill runs what was skipped, and not what ran under an earlier version") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  SUBCASE("an update in between does not make backfill run an occurrence twice") {
    auto job = submit_schedule(*s, "0 * * * *");
    int64_t day = 86400 * kSecond;
    int64_t from = (s->now() / day - 2) * day;
    CHECK(s->schedules().backfill(job, from, from + 3 * 3600 * kSecond).created == 4);
    store::JobUpdate u;
    u.priority = model::Priority::high;
    s->jobs().update_job(job, u);
    auto again = s->schedules().backfill(job, from, from + 3 * 3600 * kSecond);
    CHECK(again.occurrences == 4);
    CHECK(again.created == 0);
  }
  SUBCASE("every occurrence of a span the scheduler skipped, the first included") {
    auto job = submit_schedule(*s, "* * * * *", model::Overlap::skip, model::Misfire::skip);
    rewind(*s, job, 10 * 60 * kSecond);
    auto epoch = s->scheduler().lead(a, 10 * kSecond);
    s->scheduler().materialise(a, *epoch, settings(kSecond));
    auto skipped = runs_with(*s, job, RunStatus::skipped);
    REQUIRE(skipped.size() == 1);
    int64_t first = *skipped[0].occurrence;
    auto filled = s->schedules().backfill(job, first, first + 5 * 60 * kSecond);
    CHECK(filled.occurrences == 6);
    CHECK(filled.created == 6);
  }
}

TEST_CASE("schedule: cancel acts on the run that runs, not on an occurrence made ahead") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto job = submit_schedule(*s, "* * * * *", model::Overlap::allow);
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(120 * kSecond));
  REQUIRE(runs_with(*s, job, RunStatus::pending).size() >= 2);  // made ahead, not due
  auto now_run = s->schedules().trigger(job, true);
  auto claimed = s->agent().claim(a, {"default"}, 8, 10 * kSecond);
  REQUIRE(claimed.size() == 1);
  REQUIRE(claimed[0].run_id == now_run);
  CHECK(s->jobs().get_job(job)->latest_run->id == now_run);
  CHECK(s->jobs().cancel(job) == store::CancelOutcome::requested);
  auto leases = s->agent().heartbeat(a, model::WorkerState::active, 10 * kSecond);
  REQUIRE(leases.size() == 1);
  CHECK(leases[0].cancel_requested);
  CHECK(runs_with(*s, job, RunStatus::cancelled).empty());
}

TEST_CASE("schedule: a schedule this host cannot evaluate is reported and left in place, and the others fire") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto good = submit_schedule(*s, "* * * * * *");
  auto broken = submit_schedule(*s, "* * * * * *");
  // As if another host with a zone this one lacks had written it.
  s->connection().exec("UPDATE jobs SET tz = 'Mars/Olympus' WHERE id = $1", {broken});
  auto before = s->jobs().get_job(broken)->job.next_fire_at;
  auto epoch = s->scheduler().lead(a, 10 * kSecond);
  auto r = s->scheduler().materialise(a, *epoch, settings(5 * kSecond));
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].find(broken) != std::string::npos);
  CHECK(r.errors[0].find("Mars/Olympus") != std::string::npos);
  CHECK(s->jobs().get_job(broken)->job.next_fire_at == before);
  CHECK(s->jobs().runs_of(broken).empty());
  CHECK(runs_with(*s, good, RunStatus::pending).size() >= 4);
}

namespace {

std::set<int64_t> occurrences_of(store::Store& s, const std::string& job_id, RunStatus status) {
  std::set<int64_t> out;
  for (const auto& r : runs_with(s, job_id, status))
    if (r.occurrence) out.insert(*r.occurrence);
  return out;
}

}  // namespace

TEST_CASE("schedule: a bounded schedule fires only between --starts-at and --ends-at, then ends") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  const int64_t second = (s->now() / kSecond + 1) * kSecond;
  model::ScheduleSpec bounds;
  bounds.starts_at_us = second + 3 * kSecond;
  bounds.ends_at_us = second + 7 * kSecond;
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::skip, model::Misfire::latest, bounds);
  CHECK(s->jobs().get_job(job)->job.next_fire_at == *bounds.starts_at_us);  // inclusive
  auto epoch = s->scheduler().lead(a, 60 * kSecond);
  s->scheduler().materialise(a, *epoch, settings(30 * kSecond));
  std::set<int64_t> want;
  for (int64_t t = *bounds.starts_at_us; t <= *bounds.ends_at_us; t += kSecond) want.insert(t);
  CHECK(occurrences_of(*s, job, RunStatus::pending) == want);
  auto ended = s->jobs().get_job(job)->job;
  CHECK_FALSE(ended.next_fire_at);
  CHECK(ended.fired == 5);
  CHECK(s->scheduler().materialise(a, *epoch, settings(30 * kSecond)).runs == 0);

  SUBCASE("an earlier --ends-at drops the runs made past it, and they no longer count") {
    store::JobUpdate u;
    u.schedule.ends_at = util::format_time(second + 4 * kSecond);
    auto r = s->jobs().update_job(job, u);
    CHECK(r.dropped == 3);
    CHECK(occurrences_of(*s, job, RunStatus::pending) == std::set<int64_t>{second + 3 * kSecond, second + 4 * kSecond});
    CHECK(s->jobs().get_job(job)->job.fired == 2);
  }
  SUBCASE("a later --ends-at goes on where it ended") {
    store::JobUpdate u;
    u.schedule.ends_at = util::format_time(second + 9 * kSecond);
    CHECK(s->jobs().update_job(job, u).dropped == 0);
    CHECK(s->jobs().get_job(job)->job.next_fire_at >= s->now());
    s->scheduler().materialise(a, *epoch, settings(30 * kSecond));
    auto made = occurrences_of(*s, job, RunStatus::pending);
    CHECK(made.size() >= 6);
    CHECK(*made.rbegin() == second + 9 * kSecond);
  }
  SUBCASE("removing the bounds lets it fire for ever") {
    store::JobUpdate u;
    u.schedule.starts_at = "";
    u.schedule.ends_at = "";
    s->jobs().update_job(job, u);
    auto sc = *s->jobs().get_job(job)->job.spec.schedule;
    CHECK_FALSE(sc.starts_at_us);
    CHECK_FALSE(sc.ends_at_us);
    s->scheduler().materialise(a, *epoch, settings(30 * kSecond));
    CHECK(*occurrences_of(*s, job, RunStatus::pending).rbegin() > s->now() + 20 * kSecond);
  }
}

TEST_CASE("schedule: --max-runs makes that many occurrences in all, across ticks and updates") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  model::ScheduleSpec bounds;
  bounds.max_runs = 3;
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::skip, model::Misfire::latest, bounds);
  auto epoch = s->scheduler().lead(a, 60 * kSecond);
  // Two ticks: the limit counts what the first made.
  s->scheduler().materialise(a, *epoch, settings(kSecond));
  CHECK(s->jobs().get_job(job)->job.fired >= 1);
  s->scheduler().materialise(a, *epoch, settings(30 * kSecond));
  CHECK(runs_with(*s, job, RunStatus::pending).size() == 3);
  CHECK(s->jobs().get_job(job)->job.fired == 3);
  CHECK_FALSE(s->jobs().get_job(job)->job.next_fire_at);
  // Triggers and backfills are extra: they neither count nor are refused.
  s->schedules().trigger(job, true);
  CHECK(s->jobs().get_job(job)->job.fired == 3);

  store::JobUpdate u;
  u.schedule.max_runs = 5;
  CHECK(s->jobs().update_job(job, u).dropped == 0);
  s->scheduler().materialise(a, *epoch, settings(30 * kSecond));
  CHECK(occurrences_of(*s, job, RunStatus::pending).size() == 5);
  CHECK(s->jobs().get_job(job)->job.fired == 5);

  SUBCASE("a new --cron drops the waiting occurrences and gives them back") {
    u = {};
    u.schedule.cron = "*/2 * * * * *";
    CHECK(s->jobs().update_job(job, u).dropped == 5);
    CHECK(s->jobs().get_job(job)->job.fired == 0);
    s->scheduler().materialise(a, *epoch, settings(30 * kSecond));
    CHECK(s->jobs().get_job(job)->job.fired == 5);
  }
  SUBCASE("0 removes the limit") {
    u.schedule.max_runs = 0;
    s->jobs().update_job(job, u);
    CHECK_FALSE(s->jobs().get_job(job)->job.spec.schedule->max_runs);
    s->scheduler().materialise(a, *epoch, settings(30 * kSecond));
    CHECK(occurrences_of(*s, job, RunStatus::pending).size() > 20);
  }
}

TEST_CASE("schedule: backfill refuses a span reaching past now, and writes nothing") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  const int64_t hour = 3600 * kSecond;
  const int64_t from = (s->now() / hour - 2) * hour;  // the top of the hour before last
  auto job = submit_schedule(*s, "0 * * * *");
  const auto before = s->connection().query("SELECT count(*) FROM runs").at(0).i64(0);
  try {
    s->schedules().backfill(job, from, from + 12 * hour);
    FAIL("a --to in the future was taken");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::usage);
    CHECK(std::string(e.what()).ends_with("is in the future"));
  }
  CHECK(s->connection().query("SELECT count(*) FROM runs").at(0).i64(0) == before);
  CHECK(s->schedules().backfill(job, from, from + hour).created == 2);
}

TEST_CASE("schedule: backfill keeps to the schedule's bounds") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  const int64_t day = 86400 * kSecond, hour = 3600 * kSecond;
  const int64_t from = (s->now() / day - 2) * day;  // midnight UTC two days ago
  model::ScheduleSpec bounds;
  bounds.starts_at_us = from + hour;
  bounds.ends_at_us = from + 2 * hour + 1;
  auto job = submit_schedule(*s, "0 * * * *", model::Overlap::skip, model::Misfire::latest, bounds);
  auto r = s->schedules().backfill(job, from, from + 5 * hour);
  CHECK(r.cut);
  CHECK(r.occurrences == 2);  // 01:00 and 02:00
  CHECK(occurrences_of(*s, job, RunStatus::pending) == std::set<int64_t>{from + hour, from + 2 * hour});
  CHECK(s->jobs().get_job(job)->job.fired == 0);
  auto inside = s->schedules().backfill(job, from + hour, from + 2 * hour);
  CHECK_FALSE(inside.cut);
  CHECK(inside.created == 0);
}

TEST_CASE("schedule: bounds and pauses never make or count an occurrence twice") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto a = schedule_worker(*s, "a");
  auto epoch = s->scheduler().lead(a, 60 * kSecond);
  model::ScheduleSpec bounds;
  bounds.max_runs = 5;
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::skip, model::Misfire::latest, bounds);

  SUBCASE("a resume goes on after the occurrences made ahead") {
    s->scheduler().materialise(a, *epoch, settings(2 * kSecond));
    const auto made = occurrences_of(*s, job, RunStatus::pending).size();
    REQUIRE(made >= 2);
    s->jobs().set_paused(job, true);
    s->jobs().set_paused(job, false);
    s->scheduler().materialise(a, *epoch, settings(30 * kSecond));
    CHECK(occurrences_of(*s, job, RunStatus::pending).size() == 5);
    CHECK(s->jobs().get_job(job)->job.fired == 5);
  }
  SUBCASE("an occurrence that ran, its retry due while paused, still counts") {
    s->scheduler().materialise(a, *epoch, settings(2 * kSecond));
    const int64_t made = s->jobs().get_job(job)->job.fired;
    const int64_t first = *occurrences_of(*s, job, RunStatus::pending).begin();
    // Only `first` is due: its run failed once and waits for its retry.
    s->connection().exec("UPDATE runs SET available_at = $2 WHERE job_id = $1", {job, s->now() + 60 * kSecond});
    s->connection().exec("UPDATE runs SET attempts = 1, available_at = $2 WHERE job_id = $1 AND occurrence = $3",
                         {job, s->now() - kSecond, first});
    s->jobs().set_paused(job, true);
    s->jobs().set_paused(job, false);
    CHECK_FALSE(occurrences_of(*s, job, RunStatus::pending).count(first));
    CHECK(s->jobs().get_job(job)->job.fired == made);
  }
  SUBCASE("a lower --max-runs drops the newest occurrences made past it") {
    s->scheduler().materialise(a, *epoch, settings(30 * kSecond));
    auto before = occurrences_of(*s, job, RunStatus::pending);
    REQUIRE(before.size() == 5);
    store::JobUpdate u;
    u.schedule.max_runs = 3;
    CHECK(s->jobs().update_job(job, u).dropped == 2);
    auto after = occurrences_of(*s, job, RunStatus::pending);
    CHECK(after == std::set<int64_t>(before.begin(), std::next(before.begin(), 3)));
    CHECK(s->jobs().get_job(job)->job.fired == 3);
    CHECK_FALSE(s->jobs().get_job(job)->job.next_fire_at);
  }
  SUBCASE("a new name with a new bound keeps what was made") {
    s->scheduler().materialise(a, *epoch, settings(2 * kSecond));
    const auto made = occurrences_of(*s, job, RunStatus::pending);
    store::JobUpdate u;
    u.name = "renamed";
    u.schedule.max_runs = 10;
    CHECK(s->jobs().update_job(job, u).dropped == 0);
    CHECK(occurrences_of(*s, job, RunStatus::pending) == made);
  }
}

TEST_CASE("schedule: an earlier or removed --starts-at brings a schedule that has not begun forward") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  model::ScheduleSpec bounds;
  bounds.starts_at_us = s->now() + 3600 * kSecond;
  auto job = submit_schedule(*s, "* * * * * *", model::Overlap::skip, model::Misfire::latest, bounds);
  CHECK(*s->jobs().get_job(job)->job.next_fire_at >= *bounds.starts_at_us);
  store::JobUpdate u;
  u.schedule.starts_at = util::format_time(s->now() + 60 * kSecond);
  s->jobs().update_job(job, u);
  auto next = *s->jobs().get_job(job)->job.next_fire_at;
  CHECK(next <= s->now() + 61 * kSecond);
  CHECK(next >= s->now() + 59 * kSecond);
  u.schedule.starts_at = "";
  s->jobs().update_job(job, u);
  CHECK(*s->jobs().get_job(job)->job.next_fire_at <= s->now() + 2 * kSecond);
  // An @every schedule counts from its new start.
  bounds.starts_at_us = s->now() + 3600 * kSecond;
  auto every = submit_schedule(*s, "@every 10s", model::Overlap::skip, model::Misfire::latest, bounds);
  u.schedule.starts_at = "";
  s->jobs().update_job(every, u);
  CHECK(*s->jobs().get_job(every)->job.next_fire_at <= s->now() + 11 * kSecond);
}

TEST_CASE("schedule: overlap reads the occurrences of busy groups, not every waiting one for each, however stale the statistics") {
  // A herd: a thousand schedules' occurrences made within the minute,
  // before ANALYZE saw any. PostgreSQL's plan for the overlap pass, made
  // for a nearly empty table, scanned every waiting occurrence for each
  // waiting occurrence: 9 s a leader tick at 5,500, and no more runs were
  // made meanwhile (scripts/bench, the herd figure).
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto& c = s->connection();
  auto a = schedule_worker(*s, "a");
  auto epoch = s->scheduler().lead(a, 60 * kSecond);
  constexpr int kSchedules = 1000;
  model::JobSpec spec;
  spec.command.argv = {"true"};
  model::ScheduleSpec sc;
  sc.cron = "* * * * * *";
  sc.overlap = model::Overlap::skip;
  spec.schedule = sc;
  s->jobs().submit(std::vector<model::JobSpec>(kSchedules, spec));
  test::analyze(c);
  for (int i = 0; i < 4; ++i) s->scheduler().materialise(a, *epoch, settings(3 * kSecond));
  const int64_t waiting = c.query("SELECT count(*) FROM runs WHERE status = 'pending'").at(0).i64(0);
  REQUIRE(waiting >= 2 * kSchedules);
  // One of them runs, and its next occurrence comes due while it does:
  // that one is skipped. The next made after the run started (the passes
  // above may have taken seconds, under ASan: the occurrences made then
  // were due before the claim, and one due before the run started does
  // not count as overlapping it).
  outlive(*s, 1'100'000);
  auto claimed = s->agent().claim(a, {"default"}, 1, 60 * kSecond);
  REQUIRE(claimed.size() == 1);
  s->scheduler().materialise(a, *epoch, settings(3 * kSecond));
  const auto next = c.query("SELECT min(available_at) FROM runs WHERE job_id = $1 AND status = 'pending' "
                            "AND available_at > NOW_US",
                            {claimed[0].job_id});
  REQUIRE_FALSE(next.at(0).is_null(0));
  outlive(*s, next[0].i64(0) - s->now());
  const bool counted = test::counts_reads(c);
  const int64_t before = counted ? test::tuples_read(c, "runs") : 0;
  CHECK(s->scheduler().enforce_overlap() >= 1);
  CHECK(runs_with(*s, claimed[0].job_id, RunStatus::skipped).size() >= 1);
  // In proportion to the waiting occurrences (the misfire pass reads the
  // due ones), not to their square.
  if (counted) CHECK(test::tuples_read(c, "runs") - before < 10 * waiting);
  // This server's planner did not choose the herd's plan here, whatever was
  // tried (a leader planning while the table was empty included); what
  // keeps any plan from it is the statement's shape, so that is checked
  // too: the generic plan (the one kept for a prepared statement; the call
  // above prepared it, on its second use) looks each busy group's runs
  // up, and updates the rows by where they are, never scanning the
  // waiting runs for them.
  if (c.dialect() != store::Dialect::postgres) return;
  const std::string plan = test::prepared_plan(c, "UPDATE runs%error = $2%", "'skip', 'x'");
  CAPTURE(plan);
  CHECK(plan.find("Tid Scan on runs") != std::string::npos);
  CHECK(plan.find("Index Cond: ((group_key = ") != std::string::npos);
}

TEST_CASE("schedule: the leader's overlap sweep reads no job without a waiting occurrence") {
  // Every job is overlap skip and misfire latest unless told otherwise.
  // Asked for the jobs of that policy first, SQLite read every job at
  // each sweep: an idle agent with 200,000 jobs in its history spent 75 ms
  // of CPU a second on it.
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto& c = s->connection();
  const bool pg = c.dialect() == store::Dialect::postgres;
  if (!test::reads_counted(c)) return;
  model::JobSpec history;
  history.command.argv = {"true"};
  s->jobs().submit(std::vector<model::JobSpec>(3000, history));
  test::analyze(c);
  for (int i = 0; i < 3; ++i) {  // prepared on its second use; the third sweep runs the kept plan
    CAPTURE(i);
    const int64_t before = test::reads(c, "jobs");
    CHECK(s->scheduler().enforce_overlap() == 0);
    CHECK(test::reads(c, "jobs") - before < (pg ? 100 : 2000));  // 42,000 steps when SQLite read every job
  }
}
