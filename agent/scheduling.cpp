// The scheduler leader's duties in the agent loop. Every agent (unless
// --no-scheduler) tries to take the leader lease every third of --lease;
// the one that holds it materialises cron occurrences --schedule-horizon
// ahead, once a second or sooner when a tick left work over, and applies
// the overlap policies that skip or cancel. A draining agent resigns so
// another takes over at once. With --gc-older-than it also removes finished
// history past that age, every --gc-every.
#include <fmt/format.h>

#include "agent/agent.hpp"
#include "common/util/log.hpp"

namespace jobctl::agent {

using std::chrono::duration_cast;
using std::chrono::microseconds;
using util::log_event;
using util::LogLevel;

namespace {
constexpr auto kScheduleTick = std::chrono::seconds(1);
constexpr auto kBacklogTick = std::chrono::milliseconds(50);
// Retention: small transactions, a few per pass, so claims and the
// schedule go on in between; a backlog is worked off a second at a time.
constexpr int kGcBatch = 1000;
constexpr int kGcBatchesPerPass = 5;
}  // namespace

void Agent::lead_if_due(Clock::time_point now) {
  if (!opts_.scheduler || now < next_lead_ || now < store_backoff_until_) return;
  if (phase_ != Phase::running) {
    if (epoch_) with_store("resign", [&] {
        store_->resign(worker_id_);
        log_event(LogLevel::info, "scheduler_resigned", {{"epoch", std::to_string(*epoch_)}});
        epoch_.reset();
      });
    next_lead_ = Clock::time_point::max();
    return;
  }
  next_lead_ = now + opts_.lease / 3;
  with_store("lead", [&] {
    auto epoch = store_->lead(worker_id_, duration_cast<microseconds>(opts_.lease).count());
    if (epoch && epoch != epoch_) {
      log_event(LogLevel::info, "scheduler_leading", {{"epoch", std::to_string(*epoch)}});
      next_schedule_ = now;
    } else if (!epoch && epoch_) {
      log_event(LogLevel::warn, "scheduler_deposed", {{"epoch", std::to_string(*epoch_)}});
    }
    epoch_ = epoch;
  });
}

void Agent::schedule_if_due(Clock::time_point now) {
  if (!epoch_ || now < next_schedule_ || now < store_backoff_until_) return;
  next_schedule_ = now + kScheduleTick;
  store::SchedulerSettings settings;
  settings.horizon_us = duration_cast<microseconds>(opts_.schedule_horizon).count();
  settings.misfire_after_us = duration_cast<microseconds>(opts_.misfire_threshold).count();
  // Not with_store: a scheduler error must not hold back this agent's claims.
  try {
    auto r = store_->materialise(worker_id_, *epoch_, settings);
    if (r.fenced) {
      log_event(LogLevel::warn, "scheduler_deposed", {{"epoch", std::to_string(*epoch_)}});
      epoch_.reset();
      return;
    }
    for (const auto& e : r.errors) {
      // Once a minute per message: a schedule this host cannot evaluate
      // comes back every tick.
      auto& last = schedule_errors_[e];
      if (last == Clock::time_point{} || now - last >= std::chrono::minutes(1)) {
        log_event(LogLevel::error, "schedule_error", {{"error", e}});
        last = now;
      }
    }
    if (schedule_errors_.size() > 1000) schedule_errors_.clear();
    if (r.runs > 0 || r.skipped > 0)
      log_event(r.skipped > 0 ? LogLevel::warn : LogLevel::debug, "materialised",
                {{"schedules", std::to_string(r.schedules)}, {"runs", std::to_string(r.runs)},
                 {"skipped", std::to_string(r.skipped)}});
    if (r.runs > 0) claim_wanted_ = true;  // our own next due time may be sooner now
    if (r.more) next_schedule_ = now + kBacklogTick;
    if (int n = store_->enforce_overlap(); n > 0)
      log_event(LogLevel::info, "overlap_enforced", {{"runs", std::to_string(n)}});
  } catch (const Error& e) {
    ++metrics_.store_errors["schedule"];
    log_event(LogLevel::error, "store_error", {{"step", "schedule"}, {"error", e.what()}});
  }
}

void Agent::gc_if_due(Clock::time_point now) {
  if (!epoch_ || opts_.gc_older_than.count() <= 0 || phase_ != Phase::running) return;
  if (now < next_gc_ || now < store_backoff_until_) return;
  next_gc_ = now + opts_.gc_every;
  try {
    auto r = store_->gc(duration_cast<microseconds>(opts_.gc_older_than).count(), kGcBatch, kGcBatchesPerPass);
    if (r.runs > 0 || r.dag_runs > 0)
      log_event(LogLevel::info, "gc", {{"runs", std::to_string(r.runs)}, {"attempts", std::to_string(r.attempts)},
                                       {"jobs", std::to_string(r.jobs)}, {"dag_runs", std::to_string(r.dag_runs)},
                                       {"more", r.more ? "yes" : "no"}});
    if (r.more) next_gc_ = now + std::chrono::seconds(1);
  } catch (const Error& e) {
    ++metrics_.store_errors["gc"];
    log_event(LogLevel::error, "store_error", {{"step", "gc"}, {"error", e.what()}});
  }
}

}  // namespace jobctl::agent
