#pragma once
// Shared output formatting: aligned tables and key/value blocks for people,
// JSON (one document, pretty-printed) for scripts.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace jobctl::cli {

using TableRow = std::vector<std::string>;

void print_table(const TableRow& header, const std::vector<TableRow>& rows);
void print_fields(const std::vector<std::pair<std::string, std::string>>& fields);
void print_json(const nlohmann::json& j);

// Prints `items` as one JSON array, each element made by `to_json`.
template <typename T, typename ToJson>
void print_json_list(const std::vector<T>& items, ToJson&& to_json) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& item : items) out.push_back(to_json(item));
  print_json(out);
}

// Cuts text to `width` characters (with "…") and flattens newlines, for cells.
std::string cell(const std::string& text, size_t width = 60);

// A time for a cell or field (util::format_time), "-" when there is none.
std::string time_or_dash(const std::optional<int64_t>& t);

}  // namespace jobctl::cli
