// The agent's view of its store's health: when an outage begins and ends.
#include <doctest/doctest.h>

#include "agent/store_health.hpp"

using namespace jobctl;
using agent::StoreHealth;
using std::chrono::seconds;

TEST_CASE("StoreHealth: a store that answers reads and fails writes stays down until the writes succeed") {
  const auto t0 = StoreHealth::Clock::now();
  StoreHealth h(t0, seconds(5));
  h.failed("complete", "database or disk is full", t0);
  CHECK(h.down());
  // A full disk: the claim (nothing to claim) and the heartbeat's read
  // answer; each ended the outage, and the next failed write began another
  // (two log lines a second).
  h.succeeded("claim", t0 + seconds(1));
  CHECK(h.down());
  h.failed("complete", "database or disk is full", t0 + seconds(2));
  h.succeeded("output", t0 + seconds(3));
  CHECK(h.down());
  h.succeeded("complete", t0 + seconds(4));
  CHECK_FALSE(h.down());
  CHECK(h.calm_for(t0 + seconds(6)) == seconds(2));
}

TEST_CASE("StoreHealth: a step that failed once and is not made again ends its outage once calls succeed for 5 s") {
  const auto t0 = StoreHealth::Clock::now();
  StoreHealth h(t0, seconds(5));
  h.failed("clock_step", "connection reset", t0);
  h.succeeded("heartbeat", t0 + seconds(1));
  CHECK(h.down());
  h.succeeded("heartbeat", t0 + seconds(5));
  CHECK_FALSE(h.down());
}

TEST_CASE("StoreHealth: a call that does not answer begins an outage, and is looked at again each 30 s while it lasts") {
  const auto t0 = StoreHealth::Clock::now();
  StoreHealth h(t0, seconds(5));
  CHECK(h.next_look(t0) == t0 + seconds(5));
  h.waiting("schedule", t0, t0 + seconds(4));
  CHECK_FALSE(h.down());
  h.waiting("schedule", t0, t0 + seconds(5));
  CHECK(h.down());
  CHECK(h.next_look(t0) == t0 + seconds(30));  // the outage began when the call did
  h.succeeded("schedule", t0 + seconds(40));
  CHECK_FALSE(h.down());
}
