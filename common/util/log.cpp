#include "common/util/log.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace jobctl::util {
namespace {

LogFormat g_format = LogFormat::text;

spdlog::level::level_enum to_spdlog(LogLevel l) {
  switch (l) {
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: return spdlog::level::err;
  }
  return spdlog::level::info;
}

bool needs_quotes(const std::string& v) {
  return v.empty() || v.find_first_of(" \t\n\"=") != std::string::npos;
}

}  // namespace

void setup_logging(LogFormat format, LogLevel min_level) {
  g_format = format;
  // _mt: the agent's store thread and jobctl serve's workers log too.
  auto logger = spdlog::stderr_logger_mt("jobctl");
  // JSON lines carry their own timestamp and level fields.
  logger->set_pattern(format == LogFormat::json ? "%v" : "%Y-%m-%dT%H:%M:%S.%e%z %l %v");
  logger->set_level(to_spdlog(min_level));
  logger->flush_on(spdlog::level::debug);
  spdlog::set_default_logger(logger);
}

void log_event(LogLevel level, const std::string& event, const LogFields& fields) {
  auto lvl = to_spdlog(level);
  if (!spdlog::should_log(lvl)) return;
  std::string line;
  if (g_format == LogFormat::json) {
    nlohmann::json j;
    j["ts"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch()).count() / 1000.0;
    j["level"] = spdlog::level::to_string_view(lvl).data();
    j["event"] = event;
    for (const auto& [k, v] : fields) j[k] = v;
    line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line = event;
    for (const auto& [k, v] : fields) {
      line += ' ' + k + '=';
      line += needs_quotes(v) ? nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) : v;
    }
  }
  spdlog::log(lvl, "{}", line);
}

}  // namespace jobctl::util
