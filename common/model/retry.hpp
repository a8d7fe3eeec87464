#pragma once
// What happens after an attempt fails: retry later, or give up (dead).
//
// A job's RetryPolicy says how many retries it gets, how far apart, for how
// long, which exit codes are permanent, how many deliveries without a
// result make it poison, and whether it may run twice at all. The decision
// is a pure function of the policy and the run's history, so it is tested
// without a clock or a database.
//
// Backoff, for the n-th retry (n = 1, 2, …) with base delay d and cap m:
//   fixed               d
//   exponential         min(m, d · 2^(n-1))
//   exponential-jitter  uniformly random in [e/2, e] with e the exponential
//                       delay ("equal jitter": never zero, so retries of
//                       many runs failing together spread over e/2 instead
//                       of landing at once, yet never sooner than e/2).
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/model/names.hpp"

namespace jobctl::model {

enum class Backoff { fixed, exponential, exponential_jitter };
enum class Delivery { at_least_once, at_most_once };

inline constexpr EnumNames<Backoff, 3> kBackoffNames{{
    {Backoff::fixed, "fixed"},
    {Backoff::exponential, "exponential"},
    {Backoff::exponential_jitter, "exponential-jitter"},
}};
inline constexpr EnumNames<Delivery, 2> kDeliveryNames{{
    {Delivery::at_least_once, "at-least-once"},
    {Delivery::at_most_once, "at-most-once"},
}};

std::string_view to_string(Backoff b);
std::string_view to_string(Delivery d);
Backoff parse_backoff(std::string_view text);    // throws usage Error
Delivery parse_delivery(std::string_view text);  // throws usage Error

// A set of exit codes written like "2,64-78". Empty: none.
class ExitCodeSet {
 public:
  ExitCodeSet() = default;
  // Throws jobctl::Error(ExitCode::usage) naming the bad part.
  static ExitCodeSet parse(std::string_view text);
  bool contains(int code) const;
  std::string str() const;  // canonical text, "" when empty
  bool empty() const { return ranges_.empty(); }

 private:
  std::vector<std::pair<int, int>> ranges_;
};

struct RetryPolicy {
  int max_retries = 3;                          // retries after the first attempt
  Backoff backoff = Backoff::exponential_jitter;
  int64_t delay_us = 1'000'000;                 // base delay (1s)
  int64_t max_delay_us = 300'000'000;           // cap on one delay (5m)
  int64_t retry_for_us = 0;                     // no retry starts this long after the first attempt; 0 = no limit
  ExitCodeSet no_retry_exit_codes;              // these exit codes fail permanently
  int max_deliveries = 5;                       // claims without a result before the run is poison
  Delivery delivery = Delivery::at_least_once;
};

// A partial policy: the fields a job or a queue sets. A job's policy is
// resolved when it is submitted: built-in defaults, then its queue's
// defaults, then what the job itself says.
struct RetryOverrides {
  std::optional<int> max_retries;
  std::optional<Backoff> backoff;
  std::optional<int64_t> delay_us;
  std::optional<int64_t> max_delay_us;
  std::optional<int64_t> retry_for_us;
  std::optional<ExitCodeSet> no_retry_exit_codes;
  std::optional<int> max_deliveries;
  std::optional<Delivery> delivery;

  // Copies the fields `top` sets over this one's.
  void merge(const RetryOverrides& top);
  RetryPolicy resolve() const;  // over the built-in defaults
  RetryPolicy apply_to(RetryPolicy base) const;  // over `base` (jobctl update)
  bool empty() const;
};

// Throws usage Error for a policy that makes no sense (negative numbers,
// max delay below the base delay, zero deliveries).
void validate(const RetryPolicy& p);
// The same for the policy `given` makes over the built-in defaults, a
// delay it does not set named as the default ("--retry-delay 1h is longer
// than the default --max-retry-delay 5m").
void validate(const RetryOverrides& given);
// The same for a job's `policy` once an update gave `given` over it, a
// delay the update does not set named as the job's ("--retry-delay 10m is
// longer than the job's --max-retry-delay 5m").
void validate_update(const RetryPolicy& policy, const RetryOverrides& given);

// The bounds of the delay before retry number `n` (1-based).
std::pair<int64_t, int64_t> backoff_bounds(const RetryPolicy& p, int n);
// A delay before retry `n`, drawn within backoff_bounds().
int64_t backoff_delay(const RetryPolicy& p, int n, std::mt19937_64& rng);

// What an attempt's failure leads to.
struct FailureFacts {
  int failures = 0;                  // failed attempts of this run, this one included
  std::optional<int> exit_code;      // when the process exited by itself
  bool retryable_class = true;       // false for a permanent failure (command not found, …)
  int64_t since_first_attempt_us = 0;  // how long ago the run first started
};

struct RetryDecision {
  bool retry = false;
  int64_t delay_us = 0;   // when retry
  std::string dead_reason;  // when not: "retries exhausted", "permanent exit code 65", …
};

RetryDecision decide(const RetryPolicy& p, const FailureFacts& f, std::mt19937_64& rng);

}  // namespace jobctl::model
