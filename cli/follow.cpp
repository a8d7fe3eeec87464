#include "cli/follow.hpp"

#include <cstdio>
#include <string_view>

#include <fmt/format.h>

#include "cli/wait_display.hpp"
#include "common/ops/ids.hpp"
#include "common/ops/job_views.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"

namespace jobctl::cli {
namespace {

// One stream of one run: what of its current attempt is printed, and the
// part of a line not yet ended (when lines are prefixed).
class StreamCopy {
 public:
  StreamCopy(FILE* to, std::string prefix, const char* name) : to_(to), prefix_(std::move(prefix)), name_(name) {}

  // The attempt's tail and all it wrote so far: prints what is new.
  void update(const std::string& tail, std::optional<int64_t> bytes) {
    const int64_t total = bytes.value_or(static_cast<int64_t>(tail.size()));
    if (total <= seen_) return;
    const int64_t start = total - static_cast<int64_t>(tail.size());
    if (seen_ < start) {
      end_line();
      std::fflush(to_);
      std::fprintf(stderr, "%sjobctl: [%lld bytes of %s not kept]\n", prefix_.c_str(),
                   static_cast<long long>(start - seen_), name_);
      seen_ = start;
    }
    write(std::string_view(tail).substr(static_cast<size_t>(seen_ - start)));
    seen_ = total;
  }
  // The attempt is over: the next one starts from its first byte.
  void next_attempt() {
    end_line();
    seen_ = 0;
  }
  void end_line() {
    if (partial_.empty()) return;
    std::fprintf(to_, "%s%s\n", prefix_.c_str(), partial_.c_str());
    partial_.clear();
  }

 private:
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

  FILE* to_;
  std::string prefix_;
  const char* name_;
  int64_t seen_ = 0;
  std::string partial_;
};

struct Following {
  explicit Following(Followed f) : what(std::move(f)) {}
  Followed what;
  StreamCopy out{stdout, what.prefix, "stdout"};
  StreamCopy err{stderr, what.prefix, "stderr"};
  int attempt = 0;  // the attempt being printed
  bool done = false;
  FollowedEnd end;
};

// Prints what is new of `f`'s run; true once it is final and all printed.
// The run is read before its attempts: a final run's last attempt is
// closed in the same transaction, so its whole tail is read after it.
bool advance(Context& ctx, Following& f, const FollowOptions& options) {
  auto run = ctx.store().jobs().get_run(f.what.run_id);
  if (!run) throw Error(ExitCode::not_found, fmt::format("no run with id '{}'", f.what.run_id));
  auto attempts = ctx.store().jobs().attempts(f.what.run_id);
  for (size_t i = 0; i < attempts.size(); ++i) {
    const auto& a = attempts[i];
    if (a.number < f.attempt) continue;
    if (a.number > f.attempt) {
      if (f.attempt > 0) {
        f.out.next_attempt();
        f.err.next_attempt();
        std::fflush(stdout);
        const auto& before = attempts[i > 0 ? i - 1 : 0];
        std::fprintf(stderr, "%sjobctl: attempt %d of run %s%s%s\n", f.what.prefix.c_str(), a.number,
                     run->id.c_str(), before.error.empty() ? "" : " after: ", before.error.c_str());
      }
      f.attempt = a.number;
    }
    if (options.show_stdout) f.out.update(a.stdout_tail, a.stdout_bytes);
    if (options.show_stderr) f.err.update(a.stderr_tail, a.stderr_bytes);
  }
  f.end.run = *run;
  if (!attempts.empty()) f.end.last = attempts.back();
  if (!model::is_final(run->status) || (!attempts.empty() && !attempts.back().finished_at)) return false;
  f.out.end_line();
  f.err.end_line();
  return true;
}

}  // namespace

FollowResult follow_runs(Context& ctx, const std::vector<Followed>& runs, const FollowOptions& options,
                         std::vector<FollowedEnd>& ends) {
  std::vector<std::unique_ptr<Following>> following;
  for (const auto& r : runs) following.push_back(std::make_unique<Following>(r));
  // Output is shipped every 500 ms at most: reading more often only costs.
  Backoff backoff(options.timeout, std::chrono::milliseconds(50), std::chrono::milliseconds(250));
  ProgressLine no_progress;
  WaitingNote note(ctx);
  auto result = FollowResult::finished;
  for (;;) {
    bool all_done = true;
    std::vector<model::Run> waiting;
    for (auto& f : following) {
      if (!f->done) f->done = advance(ctx, *f, options);
      all_done = all_done && f->done;
      if (f->end.run.status == model::RunStatus::pending) waiting.push_back(f->end.run);
    }
    std::fflush(stdout);
    std::fflush(stderr);
    if (all_done) break;
    if (!options.job_id.empty() && !waiting.empty() && note.due())
      if (auto view = ctx.store().jobs().get_job(options.job_id)) note.check(*view, waiting, no_progress);
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
    ends.push_back(f->end);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  return result;
}

int report_ends(const std::vector<FollowedEnd>& ends) {
  int code = 0;
  for (const auto& e : ends) {
    if (e.run.status == model::RunStatus::succeeded) continue;
    std::string why = e.last && !e.last->error.empty() ? e.last->error : e.run.error;
    std::fprintf(stderr, "jobctl: run %s %s%s%s\n", e.run.id.c_str(), std::string(model::to_string(e.run.status)).c_str(),
                 why.empty() ? "" : ": ", why.c_str());
    code = static_cast<int>(ExitCode::job_failed);
  }
  return code;
}

std::vector<Followed> runs_to_follow(Context& ctx, const std::string& id) {
  auto r = ops::resolve_id(ctx.store(), id);
  if (r.named_run) return {Followed{r.run->id, ""}};
  std::vector<Followed> out;
  for (const auto& run : ops::per_agent_runs(ctx.store(), r.job))
    out.push_back(Followed{run.id, "[" + run.pinned_to + "] "});
  if (out.empty() && r.run) out.push_back(Followed{r.run->id, ""});
  if (out.empty())
    throw Error(ExitCode::invalid_state, fmt::format("job {} has no run to follow", r.job.job.id),
                r.job.job.spec.schedule ? "a schedule's runs are made by the leader agent as they fall due"
                                        : "");
  return out;
}

}  // namespace jobctl::cli
