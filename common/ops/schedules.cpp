#include "common/ops/schedules.hpp"

#include "common/cron/plan.hpp"
#include "common/model/job_json.hpp"
#include "common/ops/ids.hpp"
#include "common/store/dags.hpp"
#include "common/store/schedules.hpp"
#include "common/util/error.hpp"
#include "common/util/time.hpp"

namespace jobctl::ops {

nlohmann::json schedule_runs_json(store::Store& store, const std::string& id, int limit) {
  auto r = resolve_id(store, id);
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

std::optional<int64_t> next_fire(const model::Job& job, int64_t now) {
  if (job.paused || !job.next_fire_at) return std::nullopt;
  try {
    return cron::next_occurrence(job, now);
  } catch (const Error& e) {
    // A zone this host's tzdata lacks (older, or without tzdata-legacy):
    // the leader's own reckoning, rather than failing the whole list, as
    // the caller's mistake (exit 2, 400), for one schedule.
    if (e.code() != ExitCode::usage) throw;
    return job.next_fire_at;
  }
}

nlohmann::json schedules_json(store::Store& store) {
  const int64_t now = util::now_micros();
  auto out = nlohmann::json::array();
  for (const auto& v : store.schedules().list_schedules()) {
    auto j = model::to_json(model::JobView{v.job, v.last_run});
    auto next = next_fire(v.job, now);
    j["next_fire"] = next ? nlohmann::json(util::format_time(*next)) : nlohmann::json(nullptr);
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json trigger_schedule(store::Store& store, const std::string& id, bool force) {
  auto r = resolve_id(store, id);
  std::string run = store.schedules().trigger(r.job.job.id, force);
  return {{"id", r.job.job.id}, {"run", run}};
}

}  // namespace jobctl::ops
