#pragma once
// How the store keeps the structured parts of a job and an attempt: as
// JSON text in one column each. Only the store reads and writes these
// forms; everything else sees the model types.
#include <map>
#include <optional>
#include <string>

#include "common/model/job.hpp"
#include "common/model/labels.hpp"
#include "common/model/notify.hpp"
#include "common/model/webhook.hpp"

namespace jobctl::store {

// jobs.command: "text" (run by sh -c), ["argv", …] or {"webhook": {…}}.
std::string command_to_text(const model::Command& c);
model::Command command_from_text(const std::string& text);

// jobs.env: {"NAME": "value", …}; "" reads as none.
std::string env_to_text(const std::map<std::string, std::string>& env);
std::map<std::string, std::string> env_from_text(const std::string& text);

// jobs.target, jobs.fan_out, workers.labels: ["key=value", …]; "" reads as none.
std::string labels_to_text(const model::Labels& labels);
model::Labels labels_from_text(const std::string& text);

// jobs.notify: {"urls": […], "on": "failure,dead"}; none when there is nothing to notify.
std::optional<std::string> notify_to_text(const model::Notify& n);
model::Notify notify_from_text(const std::string& text);

// attempts.timings: [dns, connect, tls, first_byte, total] in microseconds.
std::string timings_to_text(const model::HttpTimings& t);
model::HttpTimings timings_from_text(const std::string& text);

}  // namespace jobctl::store
