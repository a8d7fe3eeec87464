#include "common/store/sql.hpp"

#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "common/util/duration.hpp"
#include "common/util/error.hpp"

namespace jobctl::store {

std::chrono::milliseconds store_timeout() {
  static const std::chrono::milliseconds timeout = [] {
    const char* env = std::getenv("JOBCTL_STORE_TIMEOUT");
    if (!env || !*env) return std::chrono::milliseconds(30000);
    auto us = util::parse_duration(env, "JOBCTL_STORE_TIMEOUT");
    if (us.count() < 1000 || us.count() > 3'600'000'000)
      throw Error(ExitCode::usage, fmt::format("JOBCTL_STORE_TIMEOUT '{}' is out of range", env),
                  "give a duration from 1ms to 1h, such as 30s");
    return std::chrono::duration_cast<std::chrono::milliseconds>(us);
  }();
  return timeout;
}

std::string pg_array(const std::vector<std::optional<std::string>>& items) {
  std::string out = "{";
  for (const auto& item : items) append_pg_array_item(out, item);
  out += '}';
  return out;
}

void append_pg_array_item(std::string& array, const std::optional<std::string_view>& item) {
  if (array.size() > 1) array += ',';
  if (!item) {
    array += "NULL";
    return;
  }
  array += '"';
  for (char c : *item) {
    if (c == '"' || c == '\\') array += '\\';
    array += c;
  }
  array += '"';
}

std::string quoted_identifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string statement_summary(std::string_view sql) {
  // Enough to tell the statements apart in a log: a long one (the claim is
  // a single line of 1.5 KB) made an error message a screenful.
  constexpr size_t kLongest = 80;
  auto start = sql.find_first_not_of(" \n\t");
  if (start == std::string_view::npos) return {};
  auto end = sql.find('\n', start);
  std::string_view line = sql.substr(start, end == std::string_view::npos ? sql.size() - start : end - start);
  if (line.size() <= kLongest) return std::string(line);
  auto cut = line.rfind(' ', kLongest);
  return std::string(line.substr(0, cut == std::string_view::npos || cut == 0 ? kLongest : cut)) + " …";
}

const std::string& Row::text(size_t i) const {
  static const std::string empty;
  const auto& c = cells_.at(i);
  return c ? *c : empty;
}

std::optional<int64_t> Row::opt_i64(size_t i) const {
  const auto& c = cells_.at(i);
  if (!c) return std::nullopt;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(c->data(), c->data() + c->size(), v);
  if (ec != std::errc() || ptr != c->data() + c->size())
    throw Error(ExitCode::internal, fmt::format("column {} holds '{}', not an integer", i, *c));
  return v;
}

int64_t Row::i64(size_t i) const { return opt_i64(i).value_or(0); }

}  // namespace jobctl::store
