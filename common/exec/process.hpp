#pragma once
// Starting a job's process, in two halves that run in two processes: the
// agent makes the job's standard streams (stdin from memory, stdout and
// stderr on pipes whose read ends it keeps), and its supervisor
// (exec/supervisor.hpp) starts the command with them: a vfork into its own
// process group, the signal mask and the dispositions the supervisor
// ignores reset, the working directory set. A job that runs as
// another user is forked instead, and drops to that user's ids and groups
// for good before its working directory is set and it executes.
#include <sys/types.h>

#include <string>
#include <vector>

namespace jobctl::exec {

struct SpawnRequest {
  std::vector<std::string> argv;  // argv[0] is searched in PATH
  std::vector<std::string> env;   // complete environment, "K=V"
  std::string cwd;                // empty: inherit
  std::string stdin_data;         // empty: /dev/null
  std::string user;               // empty: as this process's user; else that user, with its groups
};

struct Spawned {
  pid_t pid = -1;      // also the process group id
  int stdout_fd = -1;  // read ends, non-blocking, close-on-exec
  int stderr_fd = -1;
};

// Closes what it holds unless released.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  int release();

 private:
  int fd_ = -1;
};

// A job's standard streams: the child's ends (stdin, stdout's and stderr's
// write ends) and the parent's (the read ends, non-blocking). All
// close-on-exec; the spawn makes the child's ends its 0, 1 and 2.
struct Stdio {
  Fd in, out_w, err_w;
  Fd out_r, err_r;
};

// Throws Error(ExitCode::internal) when the system refuses a memfd or a pipe.
Stdio make_stdio(const std::string& stdin_data);

// Starts `argv` in a new process group (its pid) with `in`, `out` and `err`
// as descriptors 0, 1 and 2, and default signal handling. With a `user`,
// the process has that user's uid and gid (real, effective and saved) and
// its groups, and HOME, USER, LOGNAME and SHELL from its passwd entry
// unless `env` sets them (a fork whose child makes only system calls, no
// allocation and no lock, so also from a thread).
// Throws jobctl::Error(ExitCode::usage) with a user-facing reason when the
// process cannot start (command not found, not executable, bad cwd, no
// such user, no right to switch to it).
pid_t start_process(const std::vector<std::string>& argv, std::vector<std::string> env, const std::string& cwd,
                    const std::string& user, int in, int out, int err);

// Sends `sig` to the whole process group; a group already gone is fine.
void signal_group(pid_t pgid, int sig);

// "killed by SIGKILL" style text for a signal number.
std::string describe_signal(int sig);

}  // namespace jobctl::exec
