// The API's records of a job: its attempts, one attempt's output, its
// history of changes; and the fleet: its agents (workers) and queues.
#include "common/model/job_json.hpp"
#include "common/ops/job_records.hpp"
#include "common/ops/queues.hpp"
#include "common/store/admin.hpp"
#include "common/util/json_input.hpp"
#include "server/handlers.hpp"
#include "server/problem.hpp"

namespace jobctl::server {

Reply job_attempts(Call& c) { return {200, ops::attempts_json(ops::attempts_of(c.store, c.path_param(1))), {}}; }

Reply job_logs(Call& c) {
  auto a = ops::attempt_with_output(c.store, c.path_param(1), query_int(c, "attempt", 0, 1, 1000000));
  return {200, model::to_json(a, true), {}};
}

Reply job_history(Call& c) {
  return {200, ops::history_json(c.store, c.path_param(1), query_int(c, "limit", 100, 1, 100000)), {}};
}

Reply list_workers(Call& c) {
  auto out = nlohmann::json::array();
  for (const auto& w : c.store.admin().list_workers()) out.push_back(model::to_json(w));
  return {200, out, {}};
}

Reply list_queues(Call& c) { return {200, ops::queues_json(c.store), {}}; }
Reply set_queue(Call& c) {
  auto body = util::parse_json_input(c.request.body, "the request body",
                                     R"(the body is an object, e.g. {"max_concurrent": 4, "retries": 5})");
  model::validate_queue_name(c.path_param(1));  // the path's mistake: 400; the rest is the body's
  return {200, from_body([&] { return ops::set_queue(c.store, c.path_param(1), ops::queue_settings_from_json(body)); }),
          {}};
}
Reply pause_queue(Call& c) { return {200, ops::pause_queue(c.store, c.path_param(1), true), {}}; }
Reply resume_queue(Call& c) { return {200, ops::pause_queue(c.store, c.path_param(1), false), {}}; }

}  // namespace jobctl::server
