// The API's DAGs: submit a document, and the status of a run.
#include <optional>

#include "common/ops/dags.hpp"
#include "server/handlers.hpp"

namespace jobctl::server {

Reply submit_dag(Call& c) {
  std::optional<std::string> tz;
  if (c.request.has_param("tz")) tz = c.query("tz");
  const std::string on_failure = c.request.has_param("on_failure") ? c.query("on_failure") : "stop";
  auto d = ops::dag_submission(c.request.body, on_failure, c.query("cron"), tz);
  auto r = c.store.dags().submit_dag(d);
  return {201, ops::dag_submitted_json(r), {}};
}

Reply dag_status(Call& c) { return {200, ops::dag_status(c.store, c.path_param(1)), {}}; }

}  // namespace jobctl::server
