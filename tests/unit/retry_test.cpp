#include <doctest/doctest.h>

#include "common/model/retry.hpp"
#include "common/util/error.hpp"

using namespace jobctl::model;

namespace {

RetryPolicy policy(Backoff b, int64_t delay, int64_t max) {
  RetryPolicy p;
  p.backoff = b;
  p.delay_us = delay;
  p.max_delay_us = max;
  return p;
}

}  // namespace

TEST_CASE("retry: backoff bounds for each policy") {
  auto fixed = policy(Backoff::fixed, 1000, 5000);
  auto expo = policy(Backoff::exponential, 1000, 5000);
  auto jitter = policy(Backoff::exponential_jitter, 1000, 5000);
  for (int n : {1, 2, 5}) CHECK(backoff_bounds(fixed, n) == std::pair<int64_t, int64_t>{1000, 1000});
  CHECK(backoff_bounds(expo, 1) == std::pair<int64_t, int64_t>{1000, 1000});
  CHECK(backoff_bounds(expo, 2) == std::pair<int64_t, int64_t>{2000, 2000});
  CHECK(backoff_bounds(expo, 3) == std::pair<int64_t, int64_t>{4000, 4000});
  CHECK(backoff_bounds(expo, 4) == std::pair<int64_t, int64_t>{5000, 5000});    // capped
  CHECK(backoff_bounds(expo, 500) == std::pair<int64_t, int64_t>{5000, 5000});  // no overflow
  CHECK(backoff_bounds(jitter, 1) == std::pair<int64_t, int64_t>{500, 1000});
  CHECK(backoff_bounds(jitter, 3) == std::pair<int64_t, int64_t>{2000, 4000});
  CHECK(backoff_bounds(jitter, 9) == std::pair<int64_t, int64_t>{2500, 5000});
}

TEST_CASE("retry: jittered delays stay within their bounds and actually vary") {
  auto p = policy(Backoff::exponential_jitter, 1'000'000, 300'000'000);
  std::mt19937_64 rng(42);
  for (int n = 1; n <= 12; ++n) {
    auto [lo, hi] = backoff_bounds(p, n);
    int64_t min = hi, max = lo;
    for (int i = 0; i < 2000; ++i) {
      int64_t d = backoff_delay(p, n, rng);
      REQUIRE(d >= lo);
      REQUIRE(d <= hi);
      min = std::min(min, d);
      max = std::max(max, d);
    }
    CHECK(max - min > (hi - lo) / 2);  // spread over the range, not a constant
  }
}

TEST_CASE("retry: decide retries until the budget is spent, then gives a reason") {
  RetryPolicy p;
  p.max_retries = 2;
  p.backoff = Backoff::fixed;
  std::mt19937_64 rng(1);
  FailureFacts f;
  f.failures = 1;
  CHECK(decide(p, f, rng).retry);
  f.failures = 2;
  CHECK(decide(p, f, rng).retry);
  f.failures = 3;
  auto d = decide(p, f, rng);
  CHECK_FALSE(d.retry);
  CHECK(d.dead_reason == "retries exhausted after 3 failed attempts");
}

TEST_CASE("retry: permanent exit codes, permanent failures and at-most-once never retry") {
  RetryPolicy p;
  p.no_retry_exit_codes = ExitCodeSet::parse("2,64-78");
  std::mt19937_64 rng(1);
  FailureFacts f;
  f.failures = 1;
  f.exit_code = 65;
  CHECK(decide(p, f, rng).dead_reason == "permanent exit code 65");
  f.exit_code = 1;
  CHECK(decide(p, f, rng).retry);
  f.retryable_class = false;
  CHECK(decide(p, f, rng).dead_reason == "permanent failure");
  f.retryable_class = true;
  p.delivery = Delivery::at_most_once;
  CHECK_FALSE(decide(p, f, rng).retry);
}

TEST_CASE("retry: no retry starts after the --retry-for budget") {
  RetryPolicy p;
  p.backoff = Backoff::fixed;
  p.delay_us = 1'000'000;
  p.retry_for_us = 10'000'000;
  std::mt19937_64 rng(1);
  FailureFacts f;
  f.failures = 1;
  f.since_first_attempt_us = 8'000'000;
  CHECK(decide(p, f, rng).retry);
  f.since_first_attempt_us = 9'500'000;  // the retry would start at 10.5s
  auto d = decide(p, f, rng);
  CHECK_FALSE(d.retry);
  CHECK(d.dead_reason == "retry time budget of 10s exhausted");
}

TEST_CASE("retry: exit code sets parse ranges and reject junk") {
  auto s = ExitCodeSet::parse("2,64-78,255");
  CHECK(s.contains(2));
  CHECK(s.contains(64));
  CHECK(s.contains(70));
  CHECK(s.contains(78));
  CHECK(s.contains(255));
  CHECK_FALSE(s.contains(1));
  CHECK_FALSE(s.contains(79));
  CHECK(s.str() == "2,64-78,255");
  CHECK(ExitCodeSet::parse("").empty());
  for (const char* bad : {"a", "2,", ",2", "78-64", "256", "-1", "1-2-3"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(ExitCodeSet::parse(bad), jobctl::Error);
  }
}

TEST_CASE("retry: validate rejects nonsense policies") {
  RetryPolicy p;
  p.max_delay_us = p.delay_us - 1;
  CHECK_THROWS_AS(validate(p), jobctl::Error);
  p = RetryPolicy{};
  p.max_deliveries = 0;
  CHECK_THROWS_AS(validate(p), jobctl::Error);
  p = RetryPolicy{};
  p.max_retries = -1;
  CHECK_THROWS_AS(validate(p), jobctl::Error);
  CHECK_NOTHROW(validate(RetryPolicy{}));
}
