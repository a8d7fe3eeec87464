#pragma once
// The tables `jobctl stats`, `workers` and `top` share.
#include <map>
#include <string>
#include <vector>

#include "common/store/admin.hpp"
#include "common/store/queues.hpp"
#include "common/store/store.hpp"

namespace jobctl::cli {

// One row per queue and priority, then notes (a paused queue, one no live
// agent serves). `agents`: ops::agents_by_queue; `paused`: ops::paused_queues.
void print_stats_table(const std::vector<store::QueueStats>& stats, std::map<std::string, int> agents,
                       std::map<std::string, bool> paused);

void print_workers_table(const std::vector<model::Worker>& workers);

}  // namespace jobctl::cli
