// The agent's runner on its own, with a real supervisor: runs start in
// turn without the caller waiting, and a run that has not started yet
// ends without ever starting.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <map>
#include <random>

#include "agent/outcome.hpp"
#include "agent/runner.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using namespace jobctl::agent;

namespace {

store::ClaimedRun sleeper(int n) {
  store::ClaimedRun r;
  r.run_id = "run-" + std::to_string(n);
  r.job_id = "job-" + std::to_string(n);
  r.fence = 1;
  r.attempt = 1;
  r.spec.command.argv = {"exec sleep 30"};
  r.spec.command.via_shell = true;
  return r;
}

}  // namespace

TEST_CASE("agent::Runner queues starts beyond the supervisor's window, and a run still queued ends unstarted") {
  Options opts;
  opts.kill_grace = std::chrono::milliseconds(300);
  Runner runner(opts);
  const int n = static_cast<int>(exec::Supervisor::kWindow) + 4;
  for (int i = 1; i <= n; ++i) {
    auto run = sleeper(i);
    // It will be running when the drain comes: at-most-once, it is not run again.
    if (i == 1) run.spec.retry.delivery = model::Delivery::at_most_once;
    CHECK_FALSE(runner.start(run));  // returns at once: nothing waits for the supervisor
  }
  CHECK(runner.size() == static_cast<size_t>(n));
  CHECK(runner.unstarted() == static_cast<size_t>(n));
  CHECK(runner.run_ids().size() == static_cast<size_t>(n));  // the heartbeat keeps every lease
  CHECK(runner.job_of("run-" + std::to_string(n)) == "job-" + std::to_string(n));

  // One queued run is cancelled: it ends without starting, and without an exit status.
  const std::string cancelled = "run-" + std::to_string(n - 1);
  runner.stop(cancelled, Ending::cancel);
  std::map<std::string, Finished> finished;
  for (auto& f : runner.reap()) finished.emplace(f.run.run_id, std::move(f));
  REQUIRE(finished.count(cancelled) == 1);
  CHECK_FALSE(finished.at(cancelled).ran);
  std::mt19937_64 rng{1};
  auto c = outcome_of(finished.at(cancelled), rng);
  CHECK(c.status == model::RunStatus::cancelled);
  CHECK_FALSE(c.exit_code);
  CHECK(runner.size() == static_cast<size_t>(n - 1));

  // The rest start as the supervisor answers.
  test::eventually([&] {
    for (auto& f : runner.reap()) finished.emplace(f.run.run_id, std::move(f));
    return runner.unstarted() == 0;
  }, "every start answered");
  CHECK(finished.size() == 1);  // the sleepers run on

  // A drain ends what runs (killed) and gives back what had not started:
  // past the window, the last few wait their turn when it comes. The last
  // one was never run, so at-most-once or not, it may run again.
  for (int i = 1; i <= n; ++i) {
    auto run = sleeper(100 + i);
    if (i == n) run.spec.retry.delivery = model::Delivery::at_most_once;
    runner.start(run);
  }
  CHECK(runner.unstarted() == static_cast<size_t>(n));
  runner.stop_all(Ending::drain, Runner::Now::yes);
  test::eventually([&] {
    for (auto& f : runner.reap()) finished.emplace(f.run.run_id, std::move(f));
    return runner.size() == 0;
  }, "every run ended");
  REQUIRE(finished.size() == static_cast<size_t>(2 * n));
  size_t never_ran = 0;
  for (const auto& [id, f] : finished) {
    if (id == cancelled) continue;
    CHECK(f.ending == Ending::drain);
    if (!f.ran) {
      ++never_ran;
      continue;
    }
    CHECK(WIFSIGNALED(f.wait_status));
  }
  CHECK(never_ran == static_cast<size_t>(n) - exec::Supervisor::kWindow);
  auto first = outcome_of(finished.at("run-1"), rng);
  CHECK(first.status == model::RunStatus::dead);
  CHECK(first.outcome == model::AttemptOutcome::failed);
  auto last = outcome_of(finished.at("run-" + std::to_string(100 + n)), rng);
  CHECK_FALSE(finished.at("run-" + std::to_string(100 + n)).ran);
  CHECK(last.status == model::RunStatus::pending);
  CHECK(last.outcome == model::AttemptOutcome::released);
}
