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

Error pipe_error() { return Error(ExitCode::internal, fmt::format("cannot create pipes: {}", strerror(errno))); }

}  // namespace

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

int Fd::release() {
  int f = fd_;
  fd_ = -1;
  return f;
}

Stdio make_stdio(const std::string& stdin_data) {
  Stdio io;
  io.in = Fd(stdin_fd(stdin_data));
  if (io.in.get() < 0) throw pipe_error();
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw pipe_error();
  io.out_r = Fd(out[0]);
  io.out_w = Fd(out[1]);
  if (pipe2(err, O_CLOEXEC) != 0) throw pipe_error();
  io.err_r = Fd(err[0]);
  io.err_w = Fd(err[1]);
  fcntl(io.out_r.get(), F_SETFL, O_NONBLOCK);
  fcntl(io.err_r.get(), F_SETFL, O_NONBLOCK);
  return io;
}

pid_t start_process(const std::vector<std::string>& args, const std::vector<std::string>& env,
                    const std::string& cwd, int in, int out, int err) {
  if (!cwd.empty()) {
    struct stat st {};
    if (stat(cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw usage_error(fmt::format("working directory '{}' does not exist on this host", cwd));
  }
  if (args.empty()) throw usage_error("cannot start a job with an empty command");

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in, 0);
  posix_spawn_file_actions_adddup2(&fa, out, 1);
  posix_spawn_file_actions_adddup2(&fa, err, 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());

  // The agent and its supervisor block or ignore signals; the job must
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
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    if (rc == ENOENT) throw usage_error(fmt::format("command not found: {}", args[0]));
    if (rc == EACCES) throw usage_error(fmt::format("permission denied: {}", args[0]));
    throw usage_error(fmt::format("cannot start {}: {}", args[0], strerror(rc)));
  }
  return pid;
}

void signal_group(pid_t pgid, int sig) {
  if (pgid > 0) kill(-pgid, sig);
}

std::string describe_signal(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("killed by SIG{}", abbrev) : fmt::format("killed by signal {}", sig);
}

}  // namespace jobctl::exec
