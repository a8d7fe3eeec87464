#include "common/cron/plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/time.hpp"

namespace jobctl::cron {
namespace {

// Adds `at` to the last span when it has the same reason, else opens one.
void skip(Plan& plan, int64_t at, const char* reason) {
  if (!plan.skipped.empty() && plan.skipped.back().reason == reason) {
    plan.skipped.back().last = at;
    ++plan.skipped.back().count;
    return;
  }
  plan.skipped.push_back(SkippedSpan{at, at, 1, reason});
}

}  // namespace

Plan plan_occurrences(const PlanInput& in) {
  Plan plan;
  const int64_t missed_before = in.now_us - in.misfire_after_us;
  const int64_t until = in.now_us + in.horizon_us;
  const int64_t window_start = in.now_us - in.catchup_window_us;
  const auto full = [&] { return in.remaining && static_cast<int64_t>(plan.fire.size()) >= *in.remaining; };
  std::optional<int64_t> t = in.next_fire_at;
  // `latest` keeps the newest missed occurrence back until it knows no
  // newer one is missed too.
  std::optional<int64_t> latest_missed;
  int caught_up = 0;
  for (int steps = 0; t && *t <= until; ++steps) {
    if (full() || (in.ends_at_us && *t > *in.ends_at_us)) {
      t.reset();  // the schedule has ended
      break;
    }
    if (steps == kStepsPerTick || caught_up == kCatchUpPerTick) {
      plan.more = true;
      break;
    }
    if (*t >= missed_before) {
      if (latest_missed) {
        plan.fire.push_back(*latest_missed);
        latest_missed.reset();
        continue;  // `t` again, now that the missed one counts
      }
      plan.fire.push_back(*t);
    } else if (in.misfire == model::Misfire::skip) {
      skip(plan, *t, "missed: no scheduler ran at its time (misfire skip)");
    } else if (in.misfire == model::Misfire::latest) {
      if (latest_missed) skip(plan, *latest_missed, "missed: a later occurrence runs instead (misfire latest)");
      latest_missed = *t;
    } else if (*t < window_start) {
      skip(plan, *t, "missed: older than the catch-up window (misfire all)");
    } else {
      plan.fire.push_back(*t);
      ++caught_up;
    }
    t = in.expr->next(*t, *in.zone, in.anchor_us);
  }
  if (latest_missed) {
    if (plan.more) {
      // Not known yet whether it is the newest missed one: start there next tick.
      plan.next_fire_at = latest_missed;
      return plan;
    }
    if (!full()) plan.fire.push_back(*latest_missed);
  }
  if (full() || (t && in.ends_at_us && *t > *in.ends_at_us)) t.reset();
  plan.next_fire_at = t;
  return plan;
}

namespace {

// How far the shortest gap between two occurrences is looked for: a year
// and a bit from now, so both DST changes are in it whatever the date, or
// this many occurrences (a minute schedule's week), whichever comes first.
constexpr int64_t kJitterSpanUs = 400LL * 86400 * 1000000;
constexpr int kJitterOccurrences = 10'000;

// A jitter longer than the gap between two occurrences would start a later
// one before an earlier one: the overlap policy and catch-up would see
// them out of order. (The delay is in [0, jitter): as long as the gap is
// fine.)
void check_jitter(const model::ScheduleSpec& s, std::string_view hash_key, const Expr& expr,
                  const util::TimeZone& zone) {
  if (s.jitter_us <= 0) return;
  // An unnamed job's H is hashed from its id, which it has not got yet:
  // looked at once it has (an update of its timing).
  if (hash_key.empty() && s.cron.find('H') != std::string::npos) return;
  const int64_t anchor = anchor_of(s, util::now_micros());
  std::optional<int64_t> t = expr.next(anchor - 1, zone, anchor);
  for (int i = 0; t && i < kJitterOccurrences && *t - anchor < kJitterSpanUs; ++i) {
    const auto n = expr.next(*t, zone, anchor);
    if (!n || (s.ends_at_us && *n > *s.ends_at_us)) return;
    if (*n - *t < s.jitter_us)
      throw usage_error(fmt::format("--jitter {} is longer than the {} between two of the schedule's occurrences "
                                    "({} and {})",
                                    util::format_duration(util::Micros(s.jitter_us)),
                                    util::format_duration(util::Micros(*n - *t)), util::format_time(*t),
                                    util::format_time(*n)),
                        "give a --jitter no longer than that, so each occurrence starts before the next one's time");
    t = n;
  }
}

}  // namespace

void validate_schedule(const model::ScheduleSpec& s, std::string_view hash_key, JitterCheck jitter) {
  const auto expr = Expr::parse(s.cron, hash_key);
  const auto zone = util::TimeZone::locate(s.tz);
  model::validate(s);
  if (jitter == JitterCheck::yes) check_jitter(s, hash_key, expr, *zone);
}

std::string hash_key(const model::Job& job) { return job.spec.name.empty() ? job.id : job.spec.name; }

Expr expr_of(const model::Job& job) { return Expr::parse(job.spec.schedule->cron, hash_key(job)); }

std::optional<int64_t> next_of_expression(const model::Job& job, int64_t after_us) {
  auto zone = util::TimeZone::locate(job.spec.schedule->tz);
  return expr_of(job).next(after_us, *zone, job.schedule_anchor);
}

int64_t anchor_of(const model::ScheduleSpec& s, int64_t now_us) {
  return s.starts_at_us ? std::max(now_us, *s.starts_at_us) : now_us;
}

std::optional<int64_t> remaining_runs(const model::Job& job) {
  const auto& max = job.spec.schedule->max_runs;
  if (!max) return std::nullopt;
  return std::max<int64_t>(0, *max - job.fired);
}

std::optional<int64_t> next_occurrence(const model::Job& job, int64_t after_us) {
  const auto& sc = *job.spec.schedule;
  if (remaining_runs(job) == 0) return std::nullopt;
  if (sc.starts_at_us) after_us = std::max(after_us, *sc.starts_at_us - 1);
  auto next = next_of_expression(job, after_us);
  if (next && sc.ends_at_us && *next > *sc.ends_at_us) return std::nullopt;
  return next;
}

}  // namespace jobctl::cron
