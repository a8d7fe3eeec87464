#include "common/model/names.hpp"

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::model {

std::string join_or(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

bool same_name(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

void throw_unknown_name(std::string_view what, std::string_view text, const std::vector<std::string>& names) {
  throw usage_error(fmt::format("invalid {} '{}'", what, text), fmt::format("use {}", join_or(names)));
}

}  // namespace jobctl::model
