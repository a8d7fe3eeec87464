#include "common/ops/waiting_reasons.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/model/labels.hpp"
#include "common/store/admin.hpp"
#include "common/store/queues.hpp"

namespace jobctl::ops {

WaitingReason WaitingReasons::operator()(const model::JobView& v) {
  if (!v.latest_run) return {};
  return (*this)(v.job, *v.latest_run);
}

WaitingReason WaitingReasons::operator()(const model::Job& job, const model::Run& run) {
  if (run.status != model::RunStatus::pending) return {};
  if (!paused_) paused_ = store_.queues().paused_queues();
  if (paused_->contains(job.spec.queue))
    return {"queue paused", fmt::format("queue {} is paused: `jobctl queue resume {}` lets agents claim it again",
                                        job.spec.queue, job.spec.queue)};
  if (!workers_) workers_ = store_.admin().list_workers();
  auto live = [](const model::Worker& w) { return w.state == model::WorkerState::active; };
  auto serves = [&](const model::Worker& w) {
    return live(w) && std::find(w.queues.begin(), w.queues.end(), job.spec.queue) != w.queues.end();
  };
  const auto& target = job.spec.target;
  auto eligible = [&](const model::Worker& w) {
    return serves(w) && model::labels_match(target, w.labels) && (run.pinned_to.empty() || run.pinned_to == w.name);
  };
  if (std::any_of(workers_->begin(), workers_->end(), eligible)) return {};
  std::string why;
  if (!run.pinned_to.empty() &&
      std::none_of(workers_->begin(), workers_->end(), [&](const auto& w) { return live(w) && w.name == run.pinned_to; }))
    why = "agent " + run.pinned_to + " is not live";
  else if (std::none_of(workers_->begin(), workers_->end(), serves))
    why = fmt::format("no live agent serves queue {} (start one with `jobagent --queues {}`)", job.spec.queue, job.spec.queue);
  else if (!run.pinned_to.empty())
    why = fmt::format("agent {} does not serve queue {}", run.pinned_to, job.spec.queue);
  else
    why = "none of the live agents of queue " + job.spec.queue + " has " + model::labels_display(target);
  return {"no eligible agent", "no eligible agent: " + why};
}

}  // namespace jobctl::ops
