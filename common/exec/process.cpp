#include "common/exec/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::exec {
namespace {

// Closes whatever it holds unless released.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

int stdin_fd(const std::string& data) {
  if (data.empty()) return open("/dev/null", O_RDONLY | O_CLOEXEC);
  int fd = memfd_create("jobctl-payload", MFD_CLOEXEC);
  if (fd < 0) return -1;
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      close(fd);
      return -1;
    }
    off += static_cast<size_t>(n);
  }
  lseek(fd, 0, SEEK_SET);
  return fd;
}

}  // namespace

Spawned spawn(const SpawnRequest& req) {
  if (!req.cwd.empty()) {
    struct stat st {};
    if (stat(req.cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw usage_error(fmt::format("working directory '{}' does not exist on this host", req.cwd));
  }
  Fd in{stdin_fd(req.stdin_data)};
  int out[2], err[2];
  if (in.fd < 0 || pipe2(out, O_CLOEXEC) != 0)
    throw Error(ExitCode::internal, fmt::format("cannot create pipes: {}", strerror(errno)));
  Fd out_r{out[0]}, out_w{out[1]};
  if (pipe2(err, O_CLOEXEC) != 0) throw Error(ExitCode::internal, fmt::format("cannot create pipes: {}", strerror(errno)));
  Fd err_r{err[0]}, err_w{err[1]};

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in.fd, 0);
  posix_spawn_file_actions_adddup2(&fa, out_w.fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_w.fd, 2);
  if (!req.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, req.cwd.c_str());

  // The agent blocks the signals it reads through signalfd; the job must
  // start with a clean mask and default handlers, in its own group.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                      POSIX_SPAWN_USEVFORK);

  std::vector<char*> argv, envp;
  for (const auto& a : req.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : req.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    if (rc == ENOENT) throw usage_error(fmt::format("command not found: {}", req.argv[0]));
    if (rc == EACCES) throw usage_error(fmt::format("permission denied: {}", req.argv[0]));
    throw usage_error(fmt::format("cannot start {}: {}", req.argv[0], strerror(rc)));
  }
  fcntl(out_r.fd, F_SETFL, O_NONBLOCK);
  fcntl(err_r.fd, F_SETFL, O_NONBLOCK);
  return Spawned{pid, out_r.release(), err_r.release()};
}

void signal_group(pid_t pgid, int sig) {
  if (pgid > 0) kill(-pgid, sig);
}

std::string describe_signal(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("killed by SIG{}", abbrev) : fmt::format("killed by signal {}", sig);
}

}  // namespace jobctl::exec
