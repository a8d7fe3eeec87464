#pragma once
// The job supervisor: a small process that jobagent forks before anything
// else (no thread, no store yet) and that is the parent of every job, so
// that no job outlives its agent.
//
// * The supervisor (S, named "jobagent-sup") is a child subreaper: what a
//   job leaves behind — a background child, a pipeline, a process that
//   called setsid or daemonised — is reparented to S when its parent ends,
//   never to init. Every process of every job stays S's descendant.
// * The agent and S talk over a SOCK_SEQPACKET socket pair, which is also
//   the lifeline: however the agent ends (kill -9, the OOM killer, a clean
//   exit), the kernel closes its end and S reads end-of-file.
// * The agent asks S to start each job: argv, environment and cwd in the
//   message (a memfd when large), the job's stdin, stdout and stderr as
//   descriptors (SCM_RIGHTS). It sends a few requests before it reads
//   their answers, so S starts one job while the agent prepares the next.
//   S starts it with exec::start_process and answers with the pid or the
//   error. S reaps its children and reports each job's wait status;
//   orphans it only reaps. The agent signals its jobs' process groups
//   itself (same user), so timeouts, cancels and drain work as before.
// * When the lifeline breaks, S sends SIGTERM to each job's process group
//   and to every descendant it finds (the ppid links in /proc/*/stat),
//   SIGKILL to every descendant left after the kill grace, again and again
//   until it has no child (or 10 s more have passed), and exits.
// * S ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT: Ctrl-C at a terminal or
//   systemd's SIGTERM is meant for the agent, whose drain lets jobs finish.
//   Only the lifeline makes it end them.
// * S keeps only its socket and stdio open (and the lock file below), plus
//   its own signalfd and the eventfd its starters wake it with.
//
// Not thread-safe; one per agent, used from the agent's loop.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/exec/process.hpp"
#include "common/util/error.hpp"

namespace jobctl::exec {

namespace detail {
struct Message;  // one datagram between the agent and S (supervisor.cpp)
}

class Supervisor {
 public:
  // Forks the supervisor. `kill_grace`: how long it waits between SIGTERM
  // and SIGKILL when the agent is gone. Also makes this process a child
  // subreaper, so that if S itself is killed its orphans come here (see
  // exits()). Throws Error(ExitCode::internal) when the fork fails, or when
  // this process already runs threads (a fork without exec is safe only
  // before any thread exists).
  explicit Supervisor(std::chrono::milliseconds kill_grace);
  // Breaks the lifeline: S ends what is still running (nothing after a
  // clean shutdown) and exits. Waits for that, at most the kill grace + 5 s;
  // once S has exited, removes the lock file (lock()), unless S had died.
  // Nothing can be started after it, and nothing more is reported; the
  // destructor ends S unless end() did.
  void end();
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Asks S to start a process (see process.hpp for what it gets) and
  // returns the request's ticket without waiting: S starts one while this
  // process makes the next request. Its answer comes from reports();
  // `stdout_r` and `stderr_r` get the read ends of its streams
  // (non-blocking, close-on-exec). The agent lets at most kWindow
  // requests wait for an answer at a time. Throws Error(ExitCode::internal)
  // when S is gone, takes no request for 10 s, or the streams cannot be
  // made.
  static constexpr size_t kWindow = 8;
  uint32_t request_spawn(const SpawnRequest& req, Fd& stdout_r, Fd& stderr_r);

  // What S reported: the answer to a request (the process started, or
  // why not), or the end of a process it started.
  struct Report {
    enum class Kind { answer, exit } kind = Kind::answer;
    uint32_t ticket = 0;           // answer: the request's
    pid_t pid = -1;                // the process (also its group); -1: an answer without one
    int status = 0;                // exit: as from waitpid
    ExitCode code = ExitCode::ok;  // an answer without a process: usage with a
    std::string error;             // user-facing reason (command not found, bad cwd), else internal
  };
  // What S reported since the last call, in the order it did (an exit
  // always after the answer naming its process), once no more than `leave`
  // requests wait for an answer (each wait bounded by 10 s). A request S
  // did not answer within 10 s of its sending, waited for or not, is
  // answered here with an internal error; S's late answer is then
  // ignored, its process killed. One S died before
  // answering is never answered (its process may have run). Once S is
  // gone and all it reported was returned, kills every process
  // it left behind (they were reparented here) and throws
  // Error(ExitCode::internal): the agent can start nothing more.
  std::vector<Report> reports(size_t leave);
  size_t unanswered() const { return waiting_.size(); }
  // When the oldest unanswered request is given up, if there is one.
  std::optional<std::chrono::steady_clock::time_point> next_give_up() const;
  // S is gone: nothing more can start.
  bool lost() const { return lost_; }

  // Readable when S has reported something (or is gone): poll it.
  int fd() const { return sock_.get(); }

  // Creates the lock file `path` (mode 0600) and takes a flock on it,
  // held by this process and by S until both are gone: while anyone holds
  // it, a process S started may still be alive (take_lock). The file stays
  // when this process dies (or S does) for a restarted agent to find.
  // Throws Error(ExitCode::internal) when it cannot be made or locked.
  void lock(const std::string& path);

  pid_t pid() const { return pid_; }

 private:
  bool receive(detail::Message& m);  // false: nothing waiting (or S is gone: lost_)
  void handle_report(const detail::Message& m);
  bool send(uint32_t kind, uint32_t seq, std::string_view text, const std::vector<int>& fds);
  size_t end_orphans();

  std::chrono::milliseconds kill_grace_;
  pid_t pid_ = -1;
  Fd sock_;
  Fd lock_;
  std::string lock_path_;
  uint32_t seq_ = 0;
  bool lost_ = false;         // S closed the socket: it died
  // end() broke the lifeline: S was ended on purpose, and reports nothing
  // more (reports() is empty then, not a death: a store answer delivered
  // after the agent's shutdown ended S reaped, and the agent exited 70
  // saying its supervisor had died).
  bool ended_ = false;
  struct Waiting {
    uint32_t seq;
    std::chrono::steady_clock::time_point give_up;  // kReplyLimit after it was sent
  };
  std::deque<Waiting> waiting_;  // requests S has not answered, oldest first
  std::vector<Report> reports_;   // not yet collected
};

// Takes the lock on a lock file another agent made (Supervisor::lock),
// waiting at most `limit` for its holders to let go; on Taken::yes `held`
// keeps it. Taken::missing: there is no such file (or it cannot be
// opened), so nothing can be known from it.
enum class Taken { yes, missing, busy };
Taken take_lock(const std::string& path, std::chrono::milliseconds limit, Fd& held);

// Every process descended from `root`, by the ppid links in /proc (a
// snapshot: processes may come and go meanwhile).
std::vector<pid_t> descendants(pid_t root);

}  // namespace jobctl::exec
