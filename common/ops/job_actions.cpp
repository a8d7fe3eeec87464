#include "common/ops/job_actions.hpp"

#include "common/model/job_json.hpp"
#include "common/ops/ids.hpp"
#include "common/store/dead_letter.hpp"

namespace jobctl::ops {

nlohmann::json submitted_json(store::Store& store, const std::vector<store::SubmitResult>& results, bool batch) {
  std::vector<std::string> ids;
  for (const auto& r : results) ids.push_back(r.job_id);
  return submitted_json(store.jobs().get_jobs(ids), batch);  // one query, however large the batch
}

nlohmann::json submitted_json(const std::vector<model::JobView>& views, bool batch) {
  if (!batch && views.size() == 1) return model::to_json(views[0]);
  auto out = nlohmann::json::array();
  for (const auto& v : views) out.push_back(model::to_json(v));
  return out;
}

nlohmann::json cancel_job(store::Store& store, const std::string& id) {
  auto r = resolve_id(store, id);
  auto outcome = store.jobs().cancel(r.job.job.id);
  const char* result = outcome == store::CancelOutcome::cancelled   ? "cancelled"
                       : outcome == store::CancelOutcome::requested ? "cancel requested"
                                                                    : "cancel requested already";
  return {{"id", r.job.job.id}, {"result", result}};
}

nlohmann::json retry_job(store::Store& store, const std::string& id) {
  auto r = resolve_id(store, id);
  const auto fresh = store.dead_letter().retry_job(r.job.job.id);
  return {{"id", r.job.job.id}, {"run", fresh.front()}, {"runs", fresh}};
}

nlohmann::json pause_job(store::Store& store, const std::string& id, bool pause) {
  auto r = resolve_id(store, id);
  bool changed = store.jobs().set_paused(r.job.job.id, pause);
  return {{"id", r.job.job.id}, {"result", pause ? "paused" : "resumed"}, {"changed", changed}};
}

nlohmann::json delete_job(store::Store& store, const std::string& id, bool cancel_running) {
  auto r = resolve_id(store, id);
  auto d = store.jobs().delete_job(r.job.job.id, cancel_running ? store::CancelRunning::yes : store::CancelRunning::no);
  return {{"id", r.job.job.id}, {"result", "deleted"}, {"runs_cancelled", d.cancelled}, {"runs_skipped", d.skipped}};
}

nlohmann::json restore_job(store::Store& store, const std::string& id) {
  auto r = resolve_id(store, id);
  store.jobs().restore_job(r.job.job.id);
  return {{"id", r.job.job.id}, {"result", "restored"}};
}

}  // namespace jobctl::ops
