#include "common/util/json_input.hpp"

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "common/util/error.hpp"

namespace jobctl::util {
namespace {

// Thrown out of the parser's callback to stop at the first level too deep.
struct TooDeep {};

}  // namespace

nlohmann::json parse_json_input(std::string_view text, std::string_view what, std::string_view hint,
                                const JsonEvent& on_event) {
  using nlohmann::json;
  std::vector<std::set<std::string>> keys;  // of each object open, innermost last
  auto check = [&](int depth, json::parse_event_t event, json& parsed) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw TooDeep{};
    if (on_event) on_event(depth, event, parsed);
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end) keys.pop_back();
    // The parser would keep the last of two values silently.
    if (event == json::parse_event_t::key && !keys.back().insert(parsed.get<std::string>()).second)
      throw usage_error(fmt::format("{} has the key '{}' twice in one object", what, parsed.get<std::string>()),
                        std::string(hint));
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const TooDeep&) {
    throw usage_error(fmt::format("{} is nested deeper than {} levels", what, kMaxJsonDepth), std::string(hint));
  } catch (const json::exception& e) {  // a parse error, or a number out of range (1e400)
    throw usage_error(fmt::format("{} is not valid JSON: {}", what, e.what()), std::string(hint));
  }
}

}  // namespace jobctl::util
