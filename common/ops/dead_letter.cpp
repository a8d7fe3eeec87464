#include "common/ops/dead_letter.hpp"

#include <fmt/format.h>

#include "common/model/job_json.hpp"
#include "common/ops/health.hpp"
#include "common/ops/ids.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "common/util/time.hpp"

namespace jobctl::ops {
namespace {

// A dead run named by its run id, or by its job id when the job's latest
// run is the dead one; `done` ("replayed", "dismissed") names what the
// caller does to it in errors.
std::string dead_run_id(store::Store& store, const std::string& id, const char* done) {
  auto r = resolve_id(store, id);
  if (r.run && r.run->status == model::RunStatus::dead && r.run->replayed_at)
    // "(its run is dead)" said the opposite of "not in the queue" (a tester).
    throw Error(ExitCode::invalid_state,
                fmt::format("{} was run again already (by a replay or a retry): nothing was {}", id, done),
                "see its new run with `jobctl runs` on its job");
  if (!r.run || r.run->status != model::RunStatus::dead)
    throw Error(ExitCode::invalid_state,
                fmt::format("{} is not in the dead-letter queue{}", id,
                            r.run ? fmt::format(" (its run is {})", model::to_string(r.run->status)) : ""),
                "list it with `jobctl dlq ls`");
  return r.run->id;
}

}  // namespace

store::DeadFilter dead_filter(const std::string& queue, const std::string& since, const std::string& until, int limit,
                              const std::string& since_what, const std::string& until_what) {
  store::DeadFilter filter;
  int64_t now = util::now_micros();
  // A queue no job can have is a mistake, not an empty answer (a NUL in
  // one reached PostgreSQL from a bulk body: a 500).
  if (!queue.empty()) {
    model::validate_queue_name(queue);
    filter.queue = queue;
  }
  if (!since.empty()) filter.since = util::parse_time_arg(since, since_what.c_str(), now);
  if (!until.empty()) filter.until = util::parse_time_arg(until, until_what.c_str(), now);
  filter.limit = limit;
  return filter;
}

nlohmann::json dead_runs_json(store::Store& store, const store::DeadFilter& filter) {
  auto out = nlohmann::json::array();
  for (const auto& v : store.dead_letter().dead_runs(filter)) out.push_back(model::to_json(v));
  return out;
}

nlohmann::json dead_run_json(store::Store& store, const std::string& id) {
  auto r = resolve_id(store, id);
  if (!r.run || r.run->status != model::RunStatus::dead)
    throw Error(ExitCode::invalid_state, fmt::format("{} is not a dead run", id), "list them with `jobctl dlq ls`");
  r.job.latest_run = r.run;
  auto j = model::to_json(r.job);
  j["attempts"] = nlohmann::json::array();
  for (const auto& a : store.jobs().attempts(r.run->id)) j["attempts"].push_back(model::to_json(a, true));
  return j;
}

nlohmann::json replay_json(store::Store& store, const std::vector<std::string>& ids) {
  std::vector<std::string> runs;
  for (const auto& id : ids) runs.push_back(dead_run_id(store, id, "replayed"));
  auto fresh = store.dead_letter().replay(runs);
  return {{"replayed", fresh.size()}, {"runs", fresh}};
}

nlohmann::json replay_all_json(store::Store& store, const store::DeadFilter& filter) {
  return {{"replayed", store.dead_letter().replay_all(filter)}};
}

nlohmann::json dismiss_json(store::Store& store, const std::vector<std::string>& ids) {
  std::vector<std::string> runs;
  for (const auto& id : ids) runs.push_back(dead_run_id(store, id, "dismissed"));
  auto dismissed = store.dead_letter().dismiss(runs);
  return {{"dismissed", dismissed.size()}, {"runs", dismissed}};
}

nlohmann::json dismiss_all_json(store::Store& store, const store::DeadFilter& filter) {
  return {{"dismissed", store.dead_letter().dismiss_all(filter)}};
}

nlohmann::json purge_json(store::Store& store, const std::string& older_than, const std::string& what) {
  // 0s purged the whole queue (a tester): refused, as gc refuses it.
  return {{"purged", store.dead_letter().purge_dead(window_of(older_than, what, "e.g. 30d"))}};
}

}  // namespace jobctl::ops
