#include "common/store/tables.hpp"

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::store {

std::string select_list(const Table& t) { return select_list(t, t.alias); }

std::string select_list(const Table& t, std::string_view alias) {
  std::string out;
  for (const auto& c : t.columns) {
    if (!out.empty()) out += ", ";
    if (!c.expr.empty())
      out += c.expr;
    else if (alias.empty())
      out += c.name;
    else
      out += fmt::format("{}.{}", alias, c.name);
  }
  return out;
}

std::string set_list(const Table& t, Writer writer, size_t first_param) {
  std::string out;
  for (const auto& c : t.columns) {
    if (c.writer != writer) continue;
    out += fmt::format("{}{} = ${}", out.empty() ? "" : ", ", c.name, first_param++);
  }
  return out;
}

std::vector<BatchColumn> batch_columns(const Table& t, std::initializer_list<Writer> writers) {
  std::vector<BatchColumn> out;
  for (const auto& c : t.columns)
    for (Writer w : writers)
      if (c.writer == w) out.push_back(BatchColumn{c.name, c.type});
  return out;
}

void throw_unset_column(std::string_view column) {
  throw Error(ExitCode::internal, fmt::format("the store wrote a row without its column {}", column));
}

}  // namespace jobctl::store
