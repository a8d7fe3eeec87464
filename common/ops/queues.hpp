#pragma once
// Queues as every front door lists and pauses them: the answers are the
// JSON of `jobctl queue ls|pause|resume -o json`.
#include <string>

#include <nlohmann/json.hpp>

#include "common/store/store.hpp"

namespace jobctl::ops {

// Each queue with its counts, limits (null for none) and retry defaults.
nlohmann::json queues_json(store::Store& store);

// {"queue": NAME, "result": "paused" | "resumed", "changed": bool}. Throws
// usage Error for a name that is not a queue name.
nlohmann::json pause_queue(store::Store& store, const std::string& name, bool pause);

}  // namespace jobctl::ops
