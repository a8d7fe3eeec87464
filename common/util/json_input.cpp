#include "common/util/json_input.hpp"

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::util {
namespace {

// Thrown out of the parser's callback to stop at the first level too deep.
struct TooDeep {};

}  // namespace

nlohmann::json parse_json_input(std::string_view text, std::string_view what, std::string_view hint,
                                const JsonEvent& on_event) {
  using nlohmann::json;
  auto check = [&](int depth, json::parse_event_t event, json& parsed) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw TooDeep{};
    if (on_event) on_event(depth, event, parsed);
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
