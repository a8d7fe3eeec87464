#include "common/ops/schedules.hpp"

#include "common/model/job_json.hpp"
#include "common/ops/ids.hpp"
#include "common/store/dags.hpp"
#include "common/store/schedules.hpp"
#include "common/util/time.hpp"

namespace jobctl::ops {

nlohmann::json schedule_runs_json(store::Store& store, const std::string& id, int limit) {
  auto r = resolve_schedule(store, id);
  auto out = nlohmann::json::array();
  if (r.job.job.kind == "dag") {
    for (const auto& v : store.dags().list_dag_runs(limit, r.job.job.dag_id))
      out.push_back({{"dag_run_id", v.id},
                     {"dag_id", v.dag_id},
                     {"status", v.status},
                     {"occurrence", v.occurrence ? nlohmann::json(util::format_time(*v.occurrence)) : nlohmann::json(nullptr)},
                     {"created_at", util::format_time(v.created_at)}});
    return out;
  }
  for (const auto& run : store.schedules().schedule_runs(r.job.job.id, limit)) out.push_back(model::to_json(run));
  return out;
}

}  // namespace jobctl::ops
