#pragma once
// Each enum's names, written once as a table beside the enum: to_string,
// the parsers, their error hints and the CLI's value checks (IsMember, and
// so the shell completions) all read it.
//
// A value named a second time later in its table has an alias: parsers
// accept it (Priority's "medium" is "normal"), nothing prints it. Names
// are read in any case.
#include <array>
#include <cstddef>
#include <map>
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

// Whether entry i of the table names a value an earlier entry named.
template <typename E, size_t N>
constexpr bool is_alias(const EnumNames<E, N>& names, size_t i) {
  for (size_t k = 0; k < i; ++k)
    if (names[k].first == names[i].first) return true;
  return false;
}

// The names in table order, aliases left out: what help and completions show.
template <typename E, size_t N>
std::vector<std::string> names_of(const EnumNames<E, N>& names) {
  std::vector<std::string> out;
  for (size_t i = 0; i < N; ++i)
    if (!is_alias(names, i)) out.emplace_back(names[i].second);
  return out;
}

// Each alias and the name it stands for.
template <typename E, size_t N>
std::map<std::string, std::string> aliases_of(const EnumNames<E, N>& names) {
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < N; ++i)
    if (is_alias(names, i)) out.emplace(names[i].second, name_of(names, names[i].first));
  return out;
}

// Whether two names are the same but for the case of ASCII letters.
bool same_name(std::string_view a, std::string_view b);

// "a, b or c".
std::string join_or(const std::vector<std::string>& words);

// Throws the usage Error "invalid WHAT 'TEXT'" with the hint "use a, b or c".
[[noreturn]] void throw_unknown_name(std::string_view what, std::string_view text, const std::vector<std::string>& names);

// The value named `text`; throws usage Error naming `what` and the choices.
template <typename E, size_t N>
E parse_name(const EnumNames<E, N>& names, std::string_view text, std::string_view what) {
  for (const auto& [v, name] : names)
    if (same_name(name, text)) return v;
  throw_unknown_name(what, text, names_of(names));
}

}  // namespace jobctl::model
