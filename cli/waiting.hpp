#pragma once
// Blocking until a job's latest run is final, for `wait` and `submit --wait`.
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

}  // namespace jobctl::cli
