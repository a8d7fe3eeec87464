#include <doctest/doctest.h>

#include <string>

#include "common/util/error.hpp"
#include "common/util/json_input.hpp"

using jobctl::util::kMaxJsonDepth;
using jobctl::util::parse_json_input;

namespace {

std::string nested(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

// The message of the usage error parsing `text` throws.
std::string refusal(const std::string& text) {
  try {
    parse_json_input(text, "--payload", "a hint");
  } catch (const jobctl::Error& e) {
    CHECK(e.code() == jobctl::ExitCode::usage);
    CHECK(e.hint() == "a hint");
    return e.what();
  }
  FAIL("accepted: " << text.substr(0, 40));
  return "";
}

}  // namespace

TEST_CASE("json input: nesting is refused past 64 levels, however deep, before anything walks it") {
  CHECK(parse_json_input(nested(kMaxJsonDepth), "--payload", "").is_array());
  CHECK(parse_json_input(R"({"a":)" + nested(kMaxJsonDepth - 1) + "}", "--payload", "").is_object());
  CHECK(refusal(nested(kMaxJsonDepth + 1)).find("nested deeper than 64 levels") != std::string::npos);
  CHECK(refusal(nested(100'000)).find("--payload is nested deeper") != std::string::npos);  // crashed the CLI
  std::string objects;
  for (int i = 0; i < 100'000; ++i) objects += R"({"a":)";
  CHECK(refusal(objects).find("nested deeper") != std::string::npos);
}

TEST_CASE("json input: malformed text and numbers out of range are one usage error naming the input") {
  CHECK(refusal("{oops").find("--payload is not valid JSON") != std::string::npos);
  CHECK(refusal(R"({"retries": 1e400})").find("number overflow") != std::string::npos);  // exited 70
  CHECK(refusal("\"\xff\"").find("not valid JSON") != std::string::npos);                 // not UTF-8
  CHECK(refusal("").find("not valid JSON") != std::string::npos);
}

TEST_CASE("json input: the caller sees every parse event") {
  int keys = 0;
  parse_json_input(R"({"a": {"b": 1}})", "x", "", [&](int, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if (event == nlohmann::json::parse_event_t::key) ++keys;
  });
  CHECK(keys == 2);
}

TEST_CASE("json input: a key given twice in one object is refused, where the parser would keep the last") {
  CHECK(refusal(R"({"retries": 1, "retries": 5})").find("--payload has the key 'retries' twice") != std::string::npos);
  CHECK(refusal(R"({"a": {"b": 1, "c": {"b": 2}, "b": 3}})").find("key 'b' twice") != std::string::npos);
  // The same key in different objects, or in sibling objects, is fine.
  CHECK(parse_json_input(R"({"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]})", "--payload", "").size() == 2);
}
