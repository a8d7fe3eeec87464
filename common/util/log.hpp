#pragma once
// Event logging for the agent: one line per event, an event name plus
// key=value fields (always the run id and job id where there is a run).
// Text for people, JSON lines for machines (--log-format json). Lines go
// to stderr through spdlog.
#include <string>
#include <utility>
#include <vector>

namespace jobctl::util {

enum class LogFormat { text, json };
enum class LogLevel { debug, info, warn, error };

using LogFields = std::vector<std::pair<std::string, std::string>>;

// Call once at start; before it, events are printed as text at info level.
void setup_logging(LogFormat format, LogLevel min_level);

void log_event(LogLevel level, const std::string& event, const LogFields& fields = {});

}  // namespace jobctl::util
