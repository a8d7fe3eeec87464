// The scheduler leader's duties in the agent loop. Every agent (unless
// --no-scheduler) tries to take the leader lease every third of --lease;
// the one that holds it materialises cron occurrences --schedule-horizon
// ahead, once a second or sooner when a tick left work over, and applies
// the overlap policies that skip or cancel (with the same tick, unless the
// last such sweep was slow: overlap_pause). A draining agent resigns so
// another takes over at once. With --gc-older-than it also removes finished
// history past that age, every --gc-every.
#include <fmt/format.h>

#include <algorithm>

#include "agent/agent.hpp"
#include "common/store/admin.hpp"
#include "common/store/scheduler.hpp"
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
constexpr int kOverlapShare = 10;  // the overlap sweep's most, 1 in 10, of the store's time
constexpr auto kOverlapLongestPause = std::chrono::seconds(10);
}  // namespace

Clock::duration overlap_pause(Clock::duration took) {
  return std::min<Clock::duration>(took * (kOverlapShare - 1), kOverlapLongestPause);
}

void Agent::lead_if_due(Clock::time_point now) {
  if (!opts_.scheduler || now < next_lead_ || now < store_backoff_until_ || busy("lead")) return;
  if (phase_ != Phase::running) {
    if (epoch_)
      store_step("resign", [id = worker_id_](store::Store& s) { s.scheduler().resign(id); },
                 [this] {
                   log_event(LogLevel::info, "scheduler_resigned", {{"epoch", std::to_string(*epoch_)}});
                   epoch_.reset();
                 });
    next_lead_ = Clock::time_point::max();
    return;
  }
  next_lead_ = now + opts_.lease / 3;
  auto granted = std::make_shared<std::optional<int64_t>>();
  store_step(
      "lead",
      [granted, id = worker_id_, lease = duration_cast<microseconds>(opts_.lease).count(),
       misfire = duration_cast<microseconds>(opts_.misfire_threshold).count()](store::Store& s) {
        *granted = s.scheduler().lead(id, lease, misfire);
      },
      [this, granted] {
        const auto& epoch = *granted;
        if (phase_ != Phase::running) return;  // drained meanwhile: the resign follows
        if (epoch && epoch != epoch_) {
          log_event(LogLevel::info, "scheduler_leading", {{"epoch", std::to_string(*epoch)}});
          next_schedule_ = next_overlap_ = Clock::now();  // after an outage is when the sweep matters most
        } else if (!epoch && epoch_) {
          log_event(LogLevel::warn, "scheduler_deposed", {{"epoch", std::to_string(*epoch_)}});
        }
        epoch_ = epoch;
      });
}

void Agent::schedule_if_due(Clock::time_point now) {
  if (!epoch_ || now < next_schedule_ || now < store_backoff_until_ || busy("schedule")) return;
  next_schedule_ = now + kScheduleTick;
  store::SchedulerSettings settings;
  settings.horizon_us = duration_cast<microseconds>(opts_.schedule_horizon).count();
  settings.misfire_after_us = duration_cast<microseconds>(opts_.misfire_threshold).count();
  struct Tick {
    store::MaterialiseResult result;
    int overlap = 0;
    std::optional<Clock::duration> swept;  // how long the overlap sweep took, if it ran
  };
  auto tick = std::make_shared<Tick>();
  // Backoff::no: a scheduler error must not hold back this agent's claims.
  store_step(
      "schedule",
      [tick, settings, id = worker_id_, epoch = *epoch_, sweep = now >= next_overlap_](store::Store& s) {
        tick->result = s.scheduler().materialise(id, epoch, settings);
        if (tick->result.fenced || !sweep) return;
        const auto start = Clock::now();
        tick->overlap = s.scheduler().enforce_overlap();
        tick->swept = Clock::now() - start;
      },
      [this, tick, now] {
        if (tick->swept) next_overlap_ = Clock::now() + overlap_pause(*tick->swept);
        scheduled(tick->result, tick->overlap, now);
      },
      {}, Backoff::no);
}

void Agent::scheduled(const store::MaterialiseResult& r, int overlap, Clock::time_point now) {
  if (r.fenced) {
    if (epoch_) log_event(LogLevel::warn, "scheduler_deposed", {{"epoch", std::to_string(*epoch_)}});
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
  if (overlap > 0) log_event(LogLevel::info, "overlap_enforced", {{"runs", std::to_string(overlap)}});
}

void Agent::gc_if_due(Clock::time_point now) {
  if (!epoch_ || opts_.gc_older_than.count() <= 0 || phase_ != Phase::running) return;
  if (now < next_gc_ || now < store_backoff_until_ || busy("gc")) return;
  next_gc_ = now + opts_.gc_every;
  auto removed = std::make_shared<store::GcResult>();
  store_step(
      "gc",
      [removed, age = duration_cast<microseconds>(opts_.gc_older_than).count()](store::Store& s) {
        *removed = s.admin().gc(age, kGcBatch, kGcBatchesPerPass);
      },
      [this, removed, now] {
        const auto& r = *removed;
        if (r.runs > 0 || r.dag_runs > 0)
          log_event(LogLevel::info, "gc", {{"runs", std::to_string(r.runs)}, {"attempts", std::to_string(r.attempts)},
                                           {"jobs", std::to_string(r.jobs)}, {"dag_runs", std::to_string(r.dag_runs)},
                                           {"more", r.more ? "yes" : "no"}});
        if (r.more) next_gc_ = now + std::chrono::seconds(1);
      },
      {}, Backoff::no);
}

}  // namespace jobctl::agent
