#pragma once
// The dead-letter queue as every front door shows and steers it: the answers
// are the JSON of `jobctl dlq ls|show|replay|dismiss|purge -o json`.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/store/dead_letter.hpp"
#include "common/store/store.hpp"

namespace jobctl::ops {

// A filter from text as typed: a queue, and times (RFC 3339, or a duration
// ago) named `since_what` and `until_what` in errors. Throws usage Error.
store::DeadFilter dead_filter(const std::string& queue, const std::string& since, const std::string& until, int limit,
                              const std::string& since_what = "--since", const std::string& until_what = "--until");

// Each dead run with its job, newest first.
nlohmann::json dead_runs_json(store::Store& store, const store::DeadFilter& filter);

// One dead run (run id, or the job id of a job whose latest run is dead)
// with its job and every attempt with its output. Throws invalid_state for
// a run that is not dead.
nlohmann::json dead_run_json(store::Store& store, const std::string& id);

// {"replayed": N, "runs": [NEW_RUN…]}: the runs named run again. Each must
// be in the queue (dead, not run again), else nothing is replayed; a run
// named twice (or by its id and its job's) is replayed once.
nlohmann::json replay_json(store::Store& store, const std::vector<std::string>& ids);

// {"replayed": N}: every dead run the filter covers, in one transaction.
nlohmann::json replay_all_json(store::Store& store, const store::DeadFilter& filter);

// {"dismissed": N, "runs": [RUN…]}: the runs named taken out of the queue
// without running again. Each must be dead and not run again, else none is
// dismissed; one dismissed already is not counted again.
nlohmann::json dismiss_json(store::Store& store, const std::vector<std::string>& ids);

// {"dismissed": N}: every dead run the filter covers, in one transaction.
nlohmann::json dismiss_all_json(store::Store& store, const store::DeadFilter& filter);

// {"purged": N}: dead runs that died longer ago than `older_than` (a
// duration as typed, named `what` in errors) deleted. Throws usage Error
// for a bad duration or 0s, which would purge the whole queue.
nlohmann::json purge_json(store::Store& store, const std::string& older_than, const std::string& what);

}  // namespace jobctl::ops
