#include "common/ops/job_views.hpp"

#include <map>

#include "common/model/job_json.hpp"
#include "common/ops/ids.hpp"
#include "common/store/jobs.hpp"

namespace jobctl::ops {

std::vector<model::Run> per_agent_runs(store::Store& store, const model::JobView& view) {
  if (!view.job.spec.fan_out || !view.latest_run) return {};
  const auto& latest = *view.latest_run;
  std::map<std::string, model::Run> newest;  // runs_of is oldest first
  for (auto& run : store.jobs().runs_of(view.job.id)) {
    if (run.pinned_to.empty()) continue;
    if (latest.occurrence && run.occurrence && *run.occurrence != *latest.occurrence) continue;
    newest[run.pinned_to] = std::move(run);
  }
  std::vector<model::Run> out;
  for (auto& [agent, run] : newest) out.push_back(std::move(run));
  return out;
}

nlohmann::json with_waiting(const model::JobView& v, const WaitingReason& waiting) {
  auto j = model::to_json(v);
  j["waiting"] = waiting.empty() ? nlohmann::json(nullptr) : nlohmann::json(waiting.detail);
  return j;
}

nlohmann::json job_json(store::Store& store, const std::string& id) {
  auto r = resolve_id(store, id);
  if (r.run) r.job.latest_run = r.run;
  WaitingReasons reasons(store);
  auto j = with_waiting(r.job, reasons(r.job));
  if (r.job.job.spec.fan_out) {
    j["per_agent"] = nlohmann::json::array();
    for (const auto& run : per_agent_runs(store, r.job)) {
      auto one = model::to_json(run);
      auto why = reasons(r.job.job, run);
      one["waiting"] = why.empty() ? nlohmann::json(nullptr) : nlohmann::json(why.detail);
      j["per_agent"].push_back(std::move(one));
    }
  }
  return j;
}

nlohmann::json job_list_json(store::Store& store, const std::vector<model::JobView>& jobs) {
  WaitingReasons waiting(store);
  auto out = nlohmann::json::array();
  for (const auto& v : jobs) out.push_back(with_waiting(v, waiting(v)));
  return out;
}

}  // namespace jobctl::ops
