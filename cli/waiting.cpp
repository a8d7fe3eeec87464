#include "cli/waiting.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>

#include <fmt/format.h>

#include "cli/output.hpp"
#include "cli/patient_look.hpp"
#include "cli/wait_display.hpp"
#include "common/ops/dags.hpp"
#include "common/ops/ids.hpp"
#include "common/ops/job_views.hpp"
#include "common/store/dags.hpp"
#include "common/model/job_json.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"

namespace jobctl::cli {

namespace {

// The runs a wait is for: every agent's of a fan-out job, else the latest.
std::vector<model::Run> awaited(Context& ctx, const model::JobView& view) {
  auto runs = ops::per_agent_runs(ctx.store(), view);
  if (runs.empty() && view.latest_run) runs.push_back(*view.latest_run);
  return runs;
}

bool dag_final(const std::string& status) { return status == "succeeded" || status == "failed" || status == "cancelled"; }

// Prints on stdout what `shown` makes of the store (a job as `get -o json`
// shows it, a DAG run as `dag status -o json`): what wait -o json prints,
// for one id as for several, finished or not. False when the store did not
// answer before the wait's time ran out (a second at least).
bool print_as_shown(PatientLook& look, const std::function<nlohmann::json(store::Store&)>& shown) {
  nlohmann::json j;
  if (!look([&](store::Store& s) { j = shown(s); })) return false;
  print_json(j);
  return true;
}

}  // namespace

int wait_for_dag_run(Context& ctx, const std::string& id, std::optional<util::Micros> timeout, WaitReport report) {
  Backoff backoff(timeout);
  PatientLook look(ctx, backoff);
  ProgressLine progress;
  std::optional<store::DagRunView> v;
  int64_t nodes = 0, done = 0;
  for (;;) {
    const bool looked = look([&](store::Store& s) { v = s.dags().get_dag_run(ops::dag_run_id(s, id)); });
    if (looked) {
      nodes = done = 0;
      for (const auto& [status, n] : v->counts) {
        nodes += n;
        if (model::is_final(model::parse_run_status(status))) done += n;
      }
      if (nodes > 0)
        progress.show(static_cast<double>(done) / static_cast<double>(nodes),
                      fmt::format("{} of {} nodes done, {} running{}", done, nodes,
                                  v->counts.count("running") ? v->counts.at("running") : 0,
                                  v->status == "paused" ? " (paused)" : ""));
    }
    if (looked && dag_final(v->status)) {
      progress.clear();
      if (ctx.output == "json" && report == WaitReport::with_json &&
          !print_as_shown(look, [&](store::Store& s) { return ops::dag_status(s, v->id); })) {
        std::fprintf(stderr, "jobctl: timed out reading DAG run %s (the store did not answer)\n", v->id.c_str());
        return static_cast<int>(ExitCode::timeout);
      }
      std::string failed;
      for (const auto& n : v->nodes)
        if (n.run.status != model::RunStatus::succeeded)
          failed += fmt::format("{}{} {}", failed.empty() ? "" : ", ", n.name, model::to_string(n.run.status));
      std::fprintf(stderr, "DAG run %s %s%s\n", v->id.c_str(), v->status.c_str(),
                   failed.empty() ? "" : (": " + failed).c_str());
      return v->status == "succeeded" ? 0 : static_cast<int>(ExitCode::job_failed);
    }
    if (backoff.expired()) {
      progress.clear();
      // As it stands, as for several ids: its status says how far it got.
      if (v && ctx.output == "json" && report == WaitReport::with_json)
        print_as_shown(look, [&](store::Store& s) { return ops::dag_status(s, v->id); });
      if (v)
        std::fprintf(stderr, "jobctl: timed out waiting for DAG run %s (still %s, %lld of %lld nodes done)\n",
                     v->id.c_str(), v->status.c_str(), static_cast<long long>(done), static_cast<long long>(nodes));
      else
        std::fprintf(stderr, "jobctl: timed out waiting for DAG run %s (the store did not answer)\n", id.c_str());
      return static_cast<int>(ExitCode::timeout);
    }
    backoff.sleep();
  }
}

int wait_for_job(Context& ctx, const std::string& job_id, std::optional<util::Micros> timeout, WaitReport report) {
  Backoff backoff(timeout);
  PatientLook look(ctx, backoff);
  ProgressLine progress;
  WaitingNote note(ctx);
  std::optional<model::JobView> view;
  std::vector<model::Run> runs;
  for (;;) {
    const bool looked = look([&](store::Store& s) {
      view = s.jobs().get_job(job_id);
      if (!view) throw Error(ExitCode::not_found, fmt::format("no job with id '{}'", job_id), "list jobs with `jobctl ls`");
      runs = awaited(ctx, *view);
      if (runs.size() == 1) progress.show(runs[0]);
      note.check(*view, runs, progress);
    });
    if (looked && !runs.empty() &&
        std::all_of(runs.begin(), runs.end(), [](const auto& r) { return model::is_final(r.status); })) {
      progress.clear();
      if (ctx.output == "json" && report == WaitReport::with_json &&
          !print_as_shown(look, [&](store::Store& s) { return ops::job_json(s, job_id); })) {
        std::fprintf(stderr, "jobctl: timed out reading job %s (the store did not answer)\n", job_id.c_str());
        return static_cast<int>(ExitCode::timeout);
      }
      int code = 0;
      for (const auto& run : runs) {
        std::string detail = run.error.empty() ? "" : ": " + run.error;
        std::string on = run.pinned_to.empty() ? "" : " on " + run.pinned_to;
        std::fprintf(stderr, "job %s%s %s%s\n", job_id.c_str(), on.c_str(),
                     std::string(model::to_string(run.status)).c_str(), detail.c_str());
        if (run.status != model::RunStatus::succeeded) code = static_cast<int>(ExitCode::job_failed);
      }
      return code;
    }
    if (backoff.expired()) {
      progress.clear();
      // As it stands, as for several ids; it printed nothing (a tester).
      if (view && ctx.output == "json" && report == WaitReport::with_json)
        print_as_shown(look, [&](store::Store& s) { return ops::job_json(s, job_id); });
      const std::string still = !view                ? "the store did not answer"
                                : view->latest_run ? "still " + std::string(model::to_string(view->latest_run->status))
                                                   : "still without a run";
      std::fprintf(stderr, "jobctl: timed out waiting for job %s (%s)\n", job_id.c_str(), still.c_str());
      return static_cast<int>(ExitCode::timeout);
    }
    backoff.sleep();
  }
}

}  // namespace jobctl::cli
