#pragma once
// Values no option takes, refused alike by jobctl and jobagent.
#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>
#include <string>
#include <type_traits>

#include "common/util/strings.hpp"

namespace jobctl::util {

// The options marked with empty_means_none(). A set rather than a marker
// validator: CLI11 answers "no such validator" with an exception, and one
// thrown for every option of every command cost each jobctl process about
// a third of a millisecond. The marks last from building a tree of
// commands to its check, so that an option of a tree built later, at the
// address of a marked one freed since, is not taken for it.
namespace detail {
inline std::set<const CLI::Option*>& options_taking_empty() {
  static std::set<const CLI::Option*> marked;
  return marked;
}

// check_option_values for `app` and every command below it.
inline void check_option_values_below(CLI::App& app) {
  const CLI::Validator non_empty(
      [](const std::string& value) {
        return value.empty() ? std::string("the value is empty; give one, or leave the option out") : std::string();
      },
      "");
  const CLI::Validator decimal(
      [](const std::string& value) {
        const size_t sign = value.size() > 1 && value[0] == '-' ? 1 : 0;
        const auto digits = std::string_view(value).substr(sign);
        const bool plain = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) {
          return c >= '0' && c <= '9';
        }) && (digits.size() == 1 || digits[0] != '0');
        return plain ? std::string() : "'" + value + "' is not a whole number in decimal digits";
      },
      "");
  for (CLI::Option* option : app.get_options()) {
    if (!option->nonpositional() || option->get_expected_min() == 0) continue;
    // transform() puts a validator first, ahead of the option's own (a
    // list of choices, a range), so these are what an empty or octal value hears.
    const std::string type = option->get_type_name();
    if (type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0) option->transform(decimal);
    if (!options_taking_empty().contains(option)) option->transform(non_empty);
  }
  for (CLI::App* sub : app.get_subcommands({})) check_option_values_below(*sub);
}
}  // namespace detail

// Marks an option whose empty value means something of its own
// (`update --name ""` removes the name): check_option_values lets it be.
inline CLI::Option* empty_means_none(CLI::Option* option) {
  detail::options_taking_empty().insert(option);
  return option;
}

// Every option below `app` that takes a value refuses an empty one, unless
// marked with empty_means_none()
// (`--cron ''`, most often an unset shell variable), where taking it as
// "not given" would run the job now or wait for ever; and a whole-number
// option takes decimal digits only, where CLI11 would read `-n 010` as 8
// and `0x10` as 16. Each is "--flag: …", exit 2. Call once the tree of
// commands is built.
inline void check_option_values(CLI::App& app) {
  detail::check_option_values_below(app);
  detail::options_taking_empty().clear();
}

// The check of an option that takes a whole number of type T within
// [min, max]: anything else is one line, "--flag: must be a whole number
// from 1 to 100000, not '0'". Checked before CLI11 converts the value, so
// a value past T never reaches it ("Could not convert"); and CLI11's own
// PositiveNumber and Range spell a range through double, 300 digits long.
template <typename T>
CLI::Validator whole_number(T min, T max = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T>);
  return CLI::Validator(
      [min, max](std::string& value) {
        T n{};
        const char* end = value.data() + value.size();
        const auto [at, error] = std::from_chars(value.data(), end, n);
        if (error == std::errc() && at == end && n >= min && n <= max) return std::string();
        return fmt::format("must be a whole number from {} to {}, not '{}'", min, max, value);
      },
      max == std::numeric_limits<T>::max() ? fmt::format("at least {}", min) : fmt::format("{} to {}", min, max));
}

// The same for an option that takes any number within [min, max]
// ("--max-failure-rate: must be a number from 0 to 100, not '101'").
inline CLI::Validator number_in(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& value) {
        const auto n = parse_number(value);
        if (n && *n >= min && *n <= max) return std::string();
        return fmt::format("must be a number from {} to {}, not '{}'", min, max, value);
      },
      fmt::format("{} to {}", min, max));
}

}  // namespace jobctl::util
