#include "common/model/labels.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/util/error.hpp"
#include "common/util/strings.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::model {
namespace {

bool valid_part(std::string_view s) {
  return !s.empty() && s.size() <= 128 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '/' || c == ':';
  });
}

}  // namespace

Labels parse_labels(std::string_view text, std::string_view flag) {
  Labels out;
  if (text.empty()) return out;
  for (const auto& item : util::split(text, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos || !valid_part(item.substr(0, eq)) || !valid_part(item.substr(eq + 1)))
      throw usage_error(fmt::format("invalid label '{}' in {}", util::show_bytes(item), flag),
                        "write KEY=VALUE pairs separated by commas, e.g. role=web,dc=fra (letters, digits, . _ - / :)");
    for (const auto& seen : out)
      if (seen.substr(0, seen.find('=')) == item.substr(0, eq))
        throw usage_error(fmt::format("label key '{}' appears twice in {}", item.substr(0, eq), flag),
                          "give each key once");
    out.push_back(item);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Labels parse_fan_out(std::string_view text, std::string_view flag) {
  if (text == "*") return {};
  if (text.empty())
    throw usage_error(fmt::format("{} needs labels", flag), "e.g. --on-each role=web, or --on-each '*' for every agent");
  return parse_labels(text, flag);
}

std::string fan_out_display(const Labels& labels) { return labels.empty() ? "*" : labels_display(labels); }

std::string labels_display(const Labels& labels) {
  std::string out;
  for (const auto& l : labels) out += (out.empty() ? "" : ",") + l;
  return out;
}

bool labels_match(const Labels& target, const Labels& labels) {
  return std::includes(labels.begin(), labels.end(), target.begin(), target.end());
}

}  // namespace jobctl::model
