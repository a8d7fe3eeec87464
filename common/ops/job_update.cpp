#include "common/ops/job_update.hpp"

#include <fmt/format.h>

#include "common/ops/ids.hpp"
#include "common/util/error.hpp"

namespace jobctl::ops {
namespace {

bool nothing_given(const store::JobUpdate& u) {
  return !u.name && !u.queue && !u.priority && !u.timeout_us && u.set_env.empty() && u.unset_env.empty() &&
         !u.command && !u.target && !u.concurrency_key && !u.tenant && !u.user && u.retry.empty() && u.schedule.empty();
}

}  // namespace

store::JobUpdate job_update(const jobdef::Draft& d, const std::set<std::string>& keys) {
  const model::JobSpec& s = d.spec;
  auto has = [&](const char* key) { return keys.count(key) > 0; };
  store::JobUpdate u;
  if (has("name")) u.name = s.name;
  if (has("queue")) u.queue = s.queue;
  if (has("priority")) u.priority = s.priority;
  if (has("timeout")) u.timeout_us = s.timeout_us;
  u.set_env = s.env;
  if (has("on")) u.target = s.target;
  if (has("concurrency_key")) u.concurrency_key = s.concurrency_key;
  if (has("tenant")) u.tenant = s.tenant;
  if (has("user")) u.user = s.user;
  if (has("command")) u.command = s.command;
  u.retry = s.retry_given;
  auto& sc = u.schedule;
  if (has("cron")) sc.cron = d.schedule.cron;
  if (has("tz")) sc.tz = d.tz;
  if (has("misfire")) sc.misfire = d.schedule.misfire;
  if (has("catchup_window")) sc.catchup_window_us = d.schedule.catchup_window_us;
  if (has("overlap")) sc.overlap = d.schedule.overlap;
  sc.max_concurrent = s.max_concurrent;
  if (has("jitter")) sc.jitter_us = d.schedule.jitter_us;
  if (has("starts_at")) sc.starts_at = d.starts_at;
  if (has("ends_at")) sc.ends_at = d.ends_at;
  if (has("max_runs")) sc.max_runs = d.schedule.max_runs.value_or(0);
  return u;
}

store::JobUpdate job_update_from_json(const nlohmann::json& body) {
  const char* hint = R"(the body is an object of the fields to change, e.g. {"priority": "high", "retries": 5})";
  if (!body.is_object()) throw usage_error("the request body must be a JSON object", hint);
  jobdef::Draft d;
  d.source = jobdef::Source::line;
  std::set<std::string> keys;
  std::vector<std::string> unset_env;
  for (const auto& [key, value] : body.items()) {
    if (key == "unset_env") {
      if (!value.is_array()) throw usage_error("field 'unset_env' must be an array of variable names", hint);
      for (const auto& name : value) {
        if (!name.is_string()) throw usage_error("field 'unset_env' must be an array of variable names", hint);
        unset_env.push_back(name.get<std::string>());
      }
      continue;
    }
    const jobdef::Field& f = jobdef::line_field(key);  // throws for an unknown key, listing them
    if (key != "command" && !(f.where & jobdef::kUpdate))
      throw usage_error(fmt::format("field '{}' cannot be changed by an update", key),
                        "submit a new job for it; see jobctl(1), jobctl update");
    f.apply(d, value, jobdef::Name{f, jobdef::Source::line});
    keys.insert(key);
  }
  auto u = job_update(d, keys);
  u.unset_env = std::move(unset_env);
  return u;
}

nlohmann::json update_job(store::Store& store, const std::string& id, const store::JobUpdate& u) {
  if (nothing_given(u))
    throw usage_error("nothing to update", "give a field to change, e.g. the priority, or a new command");
  auto r = resolve_id(store, id);
  auto result = store.jobs().update_job(r.job.job.id, u);
  return {{"id", r.job.job.id}, {"version", result.version}, {"changed", result.changed}, {"dropped", result.dropped}};
}

}  // namespace jobctl::ops
