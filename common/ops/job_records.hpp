#pragma once
// What a job left behind, as every front door shows it: its attempts
// (`jobctl runs`), one attempt's output (`jobctl logs`) and its history of
// changes (`jobctl history`).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/model/job.hpp"
#include "common/store/store.hpp"

namespace jobctl::ops {

// Every attempt of the job (or of the one run a run id names), oldest first.
std::vector<model::Attempt> attempts_of(store::Store& store, const std::string& id);

// The attempts as `runs -o json` shows them (without output).
nlohmann::json attempts_json(const std::vector<model::Attempt>& attempts);

// The latest attempt of the job's latest run (or of the run named), or its
// `number`-th when number > 0. Throws invalid_state when nothing ran yet,
// not_found for an attempt it does not have.
model::Attempt attempt_with_output(store::Store& store, const std::string& id, int number);

// The job's changes, newest first, as `history -o json` shows them.
nlohmann::json history_json(store::Store& store, const std::string& id, int limit);

}  // namespace jobctl::ops
