#include "common/ops/queues.hpp"

#include "common/model/job_json.hpp"
#include "common/store/queues.hpp"

namespace jobctl::ops {

nlohmann::json queues_json(store::Store& store) {
  auto out = nlohmann::json::array();
  auto limit = [](auto v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
  for (const auto& q : store.queues().list_queues())
    out.push_back({{"name", q.name},
                   {"pending", q.pending},
                   {"running", q.running},
                   {"dead", q.dead},
                   {"paused", q.paused},
                   {"max_concurrent", limit(q.max_concurrent)},
                   {"rate_per_second", limit(q.rate)},
                   {"tenant_max_concurrent", limit(q.tenant_max_concurrent)},
                   {"defaults", model::to_json(q.defaults)}});
  return out;
}

nlohmann::json pause_queue(store::Store& store, const std::string& name, bool pause) {
  model::validate_queue_name(name);
  bool changed = store.queues().set_queue_paused(name, pause);
  return {{"queue", name}, {"result", pause ? "paused" : "resumed"}, {"changed", changed}};
}

}  // namespace jobctl::ops
