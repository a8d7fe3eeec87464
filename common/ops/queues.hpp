#pragma once
// Queues as every front door lists and pauses them: the answers are the
// JSON of `jobctl queue ls|pause|resume -o json`.
#include <string>

#include <nlohmann/json.hpp>

#include "common/model/retry.hpp"
#include "common/store/queues.hpp"
#include "common/store/store.hpp"

namespace jobctl::ops {

// Each queue with its counts, limits (null for none) and retry defaults.
nlohmann::json queues_json(store::Store& store);

// What `queue set` changes: retry defaults (the keys given), limits (unset
// ones stay, 0 removes one), and whether every retry default is reset first.
struct QueueSettings {
  model::RetryOverrides retry;
  store::QueueLimits limits;
  bool clear = false;
};

// "N/s", "N/m", "N/h" or a bare N (per second) as runs per second; "0" or
// "none" is no limit. Throws usage Error naming `what` for anything else,
// or a rate outside store::kMinRate (one a day) to store::kMaxRate.
double parse_rate(const std::string& text, const std::string& what = "--rate");

// The settings of a `PATCH /queues/{name}` body: the retry keys of a batch
// line ("retries", "backoff", …), "max_concurrent", "rate" (as --rate),
// "tenant_max_concurrent" and "clear". Throws usage Error for anything else.
QueueSettings queue_settings_from_json(const nlohmann::json& body);

// Applies `settings` to the queue, as `queue set` does: the queue's entry
// of queues_json afterwards. Throws usage Error for a bad name, nothing to
// set, or a negative limit, before writing anything.
nlohmann::json set_queue(store::Store& store, const std::string& name, const QueueSettings& settings);

// {"queue": NAME, "result": "paused" | "resumed", "changed": bool}. Throws
// usage Error for a name that is not a queue name.
nlohmann::json pause_queue(store::Store& store, const std::string& name, bool pause);

}  // namespace jobctl::ops
