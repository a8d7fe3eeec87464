#pragma once
// The one way a run row is made from values: a submitted job's first run,
// a fan-out's runs, a schedule's occurrences and forced triggers. Runs
// made from a job row already stored, a DAG node's or a replay's, are
// INSERT … SELECT statements of their own that copy the same columns
// from the job with kRunFromJob.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/model/job.hpp"
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

// The concurrency group a new run of the job joins, none when the job has
// no limit: its --concurrency-key, else the job itself.
std::optional<std::string> group_of(const model::JobSpec& s, const std::string& job_id);

// What a run copies from its job, over jobs aliased j: its claim keys, its
// concurrency group (group_of in SQL) and the job's version. `columns`
// names them in the runs table, `values` reads them from j, in the same order.
struct RunFromJob {
  const char* columns;
  const char* values;
};
inline constexpr RunFromJob kRunFromJob{
    "queue, priority, tenant, group_key, group_max, job_version",
    "j.queue, j.priority, j.tenant, CASE WHEN j.max_concurrent > 0 THEN COALESCE(j.concurrency_key, j.id) END, "
    "j.max_concurrent, j.version"};

// Whether runs written together may name a schedule's occurrence (which
// may have its run already).
enum class Occurrences { none, may_repeat };

// Inserts `count` runs, the i-th made by run(i) as it is written, in
// batches (Connection::exec_batch). With Occurrences::may_repeat, a run
// whose occurrence already has one is left out; with none, a run with an
// occurrence is a bug (ExitCode::internal). Returns how many were inserted
// (0 if `when` let them wait).
int64_t insert_runs(Connection& c, size_t count, const std::function<NewRun(size_t)>& run, Occurrences occurrences,
                    Connection::Send when = Connection::Send::now);
// The same for runs at hand: may_repeat if any has an occurrence.
int64_t insert_runs(Connection& c, const std::vector<NewRun>& runs);

}  // namespace jobctl::store
