#include "common/ops/dags.hpp"

#include "common/cron/plan.hpp"
#include "common/dag/dag.hpp"
#include "common/model/job_json.hpp"
#include "common/ops/ids.hpp"
#include "common/util/error.hpp"
#include "common/util/time.hpp"
#include "common/util/tz.hpp"

namespace jobctl::ops {

void check_dag_options(const std::string& on_failure, const std::string& cron, const std::optional<std::string>& tz) {
  dag::parse_on_failure(on_failure);
  if (tz) util::given_zone(*tz, "--tz");
  if (tz && cron.empty()) throw usage_error("--tz goes with --cron");
  if (cron.empty()) return;
  model::ScheduleSpec sc;
  sc.cron = cron;
  if (tz) sc.tz = *tz;
  cron::validate_schedule(sc, "");  // H is valid whatever it hashes
}

store::DagSubmit dag_submission(std::string document, const std::string& on_failure, const std::string& cron,
                                const std::optional<std::string>& tz) {
  check_dag_options(on_failure, cron, tz);
  store::DagSubmit d;
  d.definition = dag::parse(document);
  d.document = std::move(document);
  d.on_failure = dag::parse_on_failure(on_failure);
  if (!cron.empty()) {
    model::ScheduleSpec sc;
    sc.cron = cron;
    if (tz) sc.tz = *tz;
    cron::validate_schedule(sc, d.definition.name);
    d.schedule = sc;
  }
  return d;
}

nlohmann::json dag_submitted_json(const store::DagSubmitResult& r) {
  auto id_or_null = [](const std::string& id) { return id.empty() ? nlohmann::json(nullptr) : nlohmann::json(id); };
  return {{"dag_id", r.dag_id}, {"dag_run_id", id_or_null(r.dag_run_id)}, {"schedule_job_id", id_or_null(r.schedule_job_id)}};
}

nlohmann::json dag_run_summary_json(const store::DagRunView& v) {
  auto time_or_null = [](const std::optional<int64_t>& t) {
    return t ? nlohmann::json(util::format_time(*t)) : nlohmann::json(nullptr);
  };
  return nlohmann::json{{"id", v.id},
                        {"dag_id", v.dag_id},
                        {"name", v.name},
                        {"status", v.status},
                        {"on_failure", dag::to_string(v.on_failure)},
                        {"created_at", util::format_time(v.created_at)},
                        {"finished_at", time_or_null(v.finished_at)},
                        {"occurrence", time_or_null(v.occurrence)},
                        {"idempotency_key", v.idempotency_key.empty() ? nlohmann::json(nullptr)
                                                                      : nlohmann::json(v.idempotency_key)},
                        {"nodes", v.counts}};
}

nlohmann::json dag_runs_json(store::Store& store, int limit) {
  auto out = nlohmann::json::array();
  for (const auto& v : store.dags().list_dag_runs(limit)) out.push_back(dag_run_summary_json(v));
  return out;
}

nlohmann::json cancel_dag_run(store::Store& store, const std::string& id) {
  int n = store.dags().cancel_dag_run(dag_run_id(store, id));
  return {{"id", id}, {"result", "cancelled"}, {"nodes", n}};
}

nlohmann::json pause_dag_run(store::Store& store, const std::string& id, bool pause) {
  bool changed = store.dags().set_dag_run_paused(dag_run_id(store, id), pause);
  return {{"id", id}, {"result", pause ? "paused" : "resumed"}, {"changed", changed}};
}

nlohmann::json retry_dag_run(store::Store& store, const std::string& id) {
  int n = store.dags().retry_dag_run(dag_run_id(store, id));
  return {{"id", id}, {"result", "retried"}, {"nodes", n}};
}

nlohmann::json dag_status(store::Store& store, const std::string& id) {
  auto v = store.dags().get_dag_run(dag_run_id(store, id));
  auto j = dag_run_summary_json(v);
  j["nodes"] = nlohmann::json::array();
  for (const auto& n : v.nodes)
    j["nodes"].push_back({{"name", n.name}, {"job_id", n.job_id}, {"depends_on", n.depends_on}, {"run", model::to_json(n.run)}});
  j["counts"] = v.counts;
  return j;
}

}  // namespace jobctl::ops
