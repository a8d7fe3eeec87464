#include "common/ops/run_output.hpp"

#include <fmt/format.h>

#include "common/ops/ids.hpp"
#include "common/ops/job_views.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"

namespace jobctl::ops {
namespace {

// What is new of one stream: the tail holds the last bytes of `bytes`
// written (unknown for attempts recorded before jobctl counted: the tail).
void take(std::vector<OutputEvent>& events, int attempt, Stream stream, const std::string& tail,
          std::optional<int64_t> bytes, int64_t& given) {
  const int64_t total = bytes.value_or(static_cast<int64_t>(tail.size()));
  if (total <= given) return;
  const int64_t start = total - static_cast<int64_t>(tail.size());
  if (given < start) {
    events.push_back({OutputEvent::Kind::gap, attempt, stream, {}, start - given, {}});
    given = start;
  }
  events.push_back({OutputEvent::Kind::output, attempt, stream, tail.substr(static_cast<size_t>(given - start)), 0, {}});
  given = total;
}

}  // namespace

std::vector<OutputEvent> RunOutput::poll(store::Store& store) {
  std::vector<OutputEvent> events;
  if (ended_) return events;
  run_ = store.jobs().get_run(run_id_);
  if (!run_) throw Error(ExitCode::not_found, fmt::format("no run with id '{}'", run_id_));
  auto attempts = store.jobs().attempts(run_id_);
  for (size_t i = 0; i < attempts.size(); ++i) {
    const auto& a = attempts[i];
    if (a.number < at_.attempt) continue;
    if (a.number > at_.attempt) {
      if (at_.attempt > 0) events.push_back({OutputEvent::Kind::attempt, a.number, Stream::out, {}, 0,
                                             i > 0 ? attempts[i - 1].error : std::string()});
      at_ = OutputPosition{a.number, 0, 0};
    }
    take(events, a.number, Stream::out, a.stdout_tail, a.stdout_bytes, at_.out);
    take(events, a.number, Stream::err, a.stderr_tail, a.stderr_bytes, at_.err);
  }
  last_ = attempts.empty() ? std::nullopt : std::optional<model::Attempt>(attempts.back());
  if (model::is_final(run_->status) && (!last_ || last_->finished_at)) {
    ended_ = true;
    events.push_back({OutputEvent::Kind::end, at_.attempt, Stream::out, {}, 0, {}});
  }
  return events;
}

std::vector<FollowedRun> runs_to_follow(store::Store& store, const std::string& id) {
  auto r = resolve_id(store, id);
  if (r.named_run) return {FollowedRun{r.run->id, ""}};
  std::vector<FollowedRun> out;
  for (const auto& run : per_agent_runs(store, r.job)) out.push_back(FollowedRun{run.id, run.pinned_to});
  if (out.empty() && r.run) out.push_back(FollowedRun{r.run->id, ""});
  if (out.empty())
    throw Error(ExitCode::invalid_state, fmt::format("job {} has no run to follow", r.job.job.id),
                r.job.job.spec.schedule ? "a schedule's runs are made by the leader agent as they fall due" : "");
  return out;
}

}  // namespace jobctl::ops
