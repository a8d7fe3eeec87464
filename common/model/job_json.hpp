#pragma once
// JSON forms of the model. Two directions with different rules:
//
// * Input (a `submit --file` line, later a DAG node) is strict: unknown
//   fields, wrong types and bad values are errors naming the field, because
//   a typo silently ignored becomes a job that runs wrong.
// * Output (`-o json`) is the documented, stable shape of jobctl(1): fields
//   are only ever added, never renamed or removed.
#include <nlohmann/json.hpp>

#include "common/model/job.hpp"

namespace jobctl::model {

// Parses one job object. Throws jobctl::Error(ExitCode::usage) whose message
// names the offending field.
JobSpec job_spec_from_json(const nlohmann::json& j);

// Checks what both the flags and the JSON form must satisfy (queue name,
// command, env names, payload JSON, cwd). Throws like job_spec_from_json.
void validate(const JobSpec& spec);

// Stored forms of a command and an environment (JSON text in the store).
std::string command_to_text(const Command& c);
Command command_from_text(const std::string& text);
std::string env_to_text(const std::map<std::string, std::string>& env);
std::map<std::string, std::string> env_from_text(const std::string& text);

nlohmann::json to_json(const RetryPolicy& p);
nlohmann::json to_json(const ScheduleSpec& s, std::optional<int64_t> next_fire_at);
// Only the fields that are set, spelled as in to_json(RetryPolicy).
nlohmann::json to_json(const RetryOverrides& o);
nlohmann::json to_json(const JobView& v);
nlohmann::json to_json(const Run& r);
nlohmann::json to_json(const Attempt& a, bool with_output);
nlohmann::json to_json(const Worker& w);
nlohmann::json to_json(const JobEvent& e);

}  // namespace jobctl::model
