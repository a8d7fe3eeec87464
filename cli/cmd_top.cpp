// jobctl top: stats, workers and recent failures, redrawn in place until q
// or Ctrl-C. It takes the terminal's alternate screen and gives it back as
// it found it, whatever ends it.
#include <poll.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "cli/context.hpp"
#include "cli/health_tables.hpp"
#include "common/ops/health.hpp"
#include "cli/output.hpp"
#include "common/store/admin.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/time.hpp"

namespace jobctl::cli {
namespace {

// What a signal handler needs to give the terminal back: it may arrive
// while a store call hangs, so it restores and exits by itself, with
// async-signal-safe calls only.
termios g_saved{};
volatile sig_atomic_t g_have_saved = 0;
constexpr char kLeave[] = "\033[?25h\033[?1049l";

void on_signal(int sig) {
  (void)!write(STDOUT_FILENO, kLeave, sizeof kLeave - 1);
  if (g_have_saved) tcsetattr(STDIN_FILENO, TCSANOW, &g_saved);
  _exit(128 + sig);
}

// The terminal in raw-ish mode (keys without Enter, no echo) on the
// alternate screen with the cursor hidden; restored by the destructor.
class Screen {
 public:
  Screen() {
    if (tcgetattr(STDIN_FILENO, &saved_) == 0) {
      g_saved = saved_;
      g_have_saved = 1;
      termios raw = saved_;
      raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      restore_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    std::fputs("\033[?1049h\033[?25l", stdout);
    std::fflush(stdout);
  }
  ~Screen() {
    std::fwrite(kLeave, 1, sizeof kLeave - 1, stdout);
    std::fflush(stdout);
    if (restore_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
    g_have_saved = 0;
  }
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

 private:
  termios saved_{};
  bool restore_ = false;
};

struct TopFlags {
  std::string interval = "2s", since = "15m";
  bool once = false;
};

void draw(Context& ctx, const TopFlags& f, int64_t window_us) {
  // Each frame reads the SQLite file the path names now, not one deleted
  // or replaced since the last (an operator reset or restored the store).
  ctx.forget_if_replaced();
  store::StatsFilter filter;
  filter.window_us = window_us;
  auto stats = ctx.store().admin().stats(filter);
  auto workers = ctx.store().admin().list_workers();
  auto paused = ops::paused_queues(ctx.store());
  auto failures = ctx.store().admin().recent_failures(8, window_us);
  int64_t now = util::now_micros();
  std::printf("jobctl top  %s  (every %s%s)\n\n", util::format_time(now).c_str(), f.interval.c_str(),
              f.once ? "" : "; q quits");
  std::printf("QUEUES, over the last %s\n", util::format_duration(util::Micros(window_us)).c_str());
  print_stats_table(stats, ops::agents_by_queue(workers), paused);
  std::printf("\nWORKERS\n");
  std::erase_if(workers, [](const model::Worker& w) { return w.state == model::WorkerState::gone; });
  print_workers_table(workers);
  std::printf("\nRECENT FAILURES\n");
  std::vector<TableRow> rows;
  for (const auto& a : failures)
    rows.push_back({util::format_age(a.finished_at, now), a.job_id, cell(a.job_name, 24), a.queue,
                    std::to_string(a.attempt), cell(a.error, 70)});
  print_table({"WHEN", "JOB", "NAME", "QUEUE", "ATTEMPT", "ERROR"}, rows);
}

}  // namespace

void register_top(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<TopFlags>();
  auto* cmd = app.add_subcommand("top", "A live view of queues, workers and recent failures (q or Ctrl-C quits)");
  cmd->add_option("--interval", f->interval, "Time between redraws")->capture_default_str();
  cmd->add_option("--since", f->since, "The window of the queue figures (as jobctl stats --since)")->capture_default_str();
  cmd->add_flag("--once", f->once, "Print one frame and exit (no terminal needed)");
  cmd->callback([f, &ctx] {
    auto interval = util::parse_duration(f->interval, "--interval");
    if (interval < util::Micros(100'000)) throw usage_error("--interval must be at least 100ms", "e.g. --interval 2s");
    int64_t window = ops::window_of(f->since);
    if (f->once) {
      draw(ctx, *f, window);
      return;
    }
    if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
      throw usage_error("jobctl top needs a terminal", "use `jobctl top --once` or `jobctl stats` in scripts");
    struct sigaction sa{};
    sa.sa_handler = on_signal;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
    signal(SIGTSTP, SIG_IGN);  // a suspended top would leave the shell on the alternate screen
    Screen screen;
    bool answered = false;
    for (;;) {
      std::fputs("\033[H\033[2J", stdout);
      try {
        draw(ctx, *f, window);
        answered = true;
      } catch (const Error& e) {
        // A store that answered and then fails (a restart, a failover, its
        // SQLite file deleted and not made again yet) is said on the
        // screen, and the next frame looks again on a new connection,
        // until q. One that fails the first frame is an error (exit 5).
        if (e.code() != ExitCode::store || !answered) throw;
        ctx.drop_store();
        std::printf("jobctl top  %s  (every %s; q quits)\n\nthe store does not answer: %s\ntrying again\n",
                    util::format_time(util::now_micros()).c_str(), f->interval.c_str(), e.what());
      }
      std::fflush(stdout);
      pollfd in{STDIN_FILENO, POLLIN, 0};
      if (poll(&in, 1, static_cast<int>(interval.count() / 1000)) > 0) {
        if (in.revents & (POLLHUP | POLLERR)) break;  // the terminal went away
        char key = 0;
        if (read(STDIN_FILENO, &key, 1) == 1 && (key == 'q' || key == 'Q')) break;
      }
    }
  });
}

}  // namespace jobctl::cli
