// The dead-letter queue, manual retry and pause, at the store level.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <thread>

#include "common/store/admin.hpp"
#include "common/store/agent.hpp"
#include "common/store/dead_letter.hpp"
#include "common/store/jobs.hpp"
#include "common/store/queues.hpp"
#include "common/util/error.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using model::RunStatus;

namespace {

struct DlqFixture {
  test::TempDir dir;
  test::TestDb db{dir};
  std::unique_ptr<store::Store> s = db.open();
  std::string worker = s->agent().register_worker({"w", "host", 1, {"default", "other"}, 8, "test", 30'000'000, {}});

  // Submits a job and drives it to dead, as an agent would.
  store::SubmitResult dead_job(const std::string& queue = "default") {
    model::JobSpec spec;
    spec.command.argv = {"false"};
    spec.queue = queue;
    auto res = s->jobs().submit({spec})[0];
    auto c = s->agent().claim(worker, {queue}, 1, 30'000'000);
    REQUIRE(c.size() == 1);
    auto done = store::completion_of(c[0], RunStatus::dead);
    done.outcome = model::AttemptOutcome::failed;
    done.error = "exited with code 1; no retries allowed";
    REQUIRE(s->agent().complete({done}) == std::vector<bool>{true});
    return res;
  }
};

}  // namespace

TEST_CASE("dlq: a dead run is listed, replayed once with a fresh run, and leaves the queue") {
  DlqFixture f;
  auto a = f.dead_job();
  auto dead = f.s->dead_letter().dead_runs({});
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].latest_run->id == a.run_id);
  CHECK(dead[0].latest_run->error == "exited with code 1; no retries allowed");

  auto fresh = f.s->dead_letter().replay({a.run_id});
  REQUIRE(fresh.size() == 1);
  auto run = f.s->jobs().get_run(fresh[0]);
  CHECK(run->status == RunStatus::pending);
  CHECK(run->replay_of == a.run_id);
  CHECK(run->failures == 0);
  CHECK(f.s->jobs().get_run(a.run_id)->status == RunStatus::dead);  // history stays
  CHECK(f.s->jobs().get_run(a.run_id)->replayed_at.has_value());
  CHECK(f.s->dead_letter().dead_runs({}).empty());
  CHECK(f.s->jobs().get_job(a.job_id)->latest_run->id == fresh[0]);
  CHECK_THROWS_AS(f.s->dead_letter().replay({a.run_id}), Error);  // not twice

  // Named twice in one replay, it is replayed once.
  auto b = f.dead_job("other");  // the default queue holds a's fresh run
  auto once = f.s->dead_letter().replay({b.run_id, b.run_id});
  REQUIRE(once.size() == 1);
  CHECK(f.s->jobs().get_run(once[0])->replay_of == b.run_id);
  CHECK(f.s->jobs().runs_of(b.job_id).size() == 2);  // the dead run and the one fresh run
}

TEST_CASE("dlq: dismiss takes dead runs out of the queue without a new run, and they stay in history") {
  DlqFixture f;
  auto a = f.dead_job();
  auto b = f.dead_job("other");
  auto c = f.dead_job("other");
  auto in_queue = [&](const std::string& queue) {
    for (const auto& q : f.s->queues().list_queues())
      if (q.name == queue) return q.dead;
    return int64_t{-1};
  };
  auto gauged = [&] {  // by GET /metrics
    int64_t n = 0;
    for (const auto& q : f.s->admin().gauges().queues) n += q.dead_letter;
    return n;
  };
  auto counted = [&] {  // by `jobctl stats`
    int64_t n = 0;
    for (const auto& q : f.s->admin().stats({})) n += q.dead_letter;
    return n;
  };
  REQUIRE(gauged() == 3);
  REQUIRE(counted() == 3);

  // Named twice, dismissed once; the run stays dead, with no new run.
  CHECK(f.s->dead_letter().dismiss({a.run_id, a.run_id}) == std::vector<std::string>{a.run_id});
  auto run = f.s->jobs().get_run(a.run_id);
  CHECK(run->status == RunStatus::dead);
  CHECK(run->dismissed_at.has_value());
  CHECK_FALSE(run->replayed_at.has_value());
  CHECK(f.s->jobs().runs_of(a.job_id).size() == 1);
  CHECK(f.s->jobs().get_job(a.job_id)->latest_run->id == a.run_id);
  CHECK(f.s->dead_letter().dead_runs({}).size() == 2);
  CHECK(in_queue("default") == 0);
  CHECK(gauged() == 2);
  CHECK(counted() == 2);
  auto events = f.s->jobs().history(a.job_id, 10);
  CHECK(std::count_if(events.begin(), events.end(), [](const auto& e) { return e.action == "dismiss"; }) == 1);
  // Dismissed already: left as it is, not an error.
  CHECK(f.s->dead_letter().dismiss({a.run_id}).empty());

  // All or nothing: a run that is not dead refuses the whole call.
  model::JobSpec spec;
  spec.command.argv = {"true"};
  auto pending = f.s->jobs().submit({spec})[0];
  auto refused = [&](const std::vector<std::string>& ids) {
    try {
      f.s->dead_letter().dismiss(ids);
      return false;
    } catch (const Error& e) {
      return e.code() == ExitCode::invalid_state;
    }
  };
  CHECK(refused({b.run_id, pending.run_id}));
  CHECK_FALSE(f.s->jobs().get_run(b.run_id)->dismissed_at.has_value());
  // A run replayed already left the queue by its new run.
  f.s->dead_letter().replay({b.run_id});
  CHECK(refused({b.run_id}));

  // Every one a filter covers; a dismissed run can still be replayed.
  store::DeadFilter other;
  other.queue = "other";
  CHECK(f.s->dead_letter().dismiss_all(other) == 1);
  CHECK(f.s->jobs().get_run(c.run_id)->dismissed_at.has_value());
  CHECK(f.s->dead_letter().dead_runs({}).empty());
  CHECK(in_queue("other") == 0);
  CHECK(f.s->dead_letter().dismiss_all({}) == 0);
  CHECK(f.s->dead_letter().replay({a.run_id}).size() == 1);
}

TEST_CASE("dlq: replays and retries of one dead run at once make one fresh run, and the others are refused") {
  // Found by a tester on PostgreSQL: each read the run before locking it,
  // and two or three copies of one dead run ran side by side.
  DlqFixture f;
  auto a = f.dead_job();
  auto b = f.dead_job("other");
  auto c = f.dead_job("other");
  std::vector<std::unique_ptr<store::Store>> stores;
  for (int i = 0; i < 4; ++i) stores.push_back(f.db.open());
  // The runs held locked while the four commands start, so that each has
  // read them as dead before any can replay them.
  auto holder = f.db.connect();
  store::Transaction hold(*holder, store::TxMode::write);
  holder->query("SELECT 1 FROM runs WHERE status = 'dead'" + holder->row_lock("FOR UPDATE"));
  std::atomic<int> refused{0};
  std::atomic<int> replayed_all{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    try {
      stores[0]->dead_letter().replay({a.run_id});
    } catch (const Error& e) {
      if (e.code() == ExitCode::invalid_state) ++refused;
    }
  });
  threads.emplace_back([&] {
    try {
      stores[1]->dead_letter().retry_job(a.job_id);
    } catch (const Error& e) {
      if (e.code() == ExitCode::invalid_state) ++refused;
    }
  });
  for (int i = 2; i < 4; ++i)
    threads.emplace_back([&, i] { replayed_all += stores[static_cast<size_t>(i)]->dead_letter().replay_all({}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  hold.commit();
  for (auto& t : threads) t.join();
  // Each dead run replayed once in all: a by one of the four, b and c by
  // one of the replays of all; whoever found a taken was refused or skipped it.
  for (const auto& r : {a, b, c}) CHECK(f.s->jobs().runs_of(r.job_id).size() == 2);  // the dead run and one fresh run
  const int made_one = 2 - refused.load();
  CHECK(refused.load() >= 1);
  CHECK(replayed_all.load() + made_one == 3);  // three fresh runs in all
}

TEST_CASE("dlq: replay is all or nothing") {
  DlqFixture f;
  auto a = f.dead_job();
  model::JobSpec spec;
  spec.command.argv = {"true"};
  auto pending = f.s->jobs().submit({spec})[0];
  try {
    f.s->dead_letter().replay({a.run_id, pending.run_id});
    FAIL("replayed a pending run");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::invalid_state);
    CHECK(std::string(e.what()).find(pending.run_id) != std::string::npos);
  }
  CHECK(f.s->dead_letter().dead_runs({}).size() == 1);
  CHECK(f.s->jobs().runs_of(a.job_id).size() == 1);
}

TEST_CASE("dlq: bulk replay and listing honour queue and time filters") {
  DlqFixture f;
  f.dead_job("default");
  f.dead_job("other");
  f.dead_job("other");
  store::DeadFilter other;
  other.queue = "other";
  CHECK(f.s->dead_letter().dead_runs(other).size() == 2);
  store::DeadFilter future;
  future.since = f.s->now() + 60'000'000;
  CHECK(f.s->dead_letter().dead_runs(future).empty());
  CHECK(f.s->dead_letter().replay_all(future) == 0);
  CHECK(f.s->dead_letter().replay_all(other) == 2);
  auto left = f.s->dead_letter().dead_runs({});
  REQUIRE(left.size() == 1);
  CHECK(left[0].job.spec.queue == "default");
}

TEST_CASE("dlq: purge removes dead runs older than the age, with their attempts") {
  DlqFixture f;
  auto a = f.dead_job();
  // A job that keeps a run (its first, run again by a retry) stays, and
  // its history says which dead run the purge took.
  auto kept = f.dead_job("other");
  REQUIRE(f.s->dead_letter().retry_job(kept.job_id).size() == 1);
  auto again = f.s->agent().claim(f.worker, {"other"}, 1, 30'000'000);
  REQUIRE(again.size() == 1);
  auto done = store::completion_of(again[0], RunStatus::dead);
  done.outcome = model::AttemptOutcome::failed;
  REQUIRE(f.s->agent().complete({done}) == std::vector<bool>{true});
  CHECK(f.s->dead_letter().purge_dead(3600'000'000) == 0);
  int64_t until = f.s->now() + 2000;
  while (f.s->now() <= until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(f.s->dead_letter().purge_dead(1000) == 2);
  CHECK(f.s->dead_letter().dead_runs({}).empty());
  CHECK_FALSE(f.s->jobs().get_run(a.run_id));
  CHECK(f.s->jobs().attempts(a.run_id).empty());
  // A one-off job goes with its last run, as under gc: left with none,
  // jobctl wait waited for ever and retry had nothing to retry.
  CHECK_FALSE(f.s->jobs().get_job(a.job_id).has_value());
  CHECK_FALSE(f.s->jobs().get_run(again[0].run_id));
  CHECK(f.s->jobs().get_run(kept.run_id));
  auto events = f.s->jobs().history(kept.job_id, 10);
  auto purge = std::find_if(events.begin(), events.end(), [](const auto& e) { return e.action == "purge"; });
  REQUIRE(purge != events.end());
  CHECK(nlohmann::json::parse(purge->details) ==
        nlohmann::json{{"count", 1}, {"runs", nlohmann::json::array({again[0].run_id})}});
  // Only the jobs that stay have an entry: the deleted one left no history.
  CHECK(f.s->connection().query("SELECT count(*) FROM job_events WHERE action = 'purge'").at(0).i64(0) == 1);
  // Its latest run is now the first, dead and run again once, by a run the
  // purge took: retry runs the job again (it was refused, "is dead", and
  // nothing could run the job again), once.
  auto fresh = f.s->dead_letter().retry_job(kept.job_id);
  REQUIRE(fresh.size() == 1);
  CHECK(f.s->jobs().get_run(fresh[0])->replay_of == kept.run_id);
  try {
    f.s->dead_letter().retry_job(kept.job_id);
    FAIL("a job whose new run is pending was retried");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::invalid_state);
  }
}

TEST_CASE("dlq: purge never deletes a run that a replay under way replays, nor its job") {
  DlqFixture f;
  auto a = f.dead_job();
  auto b = f.dead_job();
  int64_t until = f.s->now() + 2000;
  while (f.s->now() <= until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // A replay of b that has locked and stamped it but not committed yet.
  auto other = f.db.open();
  store::Transaction replaying(other->connection(), store::TxMode::write);
  other->connection().exec("UPDATE runs SET replayed_at = NOW_US WHERE id = $1", {b.run_id});
  std::atomic<int> purged{-1};
  std::thread purge([&] { purged = f.s->dead_letter().purge_dead(1000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the purge waits for the replay's lock
  replaying.commit();
  purge.join();
  // PostgreSQL chose b in a snapshot from before the replay's commit, and
  // deleted it once the lock came free: the replay's new run named a run
  // that was gone.
  CHECK(purged == 1);
  CHECK_FALSE(f.s->jobs().get_run(a.run_id).has_value());
  CHECK(f.s->jobs().get_run(b.run_id).has_value());
  CHECK(f.s->jobs().get_job(b.job_id).has_value());
}

TEST_CASE("dlq: a bulk replay never replays a run that a dismissal under way dismisses") {
  // Found by a tester on PostgreSQL: replay --all and dismiss --all at
  // once both acted on the same runs, and both said they had.
  DlqFixture f;
  auto a = f.dead_job();
  auto b = f.dead_job();
  // A dismissal of b that has stamped it but not committed yet.
  auto other = f.db.open();
  store::Transaction dismissing(other->connection(), store::TxMode::write);
  other->connection().exec("UPDATE runs SET dismissed_at = NOW_US WHERE id = $1", {b.run_id});
  std::atomic<int> replayed{-1};
  std::thread replay([&] { replayed = f.s->dead_letter().replay_all({}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the replay waits for the dismissal's lock
  dismissing.commit();
  replay.join();
  CHECK(replayed == 1);
  CHECK(f.s->jobs().get_run(a.run_id)->replayed_at.has_value());
  auto dismissed = f.s->jobs().get_run(b.run_id);
  CHECK(dismissed->dismissed_at.has_value());
  CHECK_FALSE(dismissed->replayed_at.has_value());
}

TEST_CASE("dlq: retry makes a fresh run of a dead or cancelled job and refuses others") {
  DlqFixture f;
  auto a = f.dead_job();
  auto fresh = f.s->dead_letter().retry_job(a.job_id);
  REQUIRE(fresh.size() == 1);
  CHECK(f.s->jobs().get_run(fresh[0])->status == RunStatus::pending);
  CHECK(f.s->dead_letter().dead_runs({}).empty());
  try {
    f.s->dead_letter().retry_job(a.job_id);  // now pending
    FAIL("retried a pending job");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::invalid_state);
  }
  f.s->jobs().cancel(a.job_id);
  CHECK_NOTHROW(f.s->dead_letter().retry_job(a.job_id));
  CHECK_THROWS_AS(f.s->dead_letter().retry_job("01ARZ3NDEKTSV4RRFFQ69G5FAV"), Error);
}

TEST_CASE("dlq: a paused job's runs are not claimed until it is resumed") {
  DlqFixture f;
  model::JobSpec spec;
  spec.command.argv = {"true"};
  auto res = f.s->jobs().submit({spec})[0];
  CHECK(f.s->jobs().set_paused(res.job_id, true));
  CHECK_FALSE(f.s->jobs().set_paused(res.job_id, true));
  CHECK(f.s->agent().claim(f.worker, {"default"}, 8, 30'000'000).empty());
  CHECK(f.s->jobs().get_job(res.job_id)->job.paused);
  CHECK(f.s->jobs().set_paused(res.job_id, false));
  CHECK(f.s->agent().claim(f.worker, {"default"}, 8, 30'000'000).size() == 1);
}

TEST_CASE("dlq: retries reschedule the run with the delay and count failures") {
  DlqFixture f;
  model::JobSpec spec;
  spec.command.argv = {"false"};
  auto res = f.s->jobs().submit({spec})[0];
  auto c = f.s->agent().claim(f.worker, {"default"}, 1, 30'000'000);
  REQUIRE(c.size() == 1);
  auto retry = store::completion_of(c[0], RunStatus::pending);
  retry.outcome = model::AttemptOutcome::failed;
  retry.retry_delay_us = 60'000'000;
  int64_t before = f.s->now();
  REQUIRE(f.s->agent().complete({retry}) == std::vector<bool>{true});
  auto run = f.s->jobs().get_run(res.run_id);
  CHECK(run->status == RunStatus::pending);
  CHECK(run->failures == 1);
  CHECK(run->available_at >= before + 60'000'000);
  CHECK_FALSE(run->finished_at.has_value());
  CHECK(f.s->agent().claim(f.worker, {"default"}, 1, 30'000'000).empty());  // not due yet
  auto attempt = f.s->jobs().attempts(res.run_id).at(0);
  CHECK(attempt.outcome == "failed");
  // Due exactly the delay after the attempt ended: one reading of the clock,
  // not one per statement (an ASan run saw them 4 ms apart).
  REQUIRE(attempt.finished_at.has_value());
  CHECK(run->available_at - *attempt.finished_at == 60'000'000);
}

TEST_CASE("dlq: rescue sends a run delivered too often without a result to the dead-letter queue") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto w = s->agent().register_worker({"w", "host", 1, {"default"}, 8, "test", 30'000'000, {}});
  model::JobSpec spec;
  spec.command.argv = {"true"};
  spec.retry_given.max_deliveries = 2;
  auto res = s->jobs().submit({spec})[0];
  auto lose = [&] {
    auto c = s->agent().claim(w, {"default"}, 1, 1000);
    REQUIRE(c.size() == 1);
    int64_t until = s->now() + 2000;
    while (s->now() <= until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(s->agent().rescue_expired() == 1);
  };
  lose();
  CHECK(s->jobs().get_run(res.run_id)->status == RunStatus::pending);
  lose();
  auto run = s->jobs().get_run(res.run_id);
  CHECK(run->status == RunStatus::dead);
  CHECK(run->error == "poison: delivered 2 times without a result");
  auto att = s->jobs().attempts(res.run_id);
  REQUIRE(att.size() == 2);
  CHECK(att[0].outcome == "lost");
  CHECK(att[1].outcome == "lost");
}

TEST_CASE("dlq: queue defaults fill the retry fields a job leaves unset, at submit time") {
  DlqFixture f;
  model::RetryOverrides defaults;
  defaults.max_retries = 7;
  defaults.backoff = model::Backoff::fixed;
  f.s->queues().set_queue_defaults("default", defaults, store::Queues::Clear::no);
  model::RetryOverrides more;
  more.max_deliveries = 9;
  f.s->queues().set_queue_defaults("default", more, store::Queues::Clear::no);  // merges

  model::JobSpec plain, own;
  plain.command.argv = own.command.argv = {"true"};
  own.retry_given.max_retries = 1;
  auto res = f.s->jobs().submit({plain, own});
  auto p1 = f.s->jobs().get_job(res[0].job_id)->job.spec.retry;
  CHECK(p1.max_retries == 7);
  CHECK(p1.backoff == model::Backoff::fixed);
  CHECK(p1.max_deliveries == 9);
  auto p2 = f.s->jobs().get_job(res[1].job_id)->job.spec.retry;
  CHECK(p2.max_retries == 1);  // the job's own setting wins
  CHECK(p2.backoff == model::Backoff::fixed);

  f.s->queues().set_queue_defaults("default", {}, store::Queues::Clear::yes);
  auto res3 = f.s->jobs().submit({plain});
  CHECK(f.s->jobs().get_job(res3[0].job_id)->job.spec.retry.max_retries == 3);  // built-in again
  CHECK(f.s->jobs().get_job(res[0].job_id)->job.spec.retry.max_retries == 7);   // earlier jobs keep theirs

  auto queues = f.s->queues().list_queues();
  REQUIRE(queues.size() == 1);
  CHECK(queues[0].name == "default");
  CHECK(queues[0].pending == 3);
  CHECK(queues[0].defaults.empty());

  model::RetryOverrides bad;
  bad.delay_us = 600'000'000;  // above the default 5m cap
  CHECK_THROWS_AS(f.s->queues().set_queue_defaults("default", bad, store::Queues::Clear::no), Error);
}

TEST_CASE("queue: a paused queue is not claimed from until resumed, and keeps its defaults") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto s = db.open();
  auto w = s->agent().register_worker({"w", "host", 1, {"default", "other"}, 8, "test", 30'000'000, {}});
  model::RetryOverrides defaults;
  defaults.max_retries = 7;
  s->queues().set_queue_defaults("default", defaults, store::Queues::Clear::no);
  model::JobSpec spec;
  spec.command.argv = {"true"};
  s->jobs().submit({spec});
  spec.queue = "other";
  s->jobs().submit({spec});
  CHECK(s->queues().set_queue_paused("default", true));
  CHECK_FALSE(s->queues().set_queue_paused("default", true));
  auto claimed = s->agent().claim(w, {"default", "other"}, 8, 10'000'000);
  REQUIRE(claimed.size() == 1);  // only the run of the other queue
  CHECK(claimed[0].spec.queue == "other");
  CHECK_FALSE(s->agent().next_due_in(w, {"default"}));
  // Setting defaults neither resumes the queue nor loses them.
  defaults.max_retries = 8;
  s->queues().set_queue_defaults("default", defaults, store::Queues::Clear::no);
  auto queues = s->queues().list_queues();
  auto q = std::find_if(queues.begin(), queues.end(), [](const auto& x) { return x.name == "default"; });
  REQUIRE(q != queues.end());
  CHECK(q->paused);
  CHECK(q->defaults.max_retries == 8);
  CHECK(q->pending == 1);
  CHECK(s->agent().claim(w, {"default"}, 8, 10'000'000).empty());
  CHECK(s->queues().set_queue_paused("default", false));
  CHECK(s->agent().claim(w, {"default"}, 8, 10'000'000).size() == 1);
  CHECK_FALSE(s->queues().set_queue_paused("never-seen", false));
}
