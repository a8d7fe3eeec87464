// When a PostgreSQL session's plans under plan_once are made again: once
// the table they were made for has doubled or halved, never for their age.
// (A store test would not do: any CREATE SCHEMA in the same database, as
// every other test does, has the server drop every session's plans.)
#include <doctest/doctest.h>

#include "common/store/plan_size.hpp"

using jobctl::store::kPlanSlack;
using jobctl::store::plans_outgrown;

TEST_CASE("store: plans are made again once their table has doubled or halved, and kept while it keeps its size") {
  constexpr int64_t mb = 1024 * 1024;
  // An idle store: the same size at every poll, the plans are kept. Made
  // again once a second instead, an idle agent's sessions used 1.4 % of a
  // core planning.
  CHECK_FALSE(plans_outgrown(0, 0));
  CHECK_FALSE(plans_outgrown(3 * mb, 3 * mb));
  // Planned on an empty table: a page or two more changes nothing, a burst
  // of 3,000 runs (about a megabyte) has them made again.
  CHECK_FALSE(plans_outgrown(0, 8192));
  CHECK_FALSE(plans_outgrown(0, kPlanSlack));
  CHECK(plans_outgrown(0, mb));
  // Grown, not yet twofold; then twofold.
  CHECK_FALSE(plans_outgrown(10 * mb, 19 * mb));
  CHECK(plans_outgrown(10 * mb, 21 * mb));
  // Shrunk to less than half.
  CHECK_FALSE(plans_outgrown(10 * mb, 6 * mb));
  CHECK(plans_outgrown(10 * mb, 4 * mb));
}
