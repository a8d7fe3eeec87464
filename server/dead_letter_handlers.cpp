// The API's dead-letter queue: list, show, replay and dismiss (one, a list,
// or every run a filter covers) and purge.
#include "common/ops/dead_letter.hpp"
#include "common/ops/ids.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "common/util/json_input.hpp"
#include "common/util/ulid.hpp"
#include "server/handlers.hpp"
#include "server/problem.hpp"

namespace jobctl::server {
namespace {

store::DeadFilter filter_of(const Call& c, int default_limit) {
  return ops::dead_filter(c.query("queue"), c.query("since"), c.query("until"),
                          query_int(c, "limit", default_limit, 1, 100000), "since", "until");
}

// A replay's or a dismissal's body: the runs named, or all a filter covers.
using ForRuns = nlohmann::json (*)(store::Store&, const std::vector<std::string>&);
using ForFilter = nlohmann::json (*)(store::Store&, const store::DeadFilter&);

constexpr const char* kBulkHint =
    R"(the body is {"ids": [RUN_ID, …]}, or {"all": true} with "queue", "since" and "until" to narrow it)";

// What a well-formed body asks, done.
Reply bulk_as_asked(Call& c, const nlohmann::json& body, ForRuns named, ForFilter all_covered) {
  const char* hint = kBulkHint;
  if (!body.is_object()) throw usage_error("the request body must be a JSON object", hint);
  for (const auto& [key, value] : body.items())
    if (key != "ids" && key != "all" && key != "queue" && key != "since" && key != "until")
      throw usage_error("the request body has an unknown key '" + key + "'", hint);
  if (body.contains("all") && !body["all"].is_boolean()) throw usage_error("\"all\" must be true or false", hint);
  const bool all = body.value("all", false);
  if (all == body.contains("ids")) throw usage_error("give either \"ids\" or \"all\": true", hint);
  if (!all) {
    if (!body["ids"].is_array() || body["ids"].empty()) throw usage_error("\"ids\" must be a non-empty array", hint);
    std::vector<std::string> ids;
    for (const auto& id : body["ids"]) {
      if (!id.is_string()) throw usage_error("\"ids\" must hold run ids (strings)", hint);
      ids.push_back(id.get<std::string>());
    }
    return {200, named(c.store, ids), {}};
  }
  auto text = [&](const char* key) {
    if (!body.contains(key)) return std::string();
    if (!body[key].is_string()) throw usage_error(std::string("\"") + key + "\" must be a string", hint);
    return body[key].get<std::string>();
  };
  return {200,
          all_covered(c.store, ops::dead_filter(text("queue"), text("since"), text("until"), 1000, "since", "until")),
          {}};
}

Reply bulk(Call& c, ForRuns named, ForFilter all_covered) {
  auto body = util::parse_json_input(c.request.body, "the request body", kBulkHint);
  return from_body([&] { return bulk_as_asked(c, body, named, all_covered); });
}

}  // namespace

Reply dead_runs(Call& c) {
  auto filter = filter_of(c, 100);
  filter.before = c.query("before");
  if (util::is_ulid(filter.before))  // in either case, as every id
    filter.before = ops::normalize_id(c.store, filter.before, {store::Jobs::IdKind::run});
  if (!filter.before.empty() && !c.store.jobs().get_run(filter.before))
    throw usage_error("the cursor before='" + filter.before + "' is not a run (removed by gc or a purge?)",
                      "list again from the first page, without before");
  Reply reply{200, ops::dead_runs_json(c.store, filter), {}};
  const auto& runs = reply.body;
  if (!runs.empty()) link_next(c, reply, "/dead-letter", runs.size(), filter.limit, runs.back()["run"]["id"]);
  return reply;
}

Reply dead_run(Call& c) { return {200, ops::dead_run_json(c.store, c.path_param(1)), {}}; }

Reply replay_dead_run(Call& c) { return {200, ops::replay_json(c.store, {c.path_param(1)}), {}}; }

Reply replay_dead_runs(Call& c) { return bulk(c, ops::replay_json, ops::replay_all_json); }

Reply dismiss_dead_run(Call& c) { return {200, ops::dismiss_json(c.store, {c.path_param(1)}), {}}; }

Reply dismiss_dead_runs(Call& c) { return bulk(c, ops::dismiss_json, ops::dismiss_all_json); }

Reply purge_dead_runs(Call& c) {
  const std::string older = c.query("older_than");
  if (older.empty()) throw usage_error("query parameter older_than is needed", "e.g. ?older_than=7d");
  return {200, ops::purge_json(c.store, older, "older_than"), {}};
}

}  // namespace jobctl::server
