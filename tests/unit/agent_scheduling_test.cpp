// The scheduler leader's pacing of its overlap sweep: a slow sweep (one
// that reads a herd's due occurrences) is spaced out so it has at most a
// tenth of the store connection, a quick one still runs at every tick.
#include <doctest/doctest.h>

#include <chrono>

#include "agent/agent.hpp"

using namespace jobctl::agent;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_CASE("agent: a slow overlap sweep waits nine times as long as it took, 10 s at most, a quick one runs at the next tick") {
  // 1 s: 9 s before the next, a tenth of the time.
  auto took = seconds(1);
  CHECK(overlap_pause(took) == seconds(9));
  CHECK(took * 1.0 / (took + overlap_pause(took)) <= 0.1);
  // 1.4 s, as over a herd of 100,000 due occurrences: 10 s, the longest pause.
  CHECK(overlap_pause(milliseconds(1400)) == seconds(10));
  // A few milliseconds, as usual: well within the scheduler's one-second tick.
  CHECK(overlap_pause(milliseconds(3)) < seconds(1));
  CHECK(overlap_pause(Clock::duration::zero()) == Clock::duration::zero());
  // A sweep that took 20 s on a slow server: the policies are not three
  // minutes behind, but 10 s.
  CHECK(overlap_pause(seconds(20)) == seconds(10));
}
