#pragma once
// Why a pending run may wait for ever: no live agent serves its queue, its
// queue is paused, or no live agent has the labels it asks for (--on) or is
// the agent it is pinned to (--on-each). The agents and paused queues are
// read once per WaitingReasons, on first need.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/store/store.hpp"
#include "common/model/job.hpp"

namespace jobctl::ops {

struct WaitingReason {
  std::string brief;   // for a table cell: "no eligible agent", "queue paused"
  std::string detail;  // one sentence, for get, JSON and wait
  bool empty() const { return detail.empty(); }
};

class WaitingReasons {
 public:
  explicit WaitingReasons(store::Store& store) : store_(store) {}

  // Of the job's latest run; empty when it can run (or is not pending).
  WaitingReason operator()(const model::JobView& v);
  // Of one run of the job (a fan-out job's runs each have theirs).
  WaitingReason operator()(const model::Job& job, const model::Run& run);

 private:
  store::Store& store_;
  std::optional<std::vector<model::Worker>> workers_;
  std::optional<std::set<std::string>> paused_;
};

}  // namespace jobctl::ops
