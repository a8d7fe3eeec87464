#include "common/ops/job_records.hpp"

#include <fmt/format.h>

#include "common/model/job_json.hpp"
#include "common/ops/ids.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"

namespace jobctl::ops {

std::vector<model::Attempt> attempts_of(store::Store& store, const std::string& id) {
  auto r = resolve_id(store, id);
  std::vector<model::Run> runs;
  if (r.named_run) runs.push_back(*r.run);
  else runs = store.jobs().runs_of(r.job.job.id);
  std::vector<model::Attempt> attempts;
  for (const auto& run : runs)
    for (auto& a : store.jobs().attempts(run.id)) attempts.push_back(std::move(a));
  return attempts;
}

nlohmann::json attempts_json(const std::vector<model::Attempt>& attempts) {
  auto out = nlohmann::json::array();
  for (const auto& a : attempts) out.push_back(model::to_json(a, false));
  return out;
}

model::Attempt attempt_with_output(store::Store& store, const std::string& id, int number) {
  auto r = resolve_id(store, id);
  if (!r.run) throw Error(ExitCode::invalid_state, fmt::format("job {} has no run yet", r.job.job.id));
  auto attempts = store.jobs().attempts(r.run->id);
  if (attempts.empty())
    throw Error(ExitCode::invalid_state,
                fmt::format("run {} has not started yet ({})", r.run->id, model::to_string(r.run->status)),
                "wait for it with `jobctl wait`");
  if (number <= 0) return attempts.back();
  if (number > static_cast<int>(attempts.size()))
    throw Error(ExitCode::not_found, fmt::format("run {} has {} attempt(s), not {}", r.run->id, attempts.size(), number));
  return attempts[static_cast<size_t>(number - 1)];
}

nlohmann::json history_json(store::Store& store, const std::string& id, int limit) {
  auto r = resolve_id(store, id);
  auto out = nlohmann::json::array();
  for (const auto& e : store.jobs().history(r.job.job.id, limit)) out.push_back(model::to_json(e));
  return out;
}

}  // namespace jobctl::ops
