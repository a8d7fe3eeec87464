#pragma once
// Starting a job's process: posix_spawn (vfork-fast) into its own process
// group, with stdin from memory, stdout/stderr on non-blocking pipes, the
// signal mask and dispositions reset, and the working directory set.
#include <sys/types.h>

#include <string>
#include <vector>

namespace jobctl::exec {

struct SpawnRequest {
  std::vector<std::string> argv;  // argv[0] is searched in PATH
  std::vector<std::string> env;   // complete environment, "K=V"
  std::string cwd;                // empty: inherit
  std::string stdin_data;         // empty: /dev/null
};

struct Spawned {
  pid_t pid = -1;      // also the process group id
  int stdout_fd = -1;  // read ends, non-blocking, close-on-exec
  int stderr_fd = -1;
};

// Throws jobctl::Error(ExitCode::usage) with a user-facing reason when the
// process cannot start (command not found, not executable, bad cwd).
Spawned spawn(const SpawnRequest& req);

// Sends `sig` to the whole process group; a group already gone is fine.
void signal_group(pid_t pgid, int sig);

// "killed by SIGKILL" style text for a signal number.
std::string describe_signal(int sig);

}  // namespace jobctl::exec
