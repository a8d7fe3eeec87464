// When the plans a PostgreSQL session made under plan_once are made
// again: by the size of the table they were made for (see
// postgres_connection.cpp, kForgetPlans), not by their age.
#pragma once

#include <algorithm>
#include <cstdint>

namespace jobctl::store {

// Below this, a table's growth does not count: a few pages more or less
// change no plan.
constexpr int64_t kPlanSlack = 64 * 1024;

// Whether plans made when plan_once's table had `planned_for` bytes are to
// be made again now that it has `now`: once it has doubled or halved,
// beyond kPlanSlack. A table that keeps its size keeps its plans, however
// old (an idle agent's polls plan nothing).
constexpr bool plans_outgrown(int64_t planned_for, int64_t now) {
  return std::max(now, planned_for) > 2 * std::min(now, planned_for) + kPlanSlack;
}

}  // namespace jobctl::store
