#include "common/store/sql.hpp"

#include <charconv>

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::store {

std::string statement_summary(std::string_view sql) {
  auto start = sql.find_first_not_of(" \n\t");
  if (start == std::string_view::npos) return {};
  auto end = sql.find('\n', start);
  return std::string(sql.substr(start, end == std::string_view::npos ? sql.size() - start : end - start));
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
