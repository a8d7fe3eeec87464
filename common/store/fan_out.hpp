#pragma once
// --on-each: a job that runs once on every agent that matches. Its runs
// are made when the job comes due (at submit, or when the leader
// materialises a schedule's occurrence), one per live agent matching then
// that serves the job's queue, each pinned to that agent by name.
#include <string>
#include <vector>

#include "common/model/labels.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

// The names of the active agents that claim from `queue` and whose labels
// include all of `labels` (none: every such agent), sorted, each once. An
// agent of other queues would never claim its run.
std::vector<std::string> fan_out_agents(Connection& c, const model::Labels& labels, const std::string& queue);

// Why a fan-out made no run: "no live agent of queue default matches
// --on-each role=web".
std::string no_agent_reason(const model::Labels& labels, const std::string& queue);

}  // namespace jobctl::store
