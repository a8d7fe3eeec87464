#pragma once
// --on-each: a job that runs once on every agent that matches. Its runs
// are made when the job comes due (at submit, or when the leader
// materialises a schedule's occurrence), one per live agent matching then,
// each pinned to that agent by name.
#include <string>
#include <vector>

#include "common/model/labels.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

// The names of the active agents whose labels include all of `labels`
// (none: every active agent), sorted, each once.
std::vector<std::string> fan_out_agents(Connection& c, const model::Labels& labels);

// Why a fan-out made no run: "no live agent matches --on-each role=web".
std::string no_agent_reason(const model::Labels& labels);

}  // namespace jobctl::store
