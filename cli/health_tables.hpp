#pragma once
// The tables `jobctl stats`, `workers` and `top` share.
#include <map>
#include <string>
#include <vector>

#include "common/store/admin.hpp"
#include "common/store/queues.hpp"
#include "common/store/store.hpp"

namespace jobctl::cli {

// Live agents that claim from each queue.
std::map<std::string, int> agents_by_queue(const std::vector<model::Worker>& workers);

// One row per queue and priority, then notes (a paused queue, one no live
// agent serves). `agents`: agents_by_queue; `paused`: by queue name.
void print_stats_table(const std::vector<store::QueueStats>& stats, std::map<std::string, int> agents,
                       std::map<std::string, bool> paused);

void print_workers_table(const std::vector<model::Worker>& workers);

// --since as a window in µs; throws usage Error unless it is longer than 0s.
int64_t window_of(const std::string& since);
// Whether each queue is paused (jobctl queue pause), by name.
std::map<std::string, bool> paused_queues(store::Store& store);

}  // namespace jobctl::cli
