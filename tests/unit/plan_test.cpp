// What the scheduler does with one schedule at one tick (cron/plan.hpp).
#include <doctest/doctest.h>

#include "common/cron/plan.hpp"

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
