// The API's DAGs: submit a document, list runs, the status of one, and
// cancel, pause, resume or retry one.
#include <optional>

#include "common/model/job_json.hpp"
#include "common/ops/dags.hpp"
#include "common/util/json_input.hpp"
#include "server/handlers.hpp"
#include "server/problem.hpp"

namespace jobctl::server {

Reply submit_dag(Call& c) {
  std::optional<std::string> tz;
  if (c.request.has_param("tz")) tz = c.query("tz");
  const std::string on_failure = c.request.has_param("on_failure") ? c.query("on_failure") : "stop";
  // The query's mistakes are 400, as is a document that is not JSON; what
  // a well-formed one asks is the body's (422).
  ops::check_dag_options(on_failure, c.query("cron"), tz);
  util::parse_json_input(c.request.body, "the DAG document", "");
  const std::string key = c.request.get_header_value("Idempotency-Key");
  model::validate_idempotency_key(key, "the Idempotency-Key header");
  auto d = from_body([&] { return ops::dag_submission(c.request.body, on_failure, c.query("cron"), tz); });
  d.idempotency_key = key;
  auto r = c.store.dags().submit_dag(d);
  return {r.existed ? 200 : 201, ops::dag_submitted_json(r), {}};
}

Reply list_dag_runs(Call& c) { return {200, ops::dag_runs_json(c.store, query_int(c, "limit", 50, 1, 100000)), {}}; }
Reply dag_status(Call& c) { return {200, ops::dag_status(c.store, c.path_param(1)), {}}; }
Reply cancel_dag_run(Call& c) { return {200, ops::cancel_dag_run(c.store, c.path_param(1)), {}}; }
Reply pause_dag_run(Call& c) { return {200, ops::pause_dag_run(c.store, c.path_param(1), true), {}}; }
Reply resume_dag_run(Call& c) { return {200, ops::pause_dag_run(c.store, c.path_param(1), false), {}}; }
Reply retry_dag_run(Call& c) { return {200, ops::retry_dag_run(c.store, c.path_param(1)), {}}; }

}  // namespace jobctl::server
