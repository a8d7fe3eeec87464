#pragma once
// The one way a run row is made from values: a submitted job's first run,
// a fan-out's runs, a schedule's occurrences and forced triggers. (Runs
// made from a job row already stored, a DAG node's or a replay's, are
// INSERT … SELECT statements of their own.)
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/store/sql.hpp"

namespace jobctl::store {

struct NewRun {
  std::string id;
  std::string job_id;
  std::string queue;
  int priority = 0;
  int version = 1;                      // the job's version it runs
  std::string status = "pending";       // or "skipped" (a schedule's missed occurrence)
  std::optional<int64_t> available_at;  // none: `delay_us` after now, on the store's clock
  int64_t delay_us = 0;
  std::optional<int64_t> occurrence;    // a schedule's fire time
  std::string origin = "submit";
  std::string error;
  std::string tenant;
  std::optional<std::string> group_key;  // its concurrency group, if limited
  int group_max = 0;
  std::optional<std::string> pinned_to;  // a fan-out run: its agent
};

// Inserts the runs in batches (one statement each). A run whose occurrence
// already has one is left out. Returns how many were inserted.
int64_t insert_runs(Connection& c, const std::vector<NewRun>& runs);

}  // namespace jobctl::store
