// The API's schedules: one made from a job with a cron expression, the
// list, the runs of one, and an occurrence made now.
#include "common/jobdef/job_input.hpp"
#include "common/ops/job_actions.hpp"
#include "common/ops/schedules.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "common/util/json_input.hpp"
#include "server/handlers.hpp"
#include "server/problem.hpp"

#include <fmt/format.h>

namespace jobctl::server {

Reply submit_schedule(Call& c) {
  auto body = util::parse_json_input(c.request.body, "the request body",
                                     "the body is a job with a \"cron\" expression, as a line of `jobctl submit "
                                     "--file`; see jobctl(1), SERVE");
  auto spec = from_body([&] {
    if (!body.is_object() || !body.contains("cron"))
      throw usage_error("a schedule needs \"cron\"", "e.g. {\"command\": \"backup.sh\", \"cron\": \"0 3 * * *\"}");
    return jobdef::job_spec_from_json(body);
  });
  apply_idempotency_header(c, spec);
  auto s = c.submissions.submit(c.token.name, {spec});
  return {s.results[0].existed ? 200 : 201, ops::submitted_json(s.views, false),
          {{"Location", fmt::format("{}/jobs/{}", kApiPrefix, s.results[0].job_id)}}};
}

Reply list_schedules(Call& c) { return {200, ops::schedules_json(c.store), {}}; }

Reply trigger_schedule(Call& c) {
  return {200, ops::trigger_schedule(c.store, c.path_param(1), query_bool(c, "force")), {}};
}

Reply schedule_runs(Call& c) {
  return {200, ops::schedule_runs_json(c.store, c.path_param(1), query_int(c, "limit", 20, 1, 100000)), {}};
}

}  // namespace jobctl::server
