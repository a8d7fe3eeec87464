#pragma once
// The shell executor: the processes this agent is running right now, their
// output, their deadlines, and how each one is being ended. The job
// supervisor (common/exec/supervisor.hpp) starts them and reports their
// ends; this class signals them itself.
//
// Single-threaded by design: the agent's loop polls the descriptors this
// class exposes and calls back in. No thread per job, no lock.
#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/job_env.hpp"
#include "agent/options.hpp"
#include "common/exec/output_tail.hpp"
#include "common/exec/supervisor.hpp"
#include "common/store/agent.hpp"

namespace jobctl::agent {

using Clock = std::chrono::steady_clock;

// Why a process is being stopped before it finished by itself.
enum class Ending {
  none,     // it ran to its own exit
  timeout,  // its --timeout passed
  cancel,   // a user cancelled it
  lost,     // our lease is gone: another agent owns the run now
  drain,    // the agent is shutting down: give the run back
};

// How a webhook's request ended (agent/webhook_runner.hpp).
struct HttpResult {
  int status = 0;                         // the response's status; 0: no response
  int curl_code = 0;                      // CURLcode: 0 when a response came back
  std::string error;                      // libcurl's explanation when none did (secrets redacted)
  std::optional<int64_t> retry_after_us;  // the response's Retry-After
  model::HttpTimings timings;
  int64_t timeout_us = 0;                 // the limit the request had
};

struct Finished {
  store::ClaimedRun run;
  Ending ending = Ending::none;
  int wait_status = 0;  // as from waitpid
  std::string stdout_tail;  // a webhook: the response body's tail (secrets redacted)
  std::string stderr_tail;
  Clock::duration elapsed{};
  std::optional<HttpResult> http;  // a webhook's request
  int64_t stdout_bytes = 0;  // all it wrote (a webhook: the response body's length)
  int64_t stderr_bytes = 0;
  bool ran = true;  // false: stopped before its process started (no exit status)
};

// Whether a run that could not start fails for good (what will not change:
// command not found, missing working directory, a secret this agent lacks)
// or is retried (the agent itself failed, e.g. out of memory).
enum class Permanent { yes, no };

// A run whose process could not start, and why.
struct StartFailure {
  store::ClaimedRun run;
  std::string error;
  Permanent permanent = Permanent::yes;
};

// How often a running process's new output is shipped to the store, at
// most (jobctl logs --follow); a process that ends sooner ships none.
inline constexpr std::chrono::milliseconds kShipOutputEvery{500};

class Runner {
 public:
  // Forks the job supervisor: construct before any thread starts.
  explicit Runner(const Options& opts) : opts_(opts), supervisor_(opts.kill_grace) {}
  ~Runner();  // kills whatever still runs, then ends the supervisor

  // Starts the run's command, in turn: returns at once, never waiting for
  // the supervisor. The supervisor has up to exec::Supervisor::kWindow
  // requests at a time; the rest wait here, in order, and reap() sends
  // them as its answers come back, so the agent's loop goes on reaping,
  // reporting and claiming while a big claim starts. Returns why when the
  // run cannot start for a reason known at once (a user it may not run
  // as); the run is then not tracked. A start the supervisor refuses
  // (command not found, bad cwd), or that cannot be sent to it (it is
  // gone), comes back from start_failures().
  std::optional<std::string> start(const store::ClaimedRun& run);
  // The runs whose start the supervisor refused since the last call.
  std::vector<StartFailure> start_failures();

  // Descriptors to poll (the supervisor's, stdout and stderr of each
  // process), appended to `fds`; handle_events() reads what they have.
  void poll_fds(std::vector<pollfd>& fds);
  // Reads the output of each process whose descriptors poll() found ready.
  void handle_events(const std::vector<pollfd>& fds);
  // Collects exited processes, as the supervisor reports them, and sends
  // the supervisor the starts its answers made room for. Throws
  // Error(ExitCode::internal) once the supervisor died (every process it
  // left is killed then): the agent must stop.
  std::vector<Finished> reap();
  // Ends the runs waiting their turn without starting them: among the next
  // reap()'s, not ran (a drain gives them back).
  void unqueue(Ending why);
  // Begins ending a run: SIGTERM now and SIGKILL after the grace period,
  // or SIGKILL at once for `lost` and `immediately`. A run still waiting
  // to start never starts: it is among the next reap()'s, not ran.
  enum class Now { no, yes };
  void stop(const std::string& run_id, Ending why, Now immediately = Now::no);
  void stop_all(Ending why, Now immediately);
  // Sends due SIGTERMs (timeouts) and SIGKILLs (grace over).
  void enforce_deadlines(Clock::time_point now);
  // The earliest deadline enforce_deadlines() will act on, or reap() (a
  // start the supervisor has not answered in time).
  std::optional<Clock::time_point> next_deadline() const;

  // The output so far of each process that wrote more since it was last
  // shipped, and last shipped (or started) at least kShipOutputEvery ago;
  // each counts as shipped from now on.
  std::vector<store::LiveOutput> output_due(Clock::time_point now);
  // When output_due() will have something, if anything waits to be shipped.
  std::optional<Clock::time_point> next_output_due() const;
  // A shipment failed: these runs' output is due again.
  void ship_again(const std::vector<std::string>& run_ids);

  // This agent's lock file, held until every process of its jobs is gone
  // (exec::Supervisor::lock).
  void lock(const std::string& path) { supervisor_.lock(path); }
  // Ends every process of every job, those that left the job's process
  // group (setsid, a daemon) too, and waits for that (the kill grace and
  // 5 s at most): the supervisor's lifeline is broken. Nothing starts after.
  void end_every_process() { supervisor_.end(); }

  // The runs not started yet: waiting their turn, or sent to the supervisor.
  size_t unstarted() const { return queued_.size() + starting_.size(); }
  // The runs in hand: waiting to start, starting, or running.
  size_t size() const { return queued_.size() + starting_.size() + jobs_.size(); }
  std::string job_of(const std::string& run_id) const;  // "" when not in hand
  std::vector<std::string> run_ids() const;

 private:
  struct Job {
    store::ClaimedRun run;
    pid_t pid = -1;
    int out_fd = -1;
    int err_fd = -1;
    exec::OutputTail out;
    exec::OutputTail err;
    Clock::time_point started;
    std::optional<Clock::time_point> deadline;  // timeout
    std::optional<Clock::time_point> kill_at;   // SIGKILL after SIGTERM
    Ending ending = Ending::none;
    size_t shipped_out = 0;  // the totals of out and err at the last shipment
    size_t shipped_err = 0;
    Clock::time_point next_ship;  // kShipOutputEvery after the start, then after each shipment
    bool ship_failed = false;     // the last shipment did not reach the store
    bool unshipped() const { return ship_failed || out.total() != shipped_out || err.total() != shipped_err; }
  };

  // A start waiting for room in the supervisor's window.
  struct Queued {
    store::ClaimedRun run;
    exec::SpawnRequest request;
  };

  // A start the supervisor has still to answer.
  struct Starting {
    store::ClaimedRun run;
    exec::Fd out, err;  // the read ends of its stdout and stderr
  };

  // Sends the queued starts while the supervisor's window has room.
  void send_queued();
  // Waits for the answer to every start sent: each is running, or among
  // start_failures(). The queued are not sent.
  void settle_starts();
  // Takes what the supervisor reported (starts answered, processes ended)
  // once no more than `leave` starts wait.
  void take_reports(size_t leave);

  // A process ended: its run among finished_.
  void finish(pid_t pid, int status);
  void drain_fd(int& fd, exec::OutputTail& tail);
  void terminate(Job& job, Ending why, Now immediately);
  Job* find(const std::string& run_id);
  const Job* find(const std::string& run_id) const { return const_cast<Runner*>(this)->find(run_id); }

  const Options& opts_;
  std::optional<JobEnvironment> environment_;  // read at the first start()
  exec::Supervisor supervisor_;
  std::map<pid_t, Job> jobs_;
  std::deque<Queued> queued_;              // in the order they were claimed
  std::map<uint32_t, Starting> starting_;  // by the supervisor's ticket
  std::vector<StartFailure> failed_starts_;
  std::vector<Finished> finished_;  // ended, for the next reap()
  size_t fds_from_ = 0;             // where our part of the last poll_fds() vector begins
};

}  // namespace jobctl::agent
