#pragma once
// Job and run rows read and written by column name (tables.hpp), so every
// query that returns a job or a run reads it the same way, and a job's
// definition is written by one function at submit and at update.
#include <optional>
#include <string>
#include <vector>

#include "common/model/job.hpp"
#include "common/store/sql.hpp"
#include "common/store/tables.hpp"

namespace jobctl::store {

// The job in a row selected with select_list(kJobs), from column `first` on.
model::Job job_from_row(const Row& row, size_t first = 0);
// The run in a row selected with select_list(kRuns), from column `first` on.
model::Run run_from_row(const Row& row, size_t first = 0);

// "SELECT <every jobs column> FROM jobs j WHERE j.id = $1", made once
// (the claim asks it for every job it hands out on SQLite).
const std::string& select_job_by_id();

// Sets every Writer::definition column of jobs from `s`, whose retry
// policy resolves to `retry` (a submit resolves it beside the spec).
void write_definition(Writes<kJobs>& w, const model::JobSpec& s, const model::RetryPolicy& retry);

}  // namespace jobctl::store
