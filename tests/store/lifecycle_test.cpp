// A job's life after submit: update with versions, soft-delete and restore,
// and the audit trail, on the backend JOBCTL_TEST_BACKEND names.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "common/store/admin.hpp"
#include "common/store/agent.hpp"
#include "common/store/dead_letter.hpp"
#include "common/store/jobs.hpp"
#include "common/store/scheduler.hpp"
#include "common/store/schedules.hpp"
#include "common/util/error.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using model::Priority;
using model::RunStatus;

namespace {

using test::kSecond;

std::string submit(store::Store& s, const std::string& name, Priority p = Priority::normal) {
  model::JobSpec spec;
  spec.name = name;
  spec.priority = p;
  spec.command.argv = {"true"};
  return s.jobs().submit({spec})[0].job_id;
}

std::string submit_cron_job(store::Store& s, const std::string& cron) {
  model::JobSpec spec;
  spec.command.argv = {"true"};
  spec.schedule = model::ScheduleSpec{};
  spec.schedule->cron = cron;
  return s.jobs().submit({spec})[0].job_id;
}

std::string lifecycle_worker(store::Store& s) {
  return s.agent().register_worker(store::WorkerRegistration{"w", "host", 1, {"default", "other"}, 8, "test", 30 * kSecond, {}});
}

std::vector<std::string> actions(store::Store& s, const std::string& job_id) {
  std::vector<std::string> out;
  for (const auto& e : s.jobs().history(job_id, 100)) out.push_back(e.action);
  return out;
}

store::SchedulerSettings settings() {
  store::SchedulerSettings st;
  st.horizon_us = 30 * kSecond;
  st.misfire_after_us = 5 * kSecond;
  return st;
}

}  // namespace

TEST_CASE("lifecycle: raising a pending job's priority moves it ahead in the claim order") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto w = lifecycle_worker(*s);
  auto first = submit(*s, "first");
  auto second = submit(*s, "second");
  store::JobUpdate u;
  u.priority = Priority::critical;
  auto r = s->jobs().update_job(second, u);
  CHECK(r.changed);
  CHECK(r.version == 2);
  auto claimed = s->agent().claim(w, {"default"}, 1, 10 * kSecond);
  REQUIRE(claimed.size() == 1);
  CHECK(claimed[0].job_id == second);
  CHECK(claimed[0].spec.priority == Priority::critical);
}

TEST_CASE("lifecycle: a pending run takes the new definition, a running one keeps the version it started with") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto w = lifecycle_worker(*s);
  auto running = submit(*s, "running");
  auto waiting = submit(*s, "waiting");
  auto claimed = s->agent().claim(w, {"default"}, 1, 10 * kSecond);
  REQUIRE(claimed.size() == 1);
  REQUIRE(claimed[0].job_id == running);

  store::JobUpdate u;
  u.command = model::Command{{"echo", "new"}, false, std::nullopt};
  u.queue = "other";
  u.set_env = {{"MODE", "fast"}};
  s->jobs().update_job(running, u);
  s->jobs().update_job(waiting, u);
  CHECK(s->jobs().runs_of(running).at(0).job_version == 1);
  CHECK(s->jobs().runs_of(waiting).at(0).job_version == 2);
  CHECK(s->agent().claim(w, {"default"}, 8, 10 * kSecond).empty());  // the waiting run moved to "other"
  auto next = s->agent().claim(w, {"other"}, 8, 10 * kSecond);
  REQUIRE(next.size() == 1);
  CHECK(next[0].job_id == waiting);
  CHECK(next[0].spec.command.argv == std::vector<std::string>{"echo", "new"});
  CHECK(next[0].spec.env.at("MODE") == "fast");
  CHECK(s->jobs().runs_of(waiting).at(0).job_version == 2);

  SUBCASE("a retry of the old run is claimed in the new queue, with the new version") {
    auto done = store::completion_of(claimed[0], RunStatus::pending);
    done.outcome = model::AttemptOutcome::failed;
    REQUIRE(s->agent().complete({done}) == std::vector<bool>{true});
    CHECK(s->agent().claim(w, {"default"}, 8, 10 * kSecond).empty());
    auto again = s->agent().claim(w, {"other"}, 8, 10 * kSecond);
    REQUIRE(again.size() == 1);
    CHECK(again[0].spec.command.argv == std::vector<std::string>{"echo", "new"});
    auto tries = s->jobs().attempts(claimed[0].run_id);
    REQUIRE(tries.size() == 2);
    CHECK(tries[0].job_version == 1);
    CHECK(tries[1].job_version == 2);
  }
}

TEST_CASE("lifecycle: --if-version refuses a stale update and writes nothing, not even an audit row") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto job = submit(*s, "j");
  store::JobUpdate u;
  u.priority = Priority::high;
  u.if_version = 1;
  CHECK(s->jobs().update_job(job, u).version == 2);
  u.priority = Priority::low;
  try {
    s->jobs().update_job(job, u);  // still says version 1
    FAIL("a stale update went through");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::conflict);
    CHECK(std::string(e.what()).find("changed since you read it") != std::string::npos);
  }
  auto v = s->jobs().get_job(job);
  CHECK(v->job.version == 2);
  CHECK(v->job.spec.priority == Priority::high);
  CHECK(actions(*s, job) == std::vector<std::string>{"update", "create"});

  SUBCASE("a rejected value writes nothing either") {
    store::JobUpdate bad;
    bad.retry.max_retries = -1;
    CHECK_THROWS_AS(s->jobs().update_job(job, bad), Error);
    bad = {};
    bad.queue = "";
    CHECK_THROWS_AS(s->jobs().update_job(job, bad), Error);
    bad = {};
    bad.schedule.cron = "* * * * *";  // not a schedule
    CHECK_THROWS_AS(s->jobs().update_job(job, bad), Error);
    CHECK(s->jobs().get_job(job)->job.version == 2);
    CHECK(actions(*s, job) == std::vector<std::string>{"update", "create"});
  }
  SUBCASE("an update that changes nothing makes no version") {
    store::JobUpdate same;
    same.priority = Priority::high;
    auto r = s->jobs().update_job(job, same);
    CHECK_FALSE(r.changed);
    CHECK(r.version == 2);
    CHECK(actions(*s, job).size() == 2);
  }
}

TEST_CASE("lifecycle: a schedule's new cron drops the old version's occurrences and fires on the new times") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto w = lifecycle_worker(*s);
  auto job = submit_cron_job(*s, "* * * * * *");
  auto epoch = s->scheduler().lead(w, 10 * kSecond);
  s->scheduler().materialise(w, *epoch, settings());
  store::JobUpdate u;
  u.schedule.cron = "*/10 * * * * *";
  auto r = s->jobs().update_job(job, u);
  CHECK(r.dropped >= 25);
  s->scheduler().materialise(w, *epoch, settings());
  auto runs = s->jobs().runs_of(job);
  int new_version = 0;
  for (const auto& run : runs) {
    if (run.status != RunStatus::pending) continue;
    CHECK(run.job_version == 2);
    CHECK(*run.occurrence % (10 * kSecond) == 0);
    ++new_version;
  }
  CHECK(new_version >= 2);
}

TEST_CASE("lifecycle: delete stops a schedule and keeps its history, and restore starts it again from now") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto w = lifecycle_worker(*s);
  auto job = submit_cron_job(*s, "* * * * * *");
  auto epoch = s->scheduler().lead(w, 10 * kSecond);
  s->scheduler().materialise(w, *epoch, settings());
  const auto before = s->jobs().runs_of(job).size();
  REQUIRE(before >= 25);

  const auto gone = s->jobs().delete_job(job, store::CancelRunning::no);
  CHECK(gone.skipped + gone.cancelled == static_cast<int>(before));
  auto v = s->jobs().get_job(job);
  REQUIRE(v);  // still there
  CHECK(v->job.deleted_at);
  CHECK(s->jobs().runs_of(job).size() == before);  // history kept
  // Made ahead for times still to come: skipped, so a restore makes them
  // pending again; one that came due meanwhile is cancelled.
  int skipped = 0;
  for (const auto& run : s->jobs().runs_of(job)) {
    CHECK((run.status == RunStatus::skipped || run.status == RunStatus::cancelled));
    if (run.status == RunStatus::skipped) {
      CHECK(run.error == "skipped: the job was deleted");
      ++skipped;
    }
  }
  CHECK(skipped >= static_cast<int>(before) - 2);
  CHECK(gone.skipped == skipped);  // not counted as cancelled (a tester saw "6 runs cancelled" for six skips)
  s->scheduler().materialise(w, *epoch, settings());
  CHECK(s->jobs().runs_of(job).size() == before);  // nothing new
  CHECK(s->agent().claim(w, {"default"}, 8, 10 * kSecond).empty());
  CHECK(s->schedules().list_schedules().empty());
  store::JobFilter live, deleted;
  deleted.deleted = true;
  CHECK(s->jobs().list_jobs(live).empty());
  REQUIRE(s->jobs().list_jobs(deleted).size() == 1);
  CHECK(s->jobs().list_jobs(deleted)[0].job.id == job);

  // A deleted job refuses the commands that would make it run.
  CHECK_THROWS_AS(s->jobs().delete_job(job, store::CancelRunning::no), Error);
  CHECK_THROWS_AS(s->schedules().trigger(job, true), Error);
  CHECK_THROWS_AS(s->jobs().set_paused(job, true), Error);
  store::JobUpdate raise;
  raise.priority = Priority::high;
  CHECK_THROWS_AS(s->jobs().update_job(job, raise), Error);

  s->jobs().restore_job(job);
  CHECK_FALSE(s->jobs().get_job(job)->job.deleted_at);
  CHECK_THROWS_AS(s->jobs().restore_job(job), Error);
  s->scheduler().materialise(w, *epoch, settings());
  // The occurrences the delete took back are made again: none is lost.
  int64_t now = s->now();
  int64_t pending = 0;
  for (const auto& run : s->jobs().runs_of(job))
    if (run.status == RunStatus::pending) {
      CHECK(*run.occurrence > now - 2 * kSecond);
      ++pending;
    }
  CHECK(pending >= 28);
  // ...each once: an occurrence the delete skipped waits again in its own
  // run rather than beside a second one (schedule runs would show both).
  std::map<int64_t, int> per_occurrence;
  for (const auto& run : s->jobs().runs_of(job)) ++per_occurrence[*run.occurrence];
  for (const auto& [at, count] : per_occurrence) CHECK_MESSAGE(count == 1, "occurrence " << at);
  CHECK(s->jobs().list_jobs(live).size() == 1);
}

TEST_CASE("lifecycle: delete lets a running run finish unless asked to cancel it") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto w = lifecycle_worker(*s);
  auto job = submit(*s, "long");
  REQUIRE(s->agent().claim(w, {"default"}, 8, 10 * kSecond).size() == 1);
  SUBCASE("default: it finishes") {
    auto claimed = s->agent().claim(w, {"default"}, 8, 10 * kSecond);
    CHECK(claimed.empty());  // the one run is already running
    CHECK(s->jobs().delete_job(job, store::CancelRunning::no).cancelled == 0);
    auto leases = s->agent().heartbeat(w, model::WorkerState::active, 10 * kSecond);
    REQUIRE(leases.size() == 1);
    CHECK_FALSE(leases[0].cancel_requested);
    store::Completion done;
    done.run_id = leases[0].run_id;
    done.job_id = job;
    done.fence = leases[0].fence;
    done.attempt = 1;
    REQUIRE(s->agent().complete({done}) == std::vector<bool>{true});
    CHECK(s->jobs().get_run(done.run_id)->status == RunStatus::succeeded);
  }
  SUBCASE("--cancel-running: its agent is told to stop it") {
    CHECK(s->jobs().delete_job(job, store::CancelRunning::yes).cancelled == 1);
    auto leases = s->agent().heartbeat(w, model::WorkerState::active, 10 * kSecond);
    REQUIRE(leases.size() == 1);
    CHECK(leases[0].cancel_requested);
  }
}

// Nothing claims the runs of a deleted job, so one that would wait again
// (for its retry, or to be run again elsewhere) is cancelled instead, as
// the delete cancelled the job's waiting runs.
TEST_CASE("lifecycle: a running run of a deleted job that would wait again is cancelled instead") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto w = lifecycle_worker(*s);
  auto job = submit(*s, "long");
  auto claimed = s->agent().claim(w, {"default"}, 8, 10 * kSecond);
  REQUIRE(claimed.size() == 1);
  const std::string run_id = claimed[0].run_id;
  CHECK(s->jobs().delete_job(job, store::CancelRunning::no).cancelled == 0);
  std::string outcome;
  SUBCASE("its attempt fails with a retry left") {
    auto failed = store::completion_of(claimed[0], RunStatus::pending);
    failed.outcome = model::AttemptOutcome::failed;
    failed.error = "exited with code 1; retry 1 of 3 in 1s";
    failed.retry_delay_us = kSecond;
    REQUIRE(s->agent().complete({failed}) == std::vector<bool>{true});
    outcome = "failed";
    CHECK(s->jobs().attempts(run_id).at(0).error == failed.error);
  }
  SUBCASE("its agent drains and gives it back") {
    auto released = store::completion_of(claimed[0], RunStatus::pending);
    released.outcome = model::AttemptOutcome::released;
    s->agent().release({released});
    outcome = "released";
  }
  SUBCASE("its lease expires") {
    s->connection().exec("UPDATE runs SET lease_expires_at = 0 WHERE id = $1", {run_id});
    CHECK(s->agent().rescue_expired() == 1);
    outcome = "lost";
  }
  auto run = s->jobs().get_run(run_id);
  CHECK(run->status == RunStatus::cancelled);
  CHECK(run->error == "cancelled: the job was deleted");
  CHECK(run->finished_at.has_value());
  CHECK(s->jobs().attempts(run_id).at(0).outcome == outcome);
  CHECK_FALSE(s->agent().next_due_in("", {"default"}));
  // A restore does not bring it back, as it does not bring back the runs
  // the delete cancelled.
  s->jobs().restore_job(job);
  CHECK(s->agent().claim(w, {"default"}, 8, 10 * kSecond).empty());
}

TEST_CASE("lifecycle: every change appears once in the history, newest first, with actor and version") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  s->set_actor("alice@laptop");
  auto job = submit(*s, "j");
  auto sched = submit_cron_job(*s, "0 3 * * *");
  auto w = lifecycle_worker(*s);

  s->set_actor("ci");
  s->jobs().set_paused(job, true);
  s->jobs().set_paused(job, false);
  store::JobUpdate u;
  u.set_env = {{"REGION", "eu-west-1"}};
  u.retry.max_retries = 9;
  s->jobs().update_job(job, u);
  s->jobs().cancel(job);
  s->dead_letter().retry_job(job);
  auto claimed = s->agent().claim(w, {"default"}, 8, 10 * kSecond);
  REQUIRE(claimed.size() == 1);
  auto dead = store::completion_of(claimed[0], RunStatus::dead);
  dead.outcome = model::AttemptOutcome::failed;
  s->agent().complete({dead});
  s->dead_letter().replay({claimed[0].run_id});
  s->jobs().delete_job(job, store::CancelRunning::no);
  s->jobs().restore_job(job);
  s->schedules().trigger(sched, true);
  auto day = 86400 * kSecond;
  s->schedules().backfill(sched, (s->now() / day - 2) * day, (s->now() / day - 1) * day);

  auto events = s->jobs().history(job, 100);
  std::vector<std::string> seen;
  for (const auto& e : events) seen.push_back(e.action);
  CHECK(seen == std::vector<std::string>{"restore", "delete", "replay", "retry", "cancel", "update", "resume",
                                         "pause", "create"});
  CHECK(events.back().actor == "alice@laptop");
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    CHECK(events[i].actor == "ci");
    CHECK(events[i].at >= events[i + 1].at);
  }
  auto update = std::find_if(events.begin(), events.end(), [](const auto& e) { return e.action == "update"; });
  CHECK(update->version == 2);
  CHECK(update->details.find("\"retry.retries\":{\"from\":3,\"to\":9}") != std::string::npos);
  CHECK(update->details.find("\"env.REGION\":{\"from\":null,\"to\":\"(set)\"}") != std::string::npos);
  CHECK(events.front().version == 2);
  CHECK(actions(*s, sched) == std::vector<std::string>{"backfill", "trigger", "create"});
  CHECK(s->jobs().history(job, 2).size() == 2);
  CHECK_THROWS_AS(s->jobs().history("01ARZ3NDEKTSV4RRFFQ69G5FAV", 10), Error);
}

TEST_CASE("lifecycle: the history shows that an environment value changed, never the value") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  model::JobSpec spec;
  spec.command.argv = {"true"};
  spec.env = {{"API_TOKEN", "old-secret-value"}};
  auto job = s->jobs().submit({spec})[0].job_id;
  store::JobUpdate u;
  u.set_env = {{"API_TOKEN", "new-secret-value"}, {"REGION", "eu-west-1"}};
  s->jobs().update_job(job, u);
  store::JobUpdate drop;
  drop.unset_env = {"API_TOKEN"};
  s->jobs().update_job(job, drop);
  for (const auto& e : s->jobs().history(job, 10)) {
    CHECK(e.details.find("secret-value") == std::string::npos);
  }
  auto events = s->jobs().history(job, 10);
  CHECK(events[1].details.find("\"env.API_TOKEN\":{\"from\":\"(set)\",\"to\":\"(set)\"}") != std::string::npos);
  CHECK(events[1].details.find("\"env.REGION\":{\"from\":null,\"to\":\"(set)\"}") != std::string::npos);
  CHECK(events[1].details.find("eu-west-1") == std::string::npos);
  CHECK(events[0].details.find("\"env.API_TOKEN\":{\"from\":\"(set)\",\"to\":null}") != std::string::npos);
}

TEST_CASE("lifecycle: a new overlap policy brings its own limit unless --max-concurrent comes with it") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto job = submit_cron_job(*s, "* * * * *");
  CHECK(model::effective_max_concurrent(*s->jobs().get_job(job)->job.spec.schedule) == 1);
  store::JobUpdate u;
  u.schedule.overlap = model::Overlap::allow;
  s->jobs().update_job(job, u);
  CHECK(model::effective_max_concurrent(*s->jobs().get_job(job)->job.spec.schedule) == 0);
  u.schedule.overlap = model::Overlap::buffer_all;
  u.schedule.max_concurrent = 3;
  s->jobs().update_job(job, u);
  CHECK(model::effective_max_concurrent(*s->jobs().get_job(job)->job.spec.schedule) == 3);
}

TEST_CASE("lifecycle: --on hands a job only to agents with all its labels, and update --on moves it") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto web = s->agent().register_worker(store::WorkerRegistration{"web", "h1", 1, {"default"}, 8, "test", 30 * kSecond,
                                                          model::parse_labels("role=web,dc=fra,host=h1", "test")});
  auto db_worker = s->agent().register_worker(store::WorkerRegistration{"db", "h2", 1, {"default"}, 8, "test", 30 * kSecond,
                                                                model::parse_labels("role=db,dc=fra,host=h2", "test")});
  model::JobSpec spec;
  spec.command.argv = {"true"};
  spec.target = model::parse_labels("role=db,dc=fra", "--on");
  auto job = s->jobs().submit({spec})[0].job_id;
  CHECK(s->jobs().get_job(job)->job.spec.target == model::Labels{"dc=fra", "role=db"});
  CHECK_FALSE(s->agent().next_due_in(web, {"default"}));  // nothing the web agent may take
  CHECK(s->agent().claim(web, {"default"}, 8, 10 * kSecond).empty());
  store::JobUpdate u;
  u.target = model::parse_labels("host=h1", "--on");
  s->jobs().update_job(job, u);
  CHECK(s->agent().claim(db_worker, {"default"}, 8, 10 * kSecond).empty());
  REQUIRE(s->agent().next_due_in(web, {"default"}));
  auto claimed = s->agent().claim(web, {"default"}, 8, 10 * kSecond);
  REQUIRE(claimed.size() == 1);
  CHECK(claimed[0].job_id == job);
  auto events = s->jobs().history(job, 10);
  CHECK(events[0].details.find("\"on\":{\"from\":\"dc=fra,role=db\",\"to\":\"host=h1\"}") != std::string::npos);
  CHECK(s->admin().list_workers().at(0).labels.size() == 3);
}

TEST_CASE("lifecycle: labels are KEY=VALUE, each key once") {
  CHECK(model::parse_labels("", "--on").empty());
  CHECK(model::parse_labels("b=2,a=1", "--on") == model::Labels{"a=1", "b=2"});
  CHECK_THROWS_AS(model::parse_labels("role", "--on"), Error);
  CHECK_THROWS_AS(model::parse_labels("role=web,role=db", "--on"), Error);
  CHECK_THROWS_AS(model::parse_labels("role=we b", "--on"), Error);
  CHECK_THROWS_AS(model::parse_labels("=web", "--on"), Error);
  CHECK(model::labels_match({"a=1"}, {"a=1", "b=2"}));
  CHECK_FALSE(model::labels_match({"a=1", "c=3"}, {"a=1", "b=2"}));
}
