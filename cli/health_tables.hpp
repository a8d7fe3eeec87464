#pragma once
// The tables `jobctl stats`, `workers` and `top` share.
#include <map>
#include <string>
#include <vector>

#include "common/store/store.hpp"

namespace jobctl::cli {

// Live agents that claim from each queue.
std::map<std::string, int> agents_by_queue(const std::vector<model::Worker>& workers);

// One row per queue and priority, then notes (a paused queue, one no live
// agent serves). `agents`: agents_by_queue; `paused`: by queue name.
void print_stats_table(const std::vector<store::QueueStats>& stats, std::map<std::string, int> agents,
                       std::map<std::string, bool> paused);

void print_workers_table(const std::vector<model::Worker>& workers);

}  // namespace jobctl::cli
