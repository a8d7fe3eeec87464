#include "common/util/log.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "common/util/utf8.hpp"

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

// Whether `v` holds what a terminal acts on or cannot show: a control
// character (C0, DEL, C1) or bytes that are not UTF-8. Such a value is
// quoted with everything past ASCII escaped: a client's request path
// wrote ESC sequences into serve's access log, raw, for whoever ran tail -f
// on it (a tester).
bool unsafe_for_terminals(const std::string& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    const auto c = static_cast<unsigned char>(v[i]);
    if (c < 0x20 || c == 0x7F) return true;
    if (c == 0xC2 && i + 1 < v.size() && static_cast<unsigned char>(v[i + 1]) <= 0x9F) return true;  // C1
  }
  return !is_utf8(v);
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
    bool unsafe = false;
    for (const auto& [k, v] : fields) {
      j[k] = v;
      unsafe = unsafe || unsafe_for_terminals(v);
    }
    // JSON escapes C0 alone: DEL and C1 controls are escaped with the rest
    // past ASCII, as in text.
    line = j.dump(-1, ' ', unsafe, nlohmann::json::error_handler_t::replace);
  } else {
    line = event;
    for (const auto& [k, v] : fields) {
      line += ' ' + k + '=';
      const bool unsafe = unsafe_for_terminals(v);
      line += unsafe || needs_quotes(v)
                  ? nlohmann::json(v).dump(-1, ' ', unsafe, nlohmann::json::error_handler_t::replace)
                  : v;
    }
  }
  spdlog::log(lvl, "{}", line);
}

}  // namespace jobctl::util
