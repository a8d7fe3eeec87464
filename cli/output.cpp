#include "cli/output.hpp"

#include <cstdio>

#include "common/util/time.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::cli {

void print_table(const TableRow& header, const std::vector<TableRow>& given) {
  // What a job holds (its name, a message) is shown, never obeyed: escape
  // sequences in it retitled and cleared the terminal of whoever listed it.
  std::vector<TableRow> rows;
  rows.reserve(given.size());
  for (const auto& r : given) {
    TableRow shown;
    for (const auto& c : r) shown.push_back(util::one_line(c));
    rows.push_back(std::move(shown));
  }
  std::vector<size_t> widths(header.size());
  for (size_t i = 0; i < header.size(); ++i) widths[i] = util::display_width(header[i]);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size() && i < widths.size(); ++i) widths[i] = std::max(widths[i], util::display_width(r[i]));
  auto print_row = [&](const TableRow& r) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(widths[i] - util::display_width(r[i]) + 2, ' ');
    }
    // An empty last column leaves no padding behind.
    line.erase(line.find_last_not_of(' ') + 1);
    std::printf("%s\n", line.c_str());
  };
  print_row(header);
  for (const auto& r : rows) print_row(r);
}

void print_fields(const std::vector<std::pair<std::string, std::string>>& fields) {
  size_t w = 0;
  for (const auto& [k, v] : fields) w = std::max(w, k.size());
  for (const auto& [k, v] : fields)
    std::printf("%s:%s%s\n", k.c_str(), std::string(w - k.size() + 2, ' ').c_str(), util::one_line(v).c_str());
}

void print_json(const nlohmann::json& j) {
  std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

std::string cell(const std::string& text, size_t width) {
  std::string flat;
  for (char c : text) flat += (c == '\n' || c == '\t') ? ' ' : c;
  if (util::display_width(flat) <= width) return flat;
  return flat.substr(0, util::prefix_within(flat, width > 0 ? width - 1 : 0)) + "…";
}

std::string time_or_dash(const std::optional<int64_t>& t) { return t ? util::format_time(*t) : "-"; }

}  // namespace jobctl::cli
