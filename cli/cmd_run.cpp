// jobctl run: a job submitted, its output streamed live, and its own exit
// status as ours, for CI steps and scripts.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/follow.hpp"
#include "cli/job_flags.hpp"
#include "cli/standard_streams.hpp"
#include "common/jobdef/fields.hpp"
#include "common/ops/job_actions.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::cli {
namespace {

volatile sig_atomic_t interrupts = 0;
volatile sig_atomic_t first_interrupt = 0;  // the first signal's number
volatile sig_atomic_t cancel_state = 0;     // CancelState
enum CancelState : sig_atomic_t { kNotYet = 0, kCancelling = 1, kCancelled = 2 };
// What the handler says as it detaches (it may not format): a note for a
// cancel that went through, and one for a cancel still waiting on the store.
char detached_note[2][256];
size_t detached_length[2];

extern "C" void on_interrupt(int sig) {
  if (interrupts == 0) first_interrupt = sig;
  interrupts = interrupts + 1;
  // A signal after the cancel was sent detaches at once, wherever the
  // command waits (a store that does not answer). One before it is the
  // loop's to act on: the cancel goes first, however fast the second came.
  if (cancel_state == kNotYet) return;
  const int which = cancel_state == kCancelled ? 0 : 1;
  (void)!write(STDERR_FILENO, detached_note[which], detached_length[which]);
  _exit(128 + first_interrupt);
}

// Ctrl-C (SIGINT), or SIGTERM or SIGHUP (a CI runner cancelling the
// step, a closed terminal), or SIGPIPE (the reader of the output is gone,
// as `| head` goes), while the job runs: the first cancels the job (and we
// go on printing its output until it ends), the next detaches.
// Restores the earlier dispositions when done.
class InterruptToCancel {
 public:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

  explicit InterruptToCancel(const std::string& job_id) {
    interrupts = 0;
    first_interrupt = 0;
    cancel_state = kNotYet;
    note(0, fmt::format("jobctl: detached; job {} was asked to stop (jobctl logs -f {} follows it)\n", job_id, job_id));
    note(1, fmt::format("jobctl: detached; job {} may still run: its cancel was not answered (jobctl cancel {})\n",
                        job_id, job_id));
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    // No SA_RESTART: a wait for the store wakes up to the signal.
    // A signal ignored already stays ignored: nohup's SIGHUP is not a cancel.
    for (size_t i = 0; i < std::size(kSignals); ++i) {
      sigaction(kSignals[i], nullptr, &before_[i]);
      if (before_[i].sa_handler != SIG_IGN) sigaction(kSignals[i], &sa, nullptr);
    }
  }
  ~InterruptToCancel() {
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &before_[i], nullptr);
  }
  InterruptToCancel(const InterruptToCancel&) = delete;
  InterruptToCancel& operator=(const InterruptToCancel&) = delete;

  int count() const { return interrupts; }
  // A signal came that the loop has not acted on.
  bool pending() const { return interrupts > 0 && cancel_state == kNotYet; }
  // The first signal: what jobctl exits with (128 + it) and names.
  int first() const { return first_interrupt; }
  // Around the cancel: a signal meanwhile detaches (the cancel may wait
  // for a store that does not answer), saying whether it went through.
  // True when a signal came that the loop has not acted on: the cancel is
  // under way from now. The signals wait meanwhile: one that came between
  // the test and the change was counted and ignored, and the cancel then
  // waited out a frozen store.
  bool start_cancelling() {
    sigset_t ours, was;
    sigemptyset(&ours);
    for (int sig : kSignals) sigaddset(&ours, sig);
    pthread_sigmask(SIG_BLOCK, &ours, &was);
    const bool now = pending();
    if (now) cancel_state = kCancelling;
    pthread_sigmask(SIG_SETMASK, &was, nullptr);
    return now;
  }
  void cancelled() { cancel_state = kCancelled; }

 private:
  static void note(int which, const std::string& text) {
    detached_length[which] = std::min(text.size(), sizeof detached_note[which]);
    std::memcpy(detached_note[which], text.data(), detached_length[which]);
  }

  struct sigaction before_[std::size(kSignals)] {};
};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE (the output's reader is gone)";
    default: return "Ctrl-C";
  }
}

// A run's end as a process's exit status, as timeout(1) and the shell
// give it: the command's own code, 124 when its --timeout stopped it,
// 128+N when signal N ended it, 1 when it never ran or failed otherwise.
int exit_status_of(const FollowedEnd& e) {
  if (e.run.status == model::RunStatus::succeeded) return 0;
  if (!e.last) return static_cast<int>(ExitCode::job_failed);
  const auto& a = *e.last;
  if (a.error.rfind(model::kTimedOutAfter, 0) == 0) return static_cast<int>(ExitCode::timeout);
  if (a.exit_code && *a.exit_code != 0) return *a.exit_code;
  if (a.signal) return 128 + *a.signal;
  return static_cast<int>(ExitCode::job_failed);
}

struct RunFlags {
  std::vector<std::string> command;
  std::unique_ptr<JobFlags> job;
};

}  // namespace

void register_run(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<RunFlags>();
  auto* cmd = app.add_subcommand(
      "run", "Run a command as a job, stream its output and exit with its status: jobctl run [options] -- CMD [ARGS...]");
  cmd->footer("Takes every flag of submit but --cron. stdout and stderr are the job's own, as its agent ships them.\n"
              "Exit status: the job's exit code; 124 when its --timeout stopped it; 128+N for signal N; 1 when it\n"
              "never ran or failed otherwise; 130 after Ctrl-C (143 after SIGTERM, 129 after SIGHUP). With --on-each,\n"
              "lines are prefixed [agent] and the status is the highest. The first Ctrl-C, SIGTERM or SIGHUP\n"
              "cancels the job (a CI runner cancelling the step cancels it), a second one detaches; so does SIGPIPE\n"
              "(| head), exit 141.\n"
              "In CI: jobctl run --queue build --timeout 20m -- make test");
  completes(cmd->add_option("command", f->command, "The command to run"), Completes::command);
  f->job = std::make_unique<JobFlags>(*cmd, jobdef::kSubmit);
  cmd->callback([f, &ctx] {
    if (f->job->given("--cron"))
      throw usage_error("jobctl run runs a job once; a schedule (--cron) has no end to wait for",
                        "submit a schedule with jobctl submit --cron");
    if (ctx.output == "json")
      throw usage_error("jobctl run prints the job's own output, not JSON",
                        "leave out -o json; jobctl submit --wait -o json prints the job");
    auto spec = spec_from_flags(f->command, *f->job);
    auto results = ctx.store().jobs().submit({spec});
    const std::string job_id = results.at(0).job_id;
    if (results[0].existed)
      std::fprintf(stderr, "jobctl: job %s already exists with idempotency key '%s'; following it\n", job_id.c_str(),
                   util::one_line(spec.idempotency_key).c_str());
    else if (isatty(STDERR_FILENO) == 1)
      std::fprintf(stderr, "jobctl: job %s\n", job_id.c_str());

    // (Installed after the submit, so that Ctrl-C still ends a submit the
    // store does not answer.)
    InterruptToCancel interrupt(job_id);
    bool cancelled = false;
    FollowOptions options;
    options.job_id = job_id;
    options.interrupted = [&] { return interrupt.pending(); };
    options.go_on = [&] {
      if (!interrupt.start_cancelling()) return true;
      cancelled = true;
      std::fprintf(stderr, "jobctl: %s: cancelling job %s (%s again to stop waiting for it)\n",
                   signal_name(interrupt.first()), job_id.c_str(), interrupt.first() == SIGINT ? "Ctrl-C" : "a signal");
      try {
        ops::cancel_job(ctx.store(), job_id);
      } catch (const Error& e) {
        if (e.code() != ExitCode::invalid_state) throw;  // it has just ended: nothing to cancel
      }
      interrupt.cancelled();
      if (interrupt.count() >= 2) {  // the next came before the cancel
        std::fwrite(detached_note[0], 1, detached_length[0], stderr);
        return false;
      }
      return true;
    };
    std::vector<FollowedEnd> ends;
    output_on_stderr();  // the job's stderr is printed there
    follow_runs(ctx, job_id, options, ends);
    if (cancelled) {
      ctx.exit_code = 128 + interrupt.first();
      return;
    }
    int worst = 0;
    for (const auto& e : ends) worst = std::max(worst, exit_status_of(e));
    if (worst != 0) report_ends(ends);
    ctx.exit_code = worst;
  });
}

}  // namespace jobctl::cli
