#include "common/model/retry.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "common/util/duration.hpp"
#include "common/util/error.hpp"

namespace jobctl::model {

std::string_view to_string(Backoff b) { return name_of(kBackoffNames, b); }
std::string_view to_string(Delivery d) { return name_of(kDeliveryNames, d); }
Backoff parse_backoff(std::string_view text) { return parse_name(kBackoffNames, text, "backoff"); }
Delivery parse_delivery(std::string_view text) { return parse_name(kDeliveryNames, text, "delivery"); }

ExitCodeSet ExitCodeSet::parse(std::string_view text) {
  ExitCodeSet set;
  auto bad = [&](std::string_view part) {
    return usage_error(fmt::format("invalid exit codes '{}': '{}' is not a code or a range of codes 0-255", text, part),
                       "write them like 2,64-78");
  };
  auto number = [&](std::string_view s, std::string_view part) {
    int v = -1;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v > 255) throw bad(part);
    return v;
  };
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view part = text.substr(start, end - start);
    if (part.empty()) throw bad(part);
    size_t dash = part.find('-');
    int lo = number(part.substr(0, dash), part);
    int hi = dash == std::string_view::npos ? lo : number(part.substr(dash + 1), part);
    if (hi < lo) throw bad(part);
    set.ranges_.emplace_back(lo, hi);
    start = end + 1;
  }
  return set;
}

bool ExitCodeSet::contains(int code) const {
  return std::any_of(ranges_.begin(), ranges_.end(), [&](auto r) { return code >= r.first && code <= r.second; });
}

std::string ExitCodeSet::str() const {
  std::string out;
  for (auto [lo, hi] : ranges_) {
    if (!out.empty()) out += ',';
    out += lo == hi ? std::to_string(lo) : fmt::format("{}-{}", lo, hi);
  }
  return out;
}

void RetryOverrides::merge(const RetryOverrides& top) {
  if (top.max_retries) max_retries = top.max_retries;
  if (top.backoff) backoff = top.backoff;
  if (top.delay_us) delay_us = top.delay_us;
  if (top.max_delay_us) max_delay_us = top.max_delay_us;
  if (top.retry_for_us) retry_for_us = top.retry_for_us;
  if (top.no_retry_exit_codes) no_retry_exit_codes = top.no_retry_exit_codes;
  if (top.max_deliveries) max_deliveries = top.max_deliveries;
  if (top.delivery) delivery = top.delivery;
}

RetryPolicy RetryOverrides::resolve() const { return apply_to(RetryPolicy{}); }

RetryPolicy RetryOverrides::apply_to(RetryPolicy p) const {
  if (max_retries) p.max_retries = *max_retries;
  if (backoff) p.backoff = *backoff;
  if (delay_us) p.delay_us = *delay_us;
  if (max_delay_us) p.max_delay_us = *max_delay_us;
  if (retry_for_us) p.retry_for_us = *retry_for_us;
  if (no_retry_exit_codes) p.no_retry_exit_codes = *no_retry_exit_codes;
  if (max_deliveries) p.max_deliveries = *max_deliveries;
  if (delivery) p.delivery = *delivery;
  return p;
}

bool RetryOverrides::empty() const {
  return !max_retries && !backoff && !delay_us && !max_delay_us && !retry_for_us && !no_retry_exit_codes &&
         !max_deliveries && !delivery;
}

void validate(const RetryPolicy& p) {
  if (p.max_retries < 0 || p.max_retries > 1000) throw usage_error(fmt::format("invalid --retries {}: use 0 to 1000", p.max_retries));
  if (p.delay_us < 0) throw usage_error("--retry-delay must not be negative");
  if (p.max_delay_us < p.delay_us)
    throw usage_error(fmt::format("--max-retry-delay {} is shorter than --retry-delay {}",
                                  util::format_duration(util::Micros(p.max_delay_us)),
                                  util::format_duration(util::Micros(p.delay_us))),
                      "raise --max-retry-delay or lower --retry-delay");
  if (p.retry_for_us < 0) throw usage_error("--retry-for must not be negative");
  if (p.max_deliveries < 1 || p.max_deliveries > 1000)
    throw usage_error(fmt::format("invalid --max-deliveries {}: use 1 to 1000", p.max_deliveries));
}

void validate(const RetryOverrides& given) {
  const RetryPolicy p = given.resolve();
  // "--max-retry-delay 5m is shorter than --retry-delay 1h" named a flag
  // the user never gave (a tester): the one not given is the default.
  if (p.max_delay_us < p.delay_us && !(given.delay_us && given.max_delay_us)) {
    const auto max = util::format_duration(util::Micros(p.max_delay_us));
    const auto delay = util::format_duration(util::Micros(p.delay_us));
    throw usage_error(given.delay_us
                          ? fmt::format("--retry-delay {} is longer than the default --max-retry-delay {}", delay, max)
                          : fmt::format("--max-retry-delay {} is shorter than the default --retry-delay {}", max, delay),
                      fmt::format("raise --max-retry-delay to at least {}", delay));
  }
  validate(p);
}

void validate_update(const RetryPolicy& p, const RetryOverrides& given) {
  if (p.max_delay_us < p.delay_us && given.delay_us.has_value() != given.max_delay_us.has_value()) {
    const auto max = util::format_duration(util::Micros(p.max_delay_us));
    const auto delay = util::format_duration(util::Micros(p.delay_us));
    if (given.delay_us)
      throw usage_error(fmt::format("--retry-delay {} is longer than the job's --max-retry-delay {}", delay, max),
                        fmt::format("raise --max-retry-delay to at least {} too", delay));
    throw usage_error(fmt::format("--max-retry-delay {} is shorter than the job's --retry-delay {}", max, delay),
                      fmt::format("lower --retry-delay to at most {} too", max));
  }
  validate(p);
}

std::pair<int64_t, int64_t> backoff_bounds(const RetryPolicy& p, int n) {
  if (p.backoff == Backoff::fixed) return {p.delay_us, p.delay_us};
  int64_t e = p.delay_us;
  for (int i = 1; i < n && e < p.max_delay_us; ++i) e *= 2;
  e = std::min(e, p.max_delay_us);
  if (p.backoff == Backoff::exponential) return {e, e};
  return {e / 2, e};
}

int64_t backoff_delay(const RetryPolicy& p, int n, std::mt19937_64& rng) {
  auto [lo, hi] = backoff_bounds(p, n);
  if (lo == hi) return lo;
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

RetryDecision decide(const RetryPolicy& p, const FailureFacts& f, std::mt19937_64& rng) {
  RetryDecision d;
  if (p.delivery == Delivery::at_most_once) {
    d.dead_reason = "at-most-once: never retried";
  } else if (!f.retryable_class) {
    d.dead_reason = "permanent failure";
  } else if (f.exit_code && p.no_retry_exit_codes.contains(*f.exit_code)) {
    d.dead_reason = fmt::format("permanent exit code {}", *f.exit_code);
  } else if (f.failures > p.max_retries) {
    d.dead_reason = p.max_retries == 0 ? "no retries allowed" : fmt::format("retries exhausted after {} failed attempts", f.failures);
  } else {
    d.delay_us = backoff_delay(p, f.failures, rng);
    if (p.retry_for_us > 0 && f.since_first_attempt_us + d.delay_us > p.retry_for_us) {
      d.dead_reason = fmt::format("retry time budget of {} exhausted",
                                  util::format_duration(util::Micros(p.retry_for_us)));
      d.delay_us = 0;
    } else {
      d.retry = true;
    }
  }
  return d;
}

}  // namespace jobctl::model
