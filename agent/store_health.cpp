#include "agent/store_health.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "common/util/duration.hpp"
#include "common/util/log.hpp"

namespace jobctl::agent {

using std::chrono::duration_cast;
using util::log_event;
using util::LogLevel;
using util::Micros;

namespace {
constexpr auto kRepeatEvery = std::chrono::seconds(30);
constexpr auto kSettled = std::chrono::seconds(5);

std::string length(StoreHealth::Clock::duration d) { return util::format_duration(duration_cast<Micros>(d)); }
}  // namespace

void StoreHealth::begin_outage(const std::string& step, const std::string& reason, Clock::time_point now) {
  down_since_ = now;
  last_report_ = now;
  last_failure_ = now;
  failing_ = {step};
  failures_ = 0;
  log_event(LogLevel::error, "store_unreachable", {{"step", step}, {"error", reason}});
}

void StoreHealth::failed(const std::string& step, const std::string& reason, Clock::time_point now) {
  ++failures_;
  if (!down_since_) begin_outage(step, reason, now);
  else still_failing(step, reason, now);
}

void StoreHealth::waiting(const char* step, Clock::time_point since, Clock::time_point now) {
  if (now - since < stall_after_) return;
  const std::string reason = "no answer for " + length(now - since);
  if (!down_since_) begin_outage(step, reason, since);
  else still_failing(step, fmt::format("{}: {}", step, reason), now);
}

void StoreHealth::still_failing(const std::string& step, const std::string& reason, Clock::time_point now) {
  failing_.insert(step);
  last_failure_ = now;
  if (now - last_report_ < kRepeatEvery) return;
  last_report_ = now;
  log_event(LogLevel::error, "store_still_unreachable",
            {{"for", length(now - *down_since_)}, {"failures", std::to_string(failures_)}, {"error", reason}});
}

StoreHealth::Clock::time_point StoreHealth::next_look(Clock::time_point since) const {
  return down_since_ ? std::max(since + stall_after_, last_report_ + kRepeatEvery) : since + stall_after_;
}

void StoreHealth::succeeded(const std::string& step, Clock::time_point now) {
  if (!down_since_) return;
  failing_.erase(step);
  if (!failing_.empty() && now - last_failure_ < kSettled) return;
  failing_.clear();
  log_event(LogLevel::info, "store_back", {{"outage", length(now - *down_since_)}});
  down_since_.reset();
  calm_since_ = now;
}

void StoreHealth::clock_stepped(int64_t step_us, Clock::time_point now) {
  log_event(LogLevel::warn, "clock_step",
            {{"step", fmt::format("{}{}", step_us < 0 ? '-' : '+', util::format_duration(Micros(std::llabs(step_us))))}});
  calm_since_ = now;
}

int64_t ClockWatch::Reading::expected_at(StoreHealth::Clock::time_point now) const {
  return store_us + duration_cast<Micros>(now - at).count();
}

std::optional<int64_t> ClockWatch::observe(int64_t store_now_us, StoreHealth::Clock::time_point now) {
  std::optional<int64_t> step;
  if (last_) {
    int64_t drift = store_now_us - last_->expected_at(now);
    if (std::llabs(drift) > tolerance_us_) step = drift;
  }
  last_ = Reading{store_now_us, now};
  return step;
}

}  // namespace jobctl::agent
