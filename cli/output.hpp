#pragma once
// Shared output formatting: aligned tables and key/value blocks for people,
// JSON (one document, pretty-printed) for scripts.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace jobctl::cli {

using TableRow = std::vector<std::string>;

void print_table(const TableRow& header, const std::vector<TableRow>& rows);
void print_fields(const std::vector<std::pair<std::string, std::string>>& fields);
void print_json(const nlohmann::json& j);

// Cuts text to `width` characters (with "…") and flattens newlines, for cells.
std::string cell(const std::string& text, size_t width = 60);

}  // namespace jobctl::cli
