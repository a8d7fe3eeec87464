#include "common/store/fan_out.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "common/store/encodings.hpp"
#include "common/util/strings.hpp"

namespace jobctl::store {

std::vector<std::string> fan_out_agents(Connection& c, const model::Labels& labels, const std::string& queue) {
  std::set<std::string> names;
  // Live: active, and heard from within its lease (one killed is past it
  // before any agent marks it gone, as jobctl workers shows it).
  for (const auto& row : c.query("SELECT name, labels, queues FROM workers WHERE state = 'active' AND "
                                 "heartbeat_at + lease_us >= NOW_US")) {
    const auto queues = util::split(row.text(2), ',');
    if (std::find(queues.begin(), queues.end(), queue) != queues.end() &&
        model::labels_match(labels, labels_from_text(row.text(1))))
      names.insert(row.text(0));
  }
  return {names.begin(), names.end()};
}

std::string no_agent_reason(const model::Labels& labels, const std::string& queue) {
  return fmt::format("no live agent of queue {} matches --on-each {}", queue, model::fan_out_display(labels));
}

}  // namespace jobctl::store
