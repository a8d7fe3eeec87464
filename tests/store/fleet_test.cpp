// The fleet at the store level: concurrency groups, queue limits, tenant
// fairness and fan-out, as the claim enforces them.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <map>
#include <set>

#include "common/store/agent.hpp"
#include "common/store/dead_letter.hpp"
#include "common/store/jobs.hpp"
#include "common/store/queues.hpp"
#include "common/store/scheduler.hpp"
#include "common/util/error.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using model::RunStatus;

namespace {

constexpr int64_t kLease = 30'000'000;

struct FleetFixture {
  test::TempDir dir;
  test::TestDb db{dir};
  std::unique_ptr<store::Store> s = db.open();

  std::string agent(const std::string& name, const model::Labels& labels = {},
                    std::vector<std::string> queues = {"default", "other"}) {
    return s->agent().register_worker({name, "host", 1, std::move(queues), 64, "test", kLease, labels});
  }

  model::JobSpec job(const std::string& queue = "default") {
    model::JobSpec spec;
    spec.command.argv = {"true"};
    spec.queue = queue;
    return spec;
  }

  void finish(const std::vector<store::ClaimedRun>& runs) {
    std::vector<store::Completion> done;
    for (const auto& c : runs) done.push_back(store::completion_of(c, RunStatus::succeeded));
    if (!done.empty()) REQUIRE(s->agent().complete(done) == std::vector<bool>(done.size(), true));
  }

  int64_t count(const std::string& sql) { return s->connection().query(sql).at(0).i64(0); }
};

}  // namespace

TEST_CASE("fleet: a concurrency key holds every job naming it to one run at a time, across agents") {
  FleetFixture f;
  auto a = f.agent("a"), b = f.agent("b");
  std::vector<model::JobSpec> specs(20, f.job());
  for (auto& spec : specs) spec.concurrency_key = "deploy";
  specs.push_back(f.job());  // no key: not held
  f.s->jobs().submit(specs);

  auto first = f.s->agent().claim(a, {"default"}, 10, kLease);
  CHECK(first.size() == 2);  // one of the group, and the free job
  CHECK(f.s->agent().claim(b, {"default"}, 10, kLease).empty());
  for (int i = 1; i < 20; ++i) {
    f.finish(first);
    first = f.s->agent().claim(i % 2 ? b : a, {"default"}, 10, kLease);
    REQUIRE(first.size() == 1);
    CHECK(first[0].spec.concurrency_key == "deploy");
    CHECK(f.s->agent().claim(i % 2 ? a : b, {"default"}, 10, kLease).empty());
  }
  f.finish(first);
  CHECK(f.count("SELECT count(*) FROM runs WHERE status = 'succeeded'") == 21);
}

TEST_CASE("fleet: --max-concurrent N lets N of a group run, and the key spans queues") {
  FleetFixture f;
  auto a = f.agent("a");
  std::vector<model::JobSpec> specs;
  for (int i = 0; i < 6; ++i) {
    auto spec = f.job(i % 2 ? "other" : "default");
    spec.concurrency_key = "db-heavy";
    spec.max_concurrent = 3;
    specs.push_back(spec);
  }
  f.s->jobs().submit(specs);
  // A claim may take fewer than the room (SQLite: one of a group per
  // claim); claiming on, never more than 3 run.
  std::vector<store::ClaimedRun> running;
  for (int i = 0; i < 5; ++i)
    for (auto& c : f.s->agent().claim(a, {"default", "other"}, 10, kLease)) running.push_back(std::move(c));
  CHECK(running.size() == 3);
  CHECK(f.s->agent().next_due_in(a, {"default", "other"}) == std::nullopt);  // waits for a completion, not a time
  f.finish({running[0]});
  CHECK(f.s->agent().claim(a, {"default", "other"}, 10, kLease).size() == 1);
}

TEST_CASE("fleet: a job's --max-concurrent without a key limits its own fan-out runs") {
  FleetFixture f;
  auto a = f.agent("a", {"role=web"}), b = f.agent("b", {"role=web"});
  auto spec = f.job();
  spec.fan_out = model::Labels{"role=web"};
  spec.max_concurrent = 1;  // a rolling restart: one host at a time
  f.s->jobs().submit({spec});
  auto one = f.s->agent().claim(a, {"default"}, 10, kLease);
  REQUIRE(one.size() == 1);
  CHECK(f.s->agent().claim(b, {"default"}, 10, kLease).empty());
  f.finish(one);
  CHECK(f.s->agent().claim(b, {"default"}, 10, kLease).size() == 1);
}

TEST_CASE("fleet: --on-each makes one run per matching live agent, each only for its agent, staggered") {
  FleetFixture f;
  auto a = f.agent("web-1", {"role=web"}), b = f.agent("web-2", {"role=web"}), c = f.agent("db-1", {"role=db"});
  f.agent("web-3", {"role=web"}, {"other"});  // would never claim from default: no run (a tester's jobctl run hung)
  // Killed: not heard from within its lease, though no agent marked it gone yet.
  f.agent("web-4", {"role=web"});
  f.s->connection().exec("UPDATE workers SET heartbeat_at = heartbeat_at - $1 WHERE name = 'web-4'", {2 * kLease});
  auto spec = f.job();
  spec.fan_out = model::Labels{"role=web"};
  spec.stagger_us = 3'600'000'000;  // the second host's run an hour later
  auto job = f.s->jobs().submit({spec})[0];
  auto runs = f.s->jobs().runs_of(job.job_id);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].pinned_to == "web-1");
  CHECK(runs[1].pinned_to == "web-2");
  CHECK(runs[1].available_at - runs[0].available_at == 3'600'000'000);
  CHECK(f.s->agent().claim(c, {"default"}, 10, kLease).empty());  // not a web host
  CHECK(f.s->agent().claim(b, {"default"}, 10, kLease).empty());  // its run is not due yet
  auto mine = f.s->agent().claim(a, {"default"}, 10, kLease);
  REQUIRE(mine.size() == 1);
  CHECK(mine[0].run_id == runs[0].id);
  CHECK(f.s->agent().claim(a, {"default"}, 10, kLease).empty());  // web-2's run is web-2's

  // '*' is every agent; no agent matching is an error that writes nothing.
  auto every = f.job();
  every.fan_out = model::Labels{};
  CHECK(f.s->jobs().runs_of(f.s->jobs().submit({every})[0].job_id).size() == 3);
  auto none = f.job();
  none.fan_out = model::Labels{"role=cache"};
  int64_t jobs_before = f.count("SELECT count(*) FROM jobs");
  try {
    f.s->jobs().submit({none});
    FAIL("submit should have thrown");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::invalid_state);
    CHECK(std::string(e.what()) == "no live agent of queue default matches --on-each role=cache");
  }
  CHECK(f.count("SELECT count(*) FROM jobs") == jobs_before);
}

TEST_CASE("fleet: a fan-out schedule gets one run per agent per occurrence, or a skipped one naming why") {
  FleetFixture f;
  auto leader = f.agent("web-1", {"role=web"});
  f.agent("web-2", {"role=web"});
  auto spec = f.job();
  spec.fan_out = model::Labels{"role=web"};
  spec.schedule = model::ScheduleSpec{};
  spec.schedule->cron = "* * * * * *";
  auto job = f.s->jobs().submit({spec})[0];
  auto epoch = f.s->scheduler().lead(leader, kLease);
  REQUIRE(epoch);
  store::SchedulerSettings settings;
  settings.horizon_us = 2'000'000;
  f.s->scheduler().materialise(leader, *epoch, settings);
  std::map<int64_t, std::set<std::string>> per_occurrence;
  for (const auto& r : f.s->jobs().runs_of(job.job_id)) per_occurrence[*r.occurrence].insert(r.pinned_to);
  REQUIRE(per_occurrence.size() >= 2);
  for (const auto& [at, agents] : per_occurrence) CHECK(agents == std::set<std::string>{"web-1", "web-2"});

  auto lonely = f.job();
  lonely.fan_out = model::Labels{"role=cache"};
  lonely.schedule = spec.schedule;
  auto other = f.s->jobs().submit({lonely})[0];
  f.s->scheduler().materialise(leader, *epoch, settings);
  auto runs = f.s->jobs().runs_of(other.job_id);
  REQUIRE(!runs.empty());
  for (const auto& r : runs) {
    CHECK(r.status == RunStatus::skipped);
    CHECK(r.error == "no live agent of queue default matches --on-each role=cache");
  }
}

TEST_CASE("fleet: a queue's max-concurrent and tenant-max-concurrent cap what every agent claims") {
  FleetFixture f;
  auto a = f.agent("a"), b = f.agent("b");
  f.s->queues().set_queue_limits("other", {2, std::nullopt, std::nullopt});
  std::vector<model::JobSpec> specs(5, f.job("other"));
  f.s->jobs().submit(specs);
  CHECK(f.s->agent().claim(a, {"other"}, 10, kLease).size() == 2);
  CHECK(f.s->agent().claim(b, {"other"}, 10, kLease).empty());

  f.s->queues().set_queue_limits("default", {std::nullopt, std::nullopt, 1});
  std::vector<model::JobSpec> tenants;
  for (const char* t : {"acme", "acme", "acme", "globex", "globex"}) {
    auto spec = f.job();
    spec.tenant = t;
    tenants.push_back(spec);
  }
  f.s->jobs().submit(tenants);
  auto claimed = f.s->agent().claim(a, {"default"}, 10, kLease);
  REQUIRE(claimed.size() == 2);
  CHECK(claimed[0].spec.tenant != claimed[1].spec.tenant);
  CHECK(f.s->agent().claim(b, {"default"}, 10, kLease).empty());

  auto queues = f.s->queues().list_queues();
  auto other = std::find_if(queues.begin(), queues.end(), [](const auto& q) { return q.name == "other"; });
  REQUIRE(other != queues.end());
  CHECK(other->max_concurrent == 2);
  CHECK_THROWS_AS(f.s->queues().set_queue_limits("other", {-1, std::nullopt, std::nullopt}), Error);
}

TEST_CASE("fleet: a tenant's burst of 10,000 does not starve 10 jobs of another tenant") {
  FleetFixture f;
  auto a = f.agent("a");
  std::vector<model::JobSpec> burst(10000, f.job());
  for (auto& spec : burst) spec.tenant = "analytics";
  f.s->jobs().submit(burst);
  std::vector<model::JobSpec> few(10, f.job());
  for (auto& spec : few) spec.tenant = "billing";
  f.s->jobs().submit(few);

  // One run per claim is the hardest case for fairness: no batch to share.
  int billing_started = 0, claims = 0;
  while (billing_started < 10 && claims < 100) {
    auto c = f.s->agent().claim(a, {"default"}, 1, kLease);
    REQUIRE(c.size() == 1);
    ++claims;
    if (c[0].spec.tenant == "billing") ++billing_started;
    f.finish(c);
  }
  CHECK(billing_started == 10);
  CHECK(claims <= 20);  // served in turn: every other claim

  // Priority still wins across tenants.
  auto urgent = f.job();
  urgent.tenant = "analytics";
  urgent.priority = model::Priority::critical;
  f.s->jobs().submit({urgent});
  auto c = f.s->agent().claim(a, {"default"}, 1, kLease);
  REQUIRE(c.size() == 1);
  CHECK(c[0].spec.priority == model::Priority::critical);
}

TEST_CASE("fleet: a queue's rate spends one token per claim and says when the next one comes") {
  FleetFixture f;
  auto a = f.agent("a");
  f.s->queues().set_queue_limits("default", {std::nullopt, 0.5, std::nullopt});  // one run every 2 s
  std::vector<model::JobSpec> specs(5, f.job());
  f.s->jobs().submit(specs);
  CHECK(f.s->agent().claim(a, {"default"}, 10, kLease).size() == 1);  // the burst: one token
  CHECK(f.s->agent().claim(a, {"default"}, 10, kLease).empty());
  auto due = f.s->agent().next_due_in(a, {"default"});
  REQUIRE(due);
  CHECK(*due > 0);
  CHECK(*due <= 2'000'000);
}

TEST_CASE("fleet: a queue's next token is at most a day away, even at a rate set below one a day") {
  FleetFixture f;
  auto a = f.agent("a");
  // The store takes any rate above 0; jobctl and the API refuse one below
  // store::kMinRate, but a row may hold one set before they did.
  f.s->queues().set_queue_limits("default", {std::nullopt, 1e-300, std::nullopt});
  f.s->jobs().submit({f.job()});
  CHECK(f.s->agent().claim(a, {"default"}, 10, kLease).empty());  // no token yet
  auto due = f.s->agent().next_due_in(a, {"default"});
  REQUIRE(due);
  CHECK(*due > 0);
  CHECK(*due <= 86'400'000'000);
}

TEST_CASE("fleet: update --concurrency-key moves waiting runs into the new group") {
  FleetFixture f;
  auto a = f.agent("a");
  auto first = f.job(), second = f.job();
  first.concurrency_key = "k";
  auto ids = f.s->jobs().submit({first, second});
  REQUIRE(f.s->agent().claim(a, {"default"}, 1, kLease).size() == 1);  // first, holding k
  store::JobUpdate u;
  u.concurrency_key = "k";
  CHECK(f.s->jobs().update_job(ids[1].job_id, u).changed);
  CHECK(f.s->agent().claim(a, {"default"}, 10, kLease).empty());
  CHECK(f.s->jobs().get_job(ids[1].job_id)->job.spec.concurrency_key == "k");
}

TEST_CASE("fleet: a fan-out schedule's overlap limit holds per agent, not across agents") {
  FleetFixture f;
  auto leader = f.agent("web-1", {"role=web"});
  f.agent("web-2", {"role=web"});
  auto spec = f.job();
  spec.fan_out = model::Labels{"role=web"};
  spec.schedule = model::ScheduleSpec{};
  spec.schedule->cron = "* * * * * *";  // overlap skip: limit 1
  auto job = f.s->jobs().submit({spec})[0];
  auto epoch = f.s->scheduler().lead(leader, kLease);
  REQUIRE(epoch);
  f.s->scheduler().materialise(leader, *epoch, {});
  auto groups = f.s->connection().query("SELECT DISTINCT group_key FROM runs WHERE job_id = $1 ORDER BY 1",
                                        {job.job_id});
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].text(0) == job.job_id + "@web-1");
  CHECK(groups[1].text(0) == job.job_id + "@web-2");
}

TEST_CASE("fleet: two agents claiming at once on their own connections never exceed a group's or a queue's limit") {
  FleetFixture f;
  auto a = f.agent("a"), b = f.agent("b");
  f.s->queues().set_queue_limits("other", {3, std::nullopt, std::nullopt});
  std::vector<model::JobSpec> specs;
  for (int i = 0; i < 60; ++i) {
    auto spec = f.job(i % 2 ? "other" : "default");
    if (i % 2 == 0) {
      spec.concurrency_key = "k";
      spec.max_concurrent = 2;
    }
    specs.push_back(spec);
  }
  f.s->jobs().submit(specs);
  // What is running by our own count: claimed and not yet reported done.
  // It can only lag behind the store, so any excess is a real one.
  std::atomic<int> in_group{0}, in_queue{0}, worst_group{0}, worst_queue{0}, done{0};
  auto work = [&](const std::string& worker) {
    auto s = f.db.open();
    for (int round = 0; round < 2000 && done.load() < 60; ++round) {
      auto claimed = s->agent().claim(worker, {"default", "other"}, 5, kLease);
      int g = 0, q = 0;
      for (const auto& c : claimed) (c.queue == "other" ? q : g)++;
      worst_group = std::max(worst_group.load(), in_group += g);
      worst_queue = std::max(worst_queue.load(), in_queue += q);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      in_group -= g;
      in_queue -= q;
      std::vector<store::Completion> finished;
      for (const auto& c : claimed) finished.push_back(store::completion_of(c, RunStatus::succeeded));
      if (!finished.empty()) s->agent().complete(finished);
      done += static_cast<int>(claimed.size());
    }
  };
  std::thread t1(work, a), t2(work, b);
  t1.join();
  t2.join();
  CHECK(done.load() == 60);
  CHECK(worst_group.load() <= 2);
  CHECK(worst_queue.load() <= 3);
  MESSAGE("most running at once: group " << worst_group.load() << ", queue " << worst_queue.load());
}

TEST_CASE("fleet: a long backlog in one group and a first run nobody can take do not hold up others") {
  FleetFixture f;
  auto a = f.agent("a");
  std::vector<model::JobSpec> deploys(600, f.job());
  for (auto& spec : deploys) spec.concurrency_key = "deploy";
  f.s->jobs().submit(deploys);
  auto backup = f.job();
  backup.concurrency_key = "backup";
  f.s->jobs().submit({backup});
  auto claimed = f.s->agent().claim(a, {"default"}, 10, kLease);
  std::set<std::string> keys;
  for (const auto& c : claimed) keys.insert(c.spec.concurrency_key);
  CHECK(keys == std::set<std::string>{"deploy", "backup"});
  f.finish(claimed);

  // The first waiting run of group "k" belongs to a paused job: the next one runs.
  auto paused = f.job("other"), next = f.job("other");
  paused.concurrency_key = next.concurrency_key = "k";
  auto ids = f.s->jobs().submit({paused, next});
  f.s->jobs().set_paused(ids[0].job_id, true);
  auto c = f.s->agent().claim(a, {"other"}, 10, kLease);
  REQUIRE(c.size() == 1);
  CHECK(c[0].job_id == ids[1].job_id);
}

TEST_CASE("fleet: removing a concurrency key removes the limit it brought") {
  FleetFixture f;
  auto spec = f.job();
  spec.concurrency_key = "k";
  auto id = f.s->jobs().submit({spec})[0].job_id;
  CHECK(model::group_limit(f.s->jobs().get_job(id)->job.spec) == 1);
  store::JobUpdate u;
  u.concurrency_key = "";
  f.s->jobs().update_job(id, u);
  CHECK(model::group_limit(f.s->jobs().get_job(id)->job.spec) == 0);
}

TEST_CASE("fleet: cancel stops every agent's run of an --on-each job, not only the latest") {
  FleetFixture f;
  auto a = f.agent("web-1", {"role=web"}), b = f.agent("web-2", {"role=web"}), c = f.agent("web-3", {"role=web"});
  auto spec = f.job();
  spec.fan_out = model::Labels{"role=web"};
  auto job = f.s->jobs().submit({spec})[0].job_id;
  auto running = f.s->agent().claim(a, {"default"}, 10, kLease);  // web-1's starts; web-2's and web-3's wait
  REQUIRE(running.size() == 1);
  f.finish(f.s->agent().claim(c, {"default"}, 10, kLease));       // web-3's is over already
  CHECK(f.s->jobs().cancel(job) == store::CancelOutcome::requested);
  std::map<std::string, RunStatus> by_agent;
  for (const auto& r : f.s->jobs().runs_of(job)) by_agent[r.pinned_to] = r.status;
  CHECK(by_agent["web-1"] == RunStatus::running);
  CHECK(by_agent["web-2"] == RunStatus::cancelled);
  CHECK(by_agent["web-3"] == RunStatus::succeeded);
  auto leases = f.s->agent().heartbeat(a, model::WorkerState::active, kLease);
  REQUIRE(leases.size() == 1);
  CHECK(leases[0].cancel_requested);
  CHECK(f.s->agent().claim(b, {"default"}, 10, kLease).empty());
}

TEST_CASE("fleet: retry runs every agent's dead run of an --on-each job again, also when the latest succeeded") {
  FleetFixture f;
  const std::vector<std::string> agents{f.agent("web-1", {"role=web"}), f.agent("web-2", {"role=web"}),
                                        f.agent("web-3", {"role=web"})};
  auto spec = f.job();
  spec.fan_out = model::Labels{"role=web"};
  auto job = f.s->jobs().submit({spec})[0].job_id;
  auto runs = f.s->jobs().runs_of(job);
  REQUIRE(runs.size() == 3);
  // The latest run succeeds, the other two die: retry took the latest
  // alone, and refused it ("job is succeeded").
  const std::string latest =
      std::max_element(runs.begin(), runs.end(), [](const auto& x, const auto& y) { return x.id < y.id; })->id;
  std::vector<store::Completion> done;
  for (const auto& agent : agents)
    for (const auto& claimed : f.s->agent().claim(agent, {"default"}, 10, kLease))
      done.push_back(store::completion_of(claimed, claimed.run_id == latest ? RunStatus::succeeded : RunStatus::dead));
  REQUIRE(f.s->agent().complete(done) == std::vector<bool>(3, true));

  const auto fresh = f.s->dead_letter().retry_job(job);
  REQUIRE(fresh.size() == 2);
  std::map<std::string, std::string> replayed;  // dead run -> its agent
  for (const auto& r : f.s->jobs().runs_of(job))
    if (r.status == RunStatus::dead) replayed[r.id] = r.pinned_to;
  REQUIRE(replayed.size() == 2);
  for (const auto& id : fresh) {
    auto run = f.s->jobs().get_run(id);
    REQUIRE(run);
    CHECK(run->status == RunStatus::pending);
    CHECK(run->pinned_to == replayed[run->replay_of]);  // on the agent whose run it retries
  }
  // Nothing is left to retry: the new runs wait.
  CHECK_THROWS_AS(f.s->dead_letter().retry_job(job), Error);
}
