#pragma once
// Blocking until a job's latest run, or a DAG run, is final, for `wait`,
// `submit --wait`, `dag wait` and `dag submit --wait`.
#include <optional>
#include <string>
#include <vector>

#include "cli/context.hpp"
#include "common/model/job.hpp"
#include "common/util/duration.hpp"

namespace jobctl::cli {

// Polls the store (backing off from 20 ms to 500 ms) until the job's latest
// run (a fan-out job: every agent's run) reaches a final state or `timeout`
// passes. Prints the outcome to
// stderr (and the job as JSON on stdout with -o json). Returns the exit
// code: 0 succeeded, 1 failed/dead/cancelled, 124 timed out.
enum class WaitReport { with_json, status_only };
int wait_for_job(Context& ctx, const std::string& job_id, std::optional<util::Micros> timeout,
                 WaitReport report = WaitReport::with_json);

// The same for a DAG run (or a DAG's newest run) until it is succeeded,
// failed or cancelled; on a terminal, a line of how many nodes are done.
// Prints "DAG run ID STATUS[: node status, …]" to stderr (and `dag status
// -o json` with -o json). 0 succeeded, 1 failed or cancelled, 124 timed out.
int wait_for_dag_run(Context& ctx, const std::string& id, std::optional<util::Micros> timeout,
                     WaitReport report = WaitReport::with_json);

}  // namespace jobctl::cli
