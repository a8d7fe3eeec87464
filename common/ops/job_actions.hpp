#pragma once
// What submit, cancel, retry, pause, resume, delete and restore do and what they answer, for
// jobctl and jobctl serve alike: the answers are the JSON of `-o json`.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/model/job.hpp"
#include "common/store/jobs.hpp"
#include "common/store/store.hpp"

namespace jobctl::ops {

// The jobs submitted, as `submit -o json` shows them: one job's view, or a
// list of them for a batch (in the order given).
nlohmann::json submitted_json(store::Store& store, const std::vector<store::SubmitResult>& results, bool batch);
// The same from the jobs' views, read already.
nlohmann::json submitted_json(const std::vector<model::JobView>& views, bool batch);

// {"id": JOB, "result": "cancelled" | "cancel requested"}. Takes a job or run id.
nlohmann::json cancel_job(store::Store& store, const std::string& id);

// {"id": JOB, "run": NEW_RUN, "runs": [NEW_RUN, ...]}: a dead, failed or
// cancelled job run again ("runs": one for each agent's, under --on-each).
nlohmann::json retry_job(store::Store& store, const std::string& id);

// {"id": JOB, "result": "paused" | "resumed", "changed": bool}.
nlohmann::json pause_job(store::Store& store, const std::string& id, bool pause);

// {"id": JOB, "result": "deleted", "runs_cancelled": N, "runs_skipped": M}:
// a soft delete (M: a schedule's occurrences made ahead); a running run is
// stopped only with `cancel_running`.
nlohmann::json delete_job(store::Store& store, const std::string& id, bool cancel_running);

// {"id": JOB, "result": "restored"}.
nlohmann::json restore_job(store::Store& store, const std::string& id);

}  // namespace jobctl::ops
