#include "agent/outcome.hpp"

#include <sys/wait.h>

#include <fmt/format.h>

#include "common/exec/process.hpp"
#include "common/util/duration.hpp"

namespace jobctl::agent {
namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;

// Applies the job's retry policy to a failed attempt.
void fail(store::Completion& c, const store::ClaimedRun& run, model::FailureFacts facts, std::mt19937_64& rng) {
  c.outcome = "failed";
  facts.failures = run.failures + 1;
  auto d = model::decide(run.spec.retry, facts, rng);
  if (d.retry) {
    c.status = model::RunStatus::pending;
    c.retry_delay_us = d.delay_us;
  } else {
    c.status = model::RunStatus::dead;
    c.error += "; " + d.dead_reason;
  }
}

}  // namespace

store::Completion outcome_of(const Finished& f, std::mt19937_64& rng) {
  store::Completion c = store::completion_of(f.run, model::RunStatus::succeeded);
  c.stdout_tail = f.stdout_tail;
  c.stderr_tail = f.stderr_tail;
  if (WIFEXITED(f.wait_status)) c.exit_code = WEXITSTATUS(f.wait_status);
  if (WIFSIGNALED(f.wait_status)) c.signal = WTERMSIG(f.wait_status);
  model::FailureFacts facts;
  facts.since_first_attempt_us =
      f.run.claimed_at - f.run.first_started_at + duration_cast<microseconds>(f.elapsed).count();
  switch (f.ending) {
    case Ending::cancel:
      c.status = model::RunStatus::cancelled;
      c.outcome = "cancelled";
      c.error = "cancelled by user";
      return c;
    case Ending::drain:
      c.outcome = "released";
      c.error = "released: the agent was draining";
      if (f.run.spec.retry.delivery == model::Delivery::at_most_once) {
        // It already ran, partly: running it again would break the promise.
        c.status = model::RunStatus::dead;
        c.outcome = "failed";
        c.error = "at-most-once: interrupted by agent shutdown, so it is not run again";
      } else {
        c.status = model::RunStatus::pending;
      }
      return c;
    case Ending::timeout:
      c.error = "timed out after " + util::format_duration(microseconds(f.run.spec.timeout_us));
      fail(c, f.run, facts, rng);
      return c;
    case Ending::none:
    case Ending::lost:
      break;
  }
  if (c.exit_code == 0) return c;
  if (c.exit_code) {
    c.error = fmt::format("exited with code {}", *c.exit_code);
    facts.exit_code = c.exit_code;
  } else if (c.signal) {
    c.error = exec::describe_signal(*c.signal);
  }
  fail(c, f.run, facts, rng);
  return c;
}

store::Completion start_failure(const store::ClaimedRun& run, const std::string& error, std::mt19937_64& rng) {
  store::Completion c = store::completion_of(run, model::RunStatus::dead);
  c.error = error;
  model::FailureFacts facts;
  facts.retryable_class = false;
  fail(c, run, facts, rng);
  return c;
}

}  // namespace jobctl::agent
