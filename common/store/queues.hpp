#pragma once
// Queues: their retry defaults, limits, and pause.
// Every method follows the contract in store.hpp.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/model/job.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

// A queue: its retry defaults and how many runs it holds in each state.
struct QueueInfo {
  std::string name;
  model::RetryOverrides defaults;
  int64_t pending = 0;
  int64_t running = 0;
  int64_t dead = 0;  // in the dead-letter queue
  bool paused = false;  // jobctl queue pause: no agent claims from it
  int max_concurrent = 0;         // runs of the queue at once; 0 = no limit
  double rate = 0;                // runs started per second; 0 = no limit
  int tenant_max_concurrent = 0;  // runs of one tenant in the queue at once; 0 = no limit
};

// The slowest and fastest rate a queue may have, in runs a second: at
// least one a day, so that its next token is never more than a day away.
inline constexpr double kMinRate = 1.0 / 86400;
inline constexpr double kMaxRate = 1e6;

// `jobctl queue set` limits; unset fields stay, 0 removes a limit.
struct QueueLimits {
  std::optional<int> max_concurrent;
  std::optional<double> rate;
  std::optional<int> tenant_max_concurrent;

  bool empty() const { return !max_concurrent && !rate && !tenant_max_concurrent; }
};

class Queues {
 public:
  explicit Queues(Connection& conn, std::string actor = "unknown") : conn_(&conn), actor_(std::move(actor)) {}

  enum class Clear { no, yes };
  // Sets the given retry defaults of a queue (others keep their value);
  // `clear` first resets all of them. Applies to jobs submitted afterwards.
  void set_queue_defaults(const std::string& queue, const model::RetryOverrides& defaults, Clear clear);
  // Sets the given limits of a queue (see QueueLimits). Throws usage Error
  // for a negative one.
  void set_queue_limits(const std::string& queue, const QueueLimits& limits);
  // Every queue that has defaults or runs, by name.
  std::vector<QueueInfo> list_queues();
  // The names of the paused queues (cheap: reads no runs).
  std::set<std::string> paused_queues();
  // Pauses or resumes a queue: no agent claims the runs of a paused queue
  // (running ones finish). Returns false when it already was in that state.
  bool set_queue_paused(const std::string& queue, bool paused);

 private:
  Connection* conn_;
  std::string actor_;  // who changes are recorded as
};

}  // namespace jobctl::store
