#include "common/store/fan_out.hpp"

#include <set>

#include <fmt/format.h>

#include "common/store/encodings.hpp"

namespace jobctl::store {

std::vector<std::string> fan_out_agents(Connection& c, const model::Labels& labels) {
  std::set<std::string> names;
  for (const auto& row : c.query("SELECT name, labels FROM workers WHERE state = 'active'"))
    if (model::labels_match(labels, labels_from_text(row.text(1)))) names.insert(row.text(0));
  return {names.begin(), names.end()};
}

std::string no_agent_reason(const model::Labels& labels) {
  return fmt::format("no live agent matches --on-each {}", model::fan_out_display(labels));
}

}  // namespace jobctl::store
