#pragma once
// jobagent's main loop: claim → execute → complete, with heartbeats,
// rescue of dead agents' runs, and a graceful drain on SIGTERM.
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/util/error.hpp"
#include "common/util/log.hpp"

#include "agent/metrics.hpp"
#include "agent/metrics_server.hpp"
#include "agent/options.hpp"
#include "agent/runner.hpp"
#include "agent/secrets.hpp"
#include "agent/systemd.hpp"
#include "agent/webhook_runner.hpp"
#include "common/store/store.hpp"
#include "common/store/wakeups.hpp"

namespace jobctl::agent {

class Agent {
 public:
  // Opens the store, checks its schema and registers this worker. Throws
  // jobctl::Error when the store is unreachable or its schema is not current.
  explicit Agent(Options opts);
  ~Agent();

  // Runs until drained (first SIGTERM/SIGINT) or stopped (second one).
  // Returns the process exit code.
  int run();

 private:
  enum class Phase { running, draining, stopping };

  void handle_signals();
  void collect_finished();
  void flush_reports();
  void heartbeat_if_due(Clock::time_point now);
  void heartbeat();
  void claim_if_free(Clock::time_point now);
  // The scheduler leader's duties (agent/scheduling.cpp).
  void lead_if_due(Clock::time_point now);
  void schedule_if_due(Clock::time_point now);
  void gc_if_due(Clock::time_point now);
  void wait_for_events(Clock::time_point now);
  void shut_down();
  int free_slots() const;
  // Over both executors: processes (runner_) and webhooks (webhooks_).
  size_t running() const { return runner_.size() + webhooks_.size(); }
  std::vector<std::string> running_ids() const;
  void stop_run(const std::string& run_id, Ending why);
  void stop_all_runs(Ending why, Runner::Now immediately);
  void reload_secrets();
  // The metrics as of now (gauges refreshed), and the --metrics-file.
  std::string render_metrics();
  void write_metrics_file();
  // A finished attempt, counted by its queue.
  void count_finished(const Finished& f, const store::Completion& c);
  // Runs a store step; on a store error logs it, backs off and reports
  // false, so a database restart is survived rather than fatal.
  template <typename Fn>
  bool with_store(const char* step, Fn&& fn);

  Options opts_;
  config::Dsn dsn_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::Wakeups> wakeups_;
  Runner runner_;
  Secrets secrets_;
  WebhookRunner webhooks_;
  Metrics metrics_;
  std::unique_ptr<MetricsServer> metrics_server_;  // --metrics
  SystemdNotifier systemd_;
  std::string worker_id_;
  int signal_fd_ = -1;
  Phase phase_ = Phase::running;
  Clock::time_point drain_deadline_{};
  Clock::time_point next_heartbeat_{};
  Clock::time_point next_claim_{};        // when a due run or the poll fallback wants a claim
  Clock::time_point last_cancel_check_{};
  Clock::time_point store_backoff_until_{};
  bool claim_wanted_ = true;
  std::optional<int64_t> epoch_;          // set while this agent is the scheduler leader
  Clock::time_point next_lead_{};         // next take-or-renew of the leader lease
  Clock::time_point next_schedule_{};     // next materialisation, while leading
  Clock::time_point next_gc_{};           // next history retention pass, while leading
  std::map<std::string, Clock::time_point> schedule_errors_;  // last logged, per message
  std::vector<store::Completion> completions_;  // finished, not yet recorded
  std::vector<store::Completion> releases_;     // given back on drain, not yet recorded
  std::mt19937_64 rng_{std::random_device{}()};  // backoff jitter
};

template <typename Fn>
inline bool Agent::with_store(const char* step, Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const Error& e) {
    ++metrics_.store_errors[step];
    util::log_event(util::LogLevel::error, "store_error", {{"step", step}, {"error", e.what()}});
    store_backoff_until_ = Clock::now() + std::chrono::seconds(1);
    return false;
  }
}

}  // namespace jobctl::agent
