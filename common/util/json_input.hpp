#pragma once
// JSON that a user hands jobctl (a batch line, --payload, a DAG document, a
// checkpoint), read strictly: well-formed, UTF-8, numbers in range, no key
// twice in one object, and nested at most kMaxJsonDepth levels (a deeper document is refused before
// anything walks it, so no depth can exhaust the stack).
#include <functional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace jobctl::util {

inline constexpr int kMaxJsonDepth = 64;

// Sees each parse event, as nlohmann::json's parser callback does (a DAG
// uses it to refuse a node name given twice).
using JsonEvent = std::function<void(int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed)>;

// Parses `text`. Throws Error(ExitCode::usage) "WHAT is not valid JSON:
// REASON" (or "is nested deeper than 64 levels", or "has the key 'K' twice
// in one object") with `hint`; an Error that on_event throws goes through.
nlohmann::json parse_json_input(std::string_view text, std::string_view what, std::string_view hint,
                                const JsonEvent& on_event = {});

}  // namespace jobctl::util
