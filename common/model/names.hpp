#pragma once
// Each enum's names, written once as a table beside the enum: to_string,
// the parsers, their error hints and the CLI's value checks (IsMember, and
// so the shell completions) all read it.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jobctl::model {

template <typename E, size_t N>
using EnumNames = std::array<std::pair<E, std::string_view>, N>;

template <typename E, size_t N>
constexpr std::string_view name_of(const EnumNames<E, N>& names, E value) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return "?";
}

// The names in table order: what a flag accepts.
template <typename E, size_t N>
std::vector<std::string> names_of(const EnumNames<E, N>& names) {
  std::vector<std::string> out;
  for (const auto& [v, name] : names) out.emplace_back(name);
  return out;
}

// "a, b or c".
std::string join_or(const std::vector<std::string>& words);

// Throws the usage Error "invalid WHAT 'TEXT'" with the hint "use a, b or c".
[[noreturn]] void throw_unknown_name(std::string_view what, std::string_view text, const std::vector<std::string>& names);

// The value named `text`; throws usage Error naming `what` and the choices.
template <typename E, size_t N>
E parse_name(const EnumNames<E, N>& names, std::string_view text, std::string_view what) {
  for (const auto& [v, name] : names)
    if (name == text) return v;
  throw_unknown_name(what, text, names_of(names));
}

}  // namespace jobctl::model
