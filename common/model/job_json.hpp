#pragma once
// JSON output forms of the model (`-o json`): the documented, stable shape
// of jobctl(1). Fields are only ever added, never renamed or removed. (The
// input form, a `submit --file` line or a DAG node, is
// jobdef/job_input.hpp.)
#include <nlohmann/json.hpp>

#include "common/model/job.hpp"

namespace jobctl::model {

// Checks what both the flags and the JSON form must satisfy (queue name,
// command, env names, payload JSON, cwd). Throws usage Error.
void validate(const JobSpec& spec);
// A queue name: 1 to 64 of A-Z a-z 0-9 _ - . Throws usage Error.
void validate_queue_name(const std::string& queue);
// A user name jobagent may switch to: 1 to 32 bytes of A-Z a-z 0-9 _ . -,
// not starting with - (a trailing $ allowed, as for Samba's machine
// accounts); empty is none. `label` names the field in the error.
void validate_user_name(const std::string& user, std::string_view label);
// An idempotency key: at most 255 bytes of UTF-8, no NUL. `label` names
// where it came from in the error.
void validate_idempotency_key(const std::string& key, std::string_view label);

nlohmann::json to_json(const RetryPolicy& p);
// `fired`: the occurrences the leader has made of it, held to max_runs.
nlohmann::json to_json(const ScheduleSpec& s, std::optional<int64_t> next_fire_at, int64_t fired);
// Only the fields that are set, spelled as in to_json(RetryPolicy).
nlohmann::json to_json(const RetryOverrides& o);
nlohmann::json to_json(const JobView& v);
nlohmann::json to_json(const Run& r);
nlohmann::json to_json(const Attempt& a, bool with_output);
nlohmann::json to_json(const Worker& w);
nlohmann::json to_json(const JobEvent& e);

}  // namespace jobctl::model
