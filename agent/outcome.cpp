#include "agent/outcome.hpp"

#include <sys/wait.h>

#include <curl/curl.h>
#include <fmt/format.h>

#include "common/exec/process.hpp"
#include "common/util/duration.hpp"

namespace jobctl::agent {
namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;

// Applies the job's retry policy to a failed attempt. A retry waits at
// least `at_least_us` (a Retry-After), within the policy's longest delay.
void fail(store::Completion& c, const store::ClaimedRun& run, model::FailureFacts facts, std::mt19937_64& rng,
          int64_t at_least_us = 0) {
  c.outcome = model::AttemptOutcome::failed;
  facts.failures = run.failures + 1;
  auto d = model::decide(run.spec.retry, facts, rng);
  const auto& p = run.spec.retry;
  if (d.retry && at_least_us > d.delay_us) {
    d.delay_us = std::min(at_least_us, p.max_delay_us);
    // The server's wait must still fit in --retry-for.
    if (p.retry_for_us > 0 && facts.since_first_attempt_us + d.delay_us > p.retry_for_us) {
      d.retry = false;
      d.dead_reason = fmt::format("the server asks to wait {}, beyond --retry-for {}",
                                  util::format_duration(microseconds(d.delay_us)),
                                  util::format_duration(microseconds(p.retry_for_us)));
    }
  }
  if (d.retry) {
    c.status = model::RunStatus::pending;
    c.retry_delay_us = d.delay_us;
  } else {
    c.status = model::RunStatus::dead;
    c.error += "; " + d.dead_reason;
  }
}

// The --notify notifications of this end of the run, if it asked for them.
void notify(store::Completion& c, const store::ClaimedRun& run, std::optional<int64_t> duration_us) {
  if (run.spec.notify.empty()) return;
  model::NotificationFacts facts{run.job_id, run.run_id, c.status,    run.attempt,      c.error,
                                 duration_us, c.exit_code, c.http_status, c.retry_delay_us};
  c.notifications = model::notification_jobs(run.spec, facts, c.outcome == model::AttemptOutcome::failed);
}

// A user's cancel or the agent's drain: the same for commands and webhooks.
// Returns false for any other ending.
bool ended_by_us(store::Completion& c, const Finished& f) {
  switch (f.ending) {
    case Ending::cancel:
      c.status = model::RunStatus::cancelled;
      c.outcome = model::AttemptOutcome::cancelled;
      c.error = "cancelled by user";
      return true;
    case Ending::drain:
      c.outcome = model::AttemptOutcome::released;
      c.error = "released: the agent was draining";
      if (f.ran && f.run.spec.retry.delivery == model::Delivery::at_most_once) {
        // It already ran, partly: running it again would break the promise.
        c.status = model::RunStatus::dead;
        c.outcome = model::AttemptOutcome::failed;
        c.error = "at-most-once: interrupted by agent shutdown, so it is not run again";
      } else {
        c.status = model::RunStatus::pending;
      }
      return true;
    default:
      return false;
  }
}

// No response, for a reason that may pass: name lookup, connect, TLS,
// timeouts, a connection that broke. A malformed URL (say, a secret's
// value that makes it one) or an unsupported protocol will not.
bool transient(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_OUT_OF_MEMORY:
      return true;
    default:
      return false;
  }
}

// A webhook's request: 2xx succeeds; 408, 429, 5xx and no response at all
// (connect, DNS, TLS, timeout) are retried; any other status is permanent.
void http_outcome(store::Completion& c, const Finished& f, model::FailureFacts facts, std::mt19937_64& rng) {
  const HttpResult& h = *f.http;
  c.timings = h.timings;
  if (h.curl_code != CURLE_OK) {
    c.error = h.curl_code == CURLE_OPERATION_TIMEDOUT
                  ? std::string(model::kTimedOutAfter) + util::format_duration(microseconds(h.timeout_us)) + ": " + h.error
                  : fmt::format("request failed: {} (curl error {})", h.error, h.curl_code);
    facts.retryable_class = transient(static_cast<CURLcode>(h.curl_code));
    fail(c, f.run, facts, rng);
    return;
  }
  c.http_status = h.status;
  if (h.status >= 200 && h.status < 300) return;
  c.error = fmt::format("HTTP {}", h.status);
  if (h.status == 408 || h.status == 429 || h.status >= 500) {
    bool honour = h.retry_after_us && (h.status == 429 || h.status == 503);
    if (honour) c.error += fmt::format(" (Retry-After {})", util::format_duration(microseconds(*h.retry_after_us)));
    fail(c, f.run, facts, rng, honour ? *h.retry_after_us : 0);
    return;
  }
  c.error += h.status >= 300 && h.status < 400 ? ": redirects are not followed; point --webhook at the final URL"
                                               : ": a client error is not retried";
  facts.retryable_class = false;
  fail(c, f.run, facts, rng);
}

}  // namespace

store::Completion outcome_of(const Finished& f, std::mt19937_64& rng) {
  store::Completion c = store::completion_of(f.run, model::RunStatus::succeeded);
  c.stdout_tail = f.stdout_tail;
  c.stderr_tail = f.stderr_tail;
  c.stdout_bytes = f.stdout_bytes;
  c.stderr_bytes = f.stderr_bytes;
  const int64_t elapsed_us = duration_cast<microseconds>(f.elapsed).count();
  model::FailureFacts facts;
  facts.since_first_attempt_us = f.run.claimed_at - f.run.first_started_at + elapsed_us;
  if (f.http) {
    if (!ended_by_us(c, f)) http_outcome(c, f, facts, rng);
    notify(c, f.run, elapsed_us);
    return c;
  }
  if (f.ran && WIFEXITED(f.wait_status)) c.exit_code = WEXITSTATUS(f.wait_status);
  if (f.ran && WIFSIGNALED(f.wait_status)) c.signal = WTERMSIG(f.wait_status);
  if (ended_by_us(c, f)) {
    notify(c, f.run, elapsed_us);
    return c;
  }
  if (f.ending == Ending::timeout) {
    c.error = std::string(model::kTimedOutAfter) + util::format_duration(microseconds(f.run.spec.timeout_us));
    fail(c, f.run, facts, rng);
  } else if (c.exit_code == 0) {
    // succeeded
  } else {
    if (c.exit_code) {
      c.error = fmt::format("exited with code {}", *c.exit_code);
      facts.exit_code = c.exit_code;
    } else if (c.signal) {
      c.error = exec::describe_signal(*c.signal);
    }
    fail(c, f.run, facts, rng);
  }
  notify(c, f.run, elapsed_us);
  return c;
}

store::Completion start_failure(const store::ClaimedRun& run, const std::string& error, std::mt19937_64& rng,
                                Permanent permanent) {
  store::Completion c = store::completion_of(run, model::RunStatus::dead);
  c.error = error;
  model::FailureFacts facts;
  facts.retryable_class = permanent == Permanent::no;
  fail(c, run, facts, rng);
  notify(c, run, std::nullopt);
  return c;
}

}  // namespace jobctl::agent
