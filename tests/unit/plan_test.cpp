// What the scheduler does with one schedule at one tick (cron/plan.hpp).
#include <doctest/doctest.h>

#include "common/cron/plan.hpp"
#include "common/util/error.hpp"

using namespace jobctl;

namespace {

constexpr int64_t kMinute = 60'000'000;
constexpr int64_t kNow = 1'893'456'000LL * 1'000'000 + 30 * kMinute + 20'000'000;  // 2030-01-01 00:30:20Z

cron::Plan plan(const char* expr_text, model::Misfire misfire, int64_t next_fire_at, int64_t catchup = 0) {
  static auto utc = util::TimeZone::locate("UTC");
  auto expr = cron::Expr::parse(expr_text);
  cron::PlanInput in;
  in.expr = &expr;
  in.zone = utc.get();
  in.misfire = misfire;
  in.catchup_window_us = catchup;
  in.next_fire_at = next_fire_at;
  in.now_us = kNow;
  in.horizon_us = 2 * kMinute;
  in.misfire_after_us = kMinute;
  return cron::plan_occurrences(in);
}

int64_t minute(int m) { return kNow - 20'000'000 - 30 * kMinute + m * kMinute; }  // 00:mm:00

}  // namespace

TEST_CASE("plan: on time, occurrences up to the horizon become runs and the next one is kept") {
  auto p = plan("* * * * *", model::Misfire::latest, minute(31));
  CHECK(p.fire == std::vector<int64_t>{minute(31), minute(32)});
  CHECK(p.skipped.empty());
  CHECK(p.next_fire_at == minute(33));
  CHECK_FALSE(p.more);
}

TEST_CASE("plan: an occurrence late by less than the threshold still runs") {
  auto p = plan("* * * * *", model::Misfire::skip, minute(30));  // 20 s late
  CHECK(p.fire.front() == minute(30));
  CHECK(p.skipped.empty());
}

TEST_CASE("plan: misfire latest runs only the newest missed occurrence") {
  auto p = plan("* * * * *", model::Misfire::latest, minute(20));
  // 00:20..00:29 missed (older than a minute), 00:30 on time.
  REQUIRE(p.skipped.size() == 1);
  CHECK(p.skipped[0].first == minute(20));
  CHECK(p.skipped[0].last == minute(28));
  CHECK(p.skipped[0].count == 9);
  CHECK(p.fire == std::vector<int64_t>{minute(29), minute(30), minute(31), minute(32)});
}

TEST_CASE("plan: misfire skip runs none, misfire all runs each within the window") {
  auto skip = plan("* * * * *", model::Misfire::skip, minute(20));
  REQUIRE(skip.skipped.size() == 1);
  CHECK(skip.skipped[0].count == 10);
  CHECK(skip.fire.front() == minute(30));

  auto all = plan("* * * * *", model::Misfire::all, minute(20), 5 * kMinute + 20'000'000);
  REQUIRE(all.skipped.size() == 1);
  CHECK(all.skipped[0].count == 5);  // 00:20..00:24 are older than the window
  CHECK(all.fire.front() == minute(25));
}

TEST_CASE("plan: misfire all catches up at most kCatchUpPerTick per tick, then resumes where it stopped") {
  auto p = plan("* * * * *", model::Misfire::all, minute(0), 60 * kMinute);
  CHECK(p.more);
  CHECK(p.fire.size() == static_cast<size_t>(cron::kCatchUpPerTick));
  CHECK(p.next_fire_at == minute(cron::kCatchUpPerTick));
}

TEST_CASE("plan: a long outage is worked off over several ticks, keeping the newest missed one for latest") {
  // A per-second schedule missed for a day: more steps than one tick takes.
  int64_t day_ago = kNow - 20'000'000 - 86'400'000'000LL;
  auto p = plan("* * * * * *", model::Misfire::latest, day_ago);
  CHECK(p.more);
  CHECK(p.fire.empty());
  REQUIRE(p.next_fire_at);
  CHECK(*p.next_fire_at > day_ago);
  CHECK(*p.next_fire_at < kNow);
  CHECK(p.skipped.at(0).count == cron::kStepsPerTick - 1);
}

TEST_CASE("plan: an expression that stops firing leaves no next time") {
  // @every from an anchor always has a next; a yearly one far ahead is
  // simply beyond the horizon.
  auto p = plan("0 0 1 1 *", model::Misfire::latest, minute(0) + 365LL * 86'400'000'000LL);
  CHECK(p.fire.empty());
  CHECK(p.next_fire_at == minute(0) + 365LL * 86'400'000'000LL);
}

namespace {

cron::Plan bounded(model::Misfire misfire, int64_t next_fire_at, std::optional<int64_t> ends_at,
                   std::optional<int64_t> remaining) {
  static auto utc = util::TimeZone::locate("UTC");
  static auto expr = cron::Expr::parse("* * * * *");
  cron::PlanInput in;
  in.expr = &expr;
  in.zone = utc.get();
  in.misfire = misfire;
  in.catchup_window_us = 60 * kMinute;
  in.next_fire_at = next_fire_at;
  in.now_us = kNow;
  in.horizon_us = 2 * kMinute;
  in.misfire_after_us = kMinute;
  in.ends_at_us = ends_at;
  in.remaining = remaining;
  return cron::plan_occurrences(in);
}

}  // namespace

TEST_CASE("plan: nothing fires after --ends-at, and the schedule ends there") {
  auto p = bounded(model::Misfire::latest, minute(31), minute(31), std::nullopt);
  CHECK(p.fire == std::vector<int64_t>{minute(31)});
  CHECK_FALSE(p.next_fire_at);
  // Ending beyond the horizon: it goes on.
  auto on = bounded(model::Misfire::latest, minute(31), minute(40), std::nullopt);
  CHECK(on.next_fire_at == minute(33));
  // The newest missed occurrence still runs when --ends-at falls among the missed.
  auto missed = bounded(model::Misfire::latest, minute(20), minute(25), std::nullopt);
  CHECK(missed.fire == std::vector<int64_t>{minute(25)});
  CHECK_FALSE(missed.next_fire_at);
}

TEST_CASE("plan: --max-runs fires only what remains, counting a missed occurrence that runs") {
  auto p = bounded(model::Misfire::latest, minute(31), std::nullopt, 1);
  CHECK(p.fire == std::vector<int64_t>{minute(31)});
  CHECK_FALSE(p.next_fire_at);
  CHECK_FALSE(p.more);
  auto none = bounded(model::Misfire::latest, minute(31), std::nullopt, 0);
  CHECK(none.fire.empty());
  CHECK_FALSE(none.next_fire_at);
  auto missed = bounded(model::Misfire::latest, minute(20), std::nullopt, 1);
  CHECK(missed.fire == std::vector<int64_t>{minute(29)});
  CHECK_FALSE(missed.next_fire_at);
  auto all = bounded(model::Misfire::all, minute(20), std::nullopt, 3);
  CHECK(all.fire == std::vector<int64_t>{minute(20), minute(21), minute(22)});
  CHECK_FALSE(all.next_fire_at);
  auto plenty = bounded(model::Misfire::latest, minute(31), std::nullopt, 10);
  CHECK(plenty.fire.size() == 2);
  CHECK(plenty.next_fire_at == minute(33));
}

TEST_CASE("plan: a --jitter longer than the gap between two occurrences is refused") {
  auto with_jitter = [](const char* cron_text, int64_t jitter_us, const char* tz = "UTC") {
    model::ScheduleSpec s;
    s.cron = cron_text;
    s.tz = tz;
    s.jitter_us = jitter_us;
    return s;
  };
  // The delay is in [0, jitter): a jitter as long as the gap is fine.
  CHECK_NOTHROW(cron::validate_schedule(with_jitter("*/5 * * * *", 5 * kMinute), ""));
  CHECK_THROWS_WITH_AS(cron::validate_schedule(with_jitter("*/5 * * * *", 6 * kMinute), ""),
                       doctest::Contains("--jitter 6m is longer than the 5m between two"), Error);
  // 5m looks short beside */7's seven minutes, but :56 to :00 is four.
  CHECK_THROWS_WITH_AS(cron::validate_schedule(with_jitter("*/7 * * * *", 5 * kMinute), ""),
                       doctest::Contains("the 4m between"), Error);
  // Weekdays at 09:00: a day, not the weekend's three.
  CHECK_THROWS_AS(cron::validate_schedule(with_jitter("0 9 * * 1-5", 25 * 60 * kMinute), ""), Error);
  CHECK_NOTHROW(cron::validate_schedule(with_jitter("0 9 * * 1-5", 24 * 60 * kMinute), ""));
  CHECK_THROWS_AS(cron::validate_schedule(with_jitter("@daily", 36500LL * 24 * 60 * kMinute), ""), Error);
  // A day in Berlin is 23 hours once a year, whatever today's date.
  CHECK_THROWS_WITH_AS(cron::validate_schedule(with_jitter("0 9 * * *", 23 * 60 * kMinute + kMinute, "Europe/Berlin"), ""),
                       doctest::Contains("the 23h between"), Error);
  CHECK_NOTHROW(cron::validate_schedule(with_jitter("0 9 * * *", 23 * 60 * kMinute, "Europe/Berlin"), ""));
  // Not looked at when the caller says the timing did not change.
  CHECK_NOTHROW(cron::validate_schedule(with_jitter("*/5 * * * *", 6 * kMinute), "", cron::JitterCheck::no));
}
