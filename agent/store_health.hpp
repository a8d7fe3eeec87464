#pragma once
// What the agent knows of its store's health, and the log lines an outage
// makes: one `store_unreachable` when it begins (with the reason), a
// `store_still_unreachable` at most every 30 s while it lasts, and one
// `store_back` with its length when it ends. A call that has not answered
// for stall_after() counts as the start of an outage too.
//
// A store that answers some calls and fails others (a full disk: reads
// answer, writes fail) is still down: the outage ends once every step that
// failed in it has succeeded since, or once a call succeeds with no failure
// for kSettled (a step that failed once and is not made again). Each
// success used to end it, and a full disk logged two lines a second.
//
// It also says whose runs this agent may rescue: leases expire on the
// store's clock while nobody can renew them, so an agent that just got the
// store back (or saw the clock jump) would otherwise rescue runs whose
// owners are alive and about to report. It rescues only the runs of agents
// whose lease is no longer than the time it has had the store calmly:
// each of those had a whole lease, three heartbeats, to renew.
#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <string>

namespace jobctl::agent {

class StoreHealth {
 public:
  using Clock = std::chrono::steady_clock;
  // A call this slow is an outage: 5 s, or a third of the lease when that
  // is less. A stall the agent did not count left its calm unbroken, while
  // the other agents, as stalled, could not renew their leases: with a
  // lease of 1 s, a stall of 2.5 s made agents rescue each other's healthy
  // runs.
  static Clock::duration stall_after_for(Clock::duration lease) {
    return std::min<Clock::duration>(std::chrono::seconds(5), lease / 3);
  }

  StoreHealth(Clock::time_point now, Clock::duration stall_after) : calm_since_(now), stall_after_(stall_after) {}
  Clock::duration stall_after() const { return stall_after_; }

  // A store call failed because the store could not be reached.
  void failed(const std::string& step, const std::string& reason, Clock::time_point now);
  // A store call of `step` returned.
  void succeeded(const std::string& step, Clock::time_point now);
  // A store call has been running since `since` and has not returned.
  void waiting(const char* step, Clock::time_point since, Clock::time_point now);
  // When waiting() has something to say about that call: its stall, or,
  // in an outage, the next store_still_unreachable.
  Clock::time_point next_look(Clock::time_point since) const;
  // The store's clock moved `step_us` more than this host's steady clock
  // between two heartbeats.
  void clock_stepped(int64_t step_us, Clock::time_point now);

  bool down() const { return down_since_.has_value(); }
  // How long the store has answered without an outage or a clock step
  // (zero while it is down): rescue takes only the runs of agents whose
  // lease is no longer than that, so their owners had time to renew them.
  Clock::duration calm_for(Clock::time_point now) const {
    return down_since_ ? Clock::duration::zero() : now - calm_since_;
  }

 private:
  void begin_outage(const std::string& step, const std::string& reason, Clock::time_point now);
  // In an outage: `step` failed again; said at most each kRepeatEvery.
  void still_failing(const std::string& step, const std::string& reason, Clock::time_point now);

  Clock::time_point calm_since_;
  Clock::duration stall_after_;
  std::optional<Clock::time_point> down_since_;
  Clock::time_point last_report_{};
  Clock::time_point last_failure_{};
  std::set<std::string> failing_;  // steps that failed in this outage, not since succeeded
  long failures_ = 0;
};

// Notices a step of the store's clock: compares how far it moved between
// two heartbeats with how far this host's steady clock did.
class ClockWatch {
 public:
  // The store's clock as a heartbeat read it, and when on the steady clock.
  struct Reading {
    int64_t store_us = 0;
    StoreHealth::Clock::time_point at;
    // Where the store's clock should read at `now` if it has not stepped.
    int64_t expected_at(StoreHealth::Clock::time_point now) const;
  };

  explicit ClockWatch(int64_t tolerance_us) : tolerance_us_(tolerance_us) {}

  // The step (µs, signed) when it exceeds the tolerance, else nullopt.
  std::optional<int64_t> observe(int64_t store_now_us, StoreHealth::Clock::time_point now);
  // The last reading, if any.
  const std::optional<Reading>& last() const { return last_; }
  // How far the store's clock may drift from the expectation before it
  // counts as a step.
  int64_t tolerance_us() const { return tolerance_us_; }

 private:
  int64_t tolerance_us_;
  std::optional<Reading> last_;
};

}  // namespace jobctl::agent
