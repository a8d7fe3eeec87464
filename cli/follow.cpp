#include "cli/follow.hpp"

#include <cstdio>
#include <string_view>

#include <fmt/format.h>

#include "cli/patient_look.hpp"
#include "cli/wait_display.hpp"
#include "common/ops/run_output.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"

namespace jobctl::cli {
namespace {

// Writes one stream's bytes to `to`, each line after `prefix` (when there
// is one: then a line not yet ended waits for its end).
class StreamCopy {
 public:
  StreamCopy(FILE* to, std::string prefix) : to_(to), prefix_(std::move(prefix)) {}

  void write(std::string_view data) {
    if (prefix_.empty()) {
      std::fwrite(data.data(), 1, data.size(), to_);
      return;
    }
    partial_.append(data);
    size_t from = 0;
    for (size_t nl; (nl = partial_.find('\n', from)) != std::string::npos; from = nl + 1) {
      std::fputs(prefix_.c_str(), to_);
      std::fwrite(partial_.data() + from, 1, nl + 1 - from, to_);
    }
    partial_.erase(0, from);
  }
  void end_line() {
    if (partial_.empty()) return;
    std::fputs(prefix_.c_str(), to_);
    std::fwrite(partial_.data(), 1, partial_.size(), to_);  // a NUL byte too (printf's %s stopped at it)
    std::fputc('\n', to_);
    partial_.clear();
  }

 private:
  FILE* to_;
  std::string prefix_;
  std::string partial_;
};

struct Following {
  explicit Following(Followed f) : what(std::move(f)), output(what.run_id) {}
  Followed what;
  ops::RunOutput output;
  StreamCopy out{stdout, what.prefix};
  StreamCopy err{stderr, what.prefix};
};

// Prints what is new of `f`'s run; true once it has ended.
void advance(Context& ctx, Following& f, const FollowOptions& options) {
  for (const auto& e : f.output.poll(ctx.store())) {
    const bool out = e.stream == ops::Stream::out;
    switch (e.kind) {
      case ops::OutputEvent::Kind::output:
        if (out ? options.show_stdout : options.show_stderr) (out ? f.out : f.err).write(e.data);
        break;
      case ops::OutputEvent::Kind::gap:
        if (!(out ? options.show_stdout : options.show_stderr)) break;
        (out ? f.out : f.err).end_line();
        std::fflush(stdout);
        std::fprintf(stderr, "%sjobctl: [%lld bytes of %s not kept]\n", f.what.prefix.c_str(),
                     static_cast<long long>(e.bytes), out ? "stdout" : "stderr");
        break;
      case ops::OutputEvent::Kind::attempt:
        f.out.end_line();
        f.err.end_line();
        std::fflush(stdout);
        std::fprintf(stderr, "%sjobctl: attempt %d of run %s%s%s\n", f.what.prefix.c_str(), e.attempt,
                     f.what.run_id.c_str(), e.after.empty() ? "" : " after: ", e.after.c_str());
        break;
      case ops::OutputEvent::Kind::end:
        f.out.end_line();
        f.err.end_line();
        break;
    }
  }
}

FollowedEnd end_of(const Following& f) {
  return FollowedEnd{f.output.run().value_or(model::Run{}), f.output.last()};
}

}  // namespace

FollowResult follow_runs(Context& ctx, const std::string& id, const FollowOptions& options,
                         std::vector<FollowedEnd>& ends) {
  std::vector<std::unique_ptr<Following>> following;
  bool listed = false;
  // Output is shipped every 500 ms at most: reading more often only costs.
  Backoff backoff(options.timeout, std::chrono::milliseconds(50), std::chrono::milliseconds(250));
  PatientLook look(ctx, backoff, options.interrupted);
  ProgressLine no_progress;
  WaitingNote note(ctx);
  auto result = FollowResult::finished;
  for (;;) {
    bool all_done = false;
    // A look that fails half way is made again: what was printed is not
    // printed twice (each run's output goes on from where it is).
    const bool looked = look([&](store::Store& s) {
      // Which runs: the first look's, so that a signal stops it too.
      if (!listed) {
        for (const auto& r : ops::runs_to_follow(s, id)) {
          const std::string prefix = r.agent.empty() ? "" : "[" + r.agent + "] ";
          following.push_back(std::make_unique<Following>(Followed{r.run_id, prefix}));
        }
        listed = true;
      }
      all_done = true;
      std::vector<model::Run> waiting;
      for (auto& f : following) {
        if (!f->output.ended()) advance(ctx, *f, options);
        all_done = all_done && f->output.ended();
        if (f->output.run() && f->output.run()->status == model::RunStatus::pending) waiting.push_back(*f->output.run());
      }
      std::fflush(stdout);
      std::fflush(stderr);
      if (!all_done && !options.job_id.empty() && !waiting.empty() && note.due())
        if (auto view = s.jobs().get_job(options.job_id)) note.check(*view, waiting, no_progress);
    });
    if (looked && all_done) break;
    if (backoff.expired()) {
      result = FollowResult::timed_out;
      break;
    }
    if (!options.go_on()) {
      result = FollowResult::stopped;
      break;
    }
    backoff.sleep();
  }
  ends.clear();
  for (auto& f : following) {
    f->out.end_line();
    f->err.end_line();
    ends.push_back(end_of(*f));
  }
  std::fflush(stdout);
  std::fflush(stderr);
  return result;
}

int report_ends(const std::vector<FollowedEnd>& ends) {
  int code = 0;
  for (const auto& e : ends) {
    if (e.run.status == model::RunStatus::succeeded) continue;
    // The run's error says why it ended (poison, retries exhausted); its
    // last attempt's, what befell that attempt.
    std::string why = e.run.error.empty() && e.last ? e.last->error : e.run.error;
    std::fprintf(stderr, "jobctl: run %s %s%s%s\n", e.run.id.c_str(), std::string(model::to_string(e.run.status)).c_str(),
                 why.empty() ? "" : ": ", why.c_str());
    code = static_cast<int>(ExitCode::job_failed);
  }
  return code;
}

}  // namespace jobctl::cli
