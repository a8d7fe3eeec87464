#pragma once
// GET /metrics of jobctl serve: what no single agent can see, from the
// whole store (per queue: ready, later, running, oldest ready, dead-letter;
// live workers, a leader), in Prometheus' text format. One statement per
// scrape at most, its answer shared by every request of the next second.
#include <chrono>
#include <mutex>
#include <string>

#include "common/store/store.hpp"

namespace jobctl::server {

class GroupCommit;

// The server's own counters (group commit), appended to the store's.
std::string server_exposition(const GroupCommit& submissions);

class StoreMetrics {
 public:
  // The exposition, read from `store` unless one read less than a second ago.
  std::string render(store::Store& store);

 private:
  std::mutex mutex_;
  std::chrono::steady_clock::time_point read_at_;
  std::string text_;
};

}  // namespace jobctl::server
