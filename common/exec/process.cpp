#include "common/exec/process.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::exec {
namespace {

// /dev/null is opened once (again after a failure, such as EMFILE): each
// job's empty stdin is a copy of it (a dup, not a path lookup per job).
int stdin_fd(const std::string& data) {
  static int dev_null = -1;
  if (data.empty() && dev_null < 0) dev_null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (data.empty()) return dev_null < 0 ? -1 : fcntl(dev_null, F_DUPFD_CLOEXEC, 0);
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

// The signals the agent and its supervisor block or ignore: a job starts
// with each at its default, and nothing blocked.
constexpr int kResetSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2};

Error start_error(const std::string& program, int error) {
  if (error == ENOENT) return usage_error(fmt::format("command not found: {}", program));
  if (error == EACCES) return usage_error(fmt::format("permission denied: {}", program));
  return usage_error(fmt::format("cannot start {}: {}", program, strerror(error)));
}

// A user to become: its ids, groups and passwd entry's home and shell.
struct Account {
  std::string name, home, shell;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

Account find_account(const std::string& user) {
  std::vector<char> buf(16384);
  passwd pw{}, *found = nullptr;
  int rc;
  while ((rc = getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found)) == ERANGE && buf.size() < (1 << 20))
    buf.resize(buf.size() * 4);
  if (rc != 0)
    throw usage_error(fmt::format("cannot look up user '{}' on this host: {}", user, strerror(rc)));
  if (!found) throw usage_error(fmt::format("no user '{}' on this host", user), "create it, or submit with another --user");
  Account a{pw.pw_name, pw.pw_dir ? pw.pw_dir : "/", pw.pw_shell ? pw.pw_shell : "/bin/sh", pw.pw_uid, pw.pw_gid, {}};
  int n = 64;
  for (;;) {
    a.groups.resize(static_cast<size_t>(n));
    int want = n;
    if (getgrouplist(a.name.c_str(), a.gid, a.groups.data(), &want) >= 0) {
      a.groups.resize(static_cast<size_t>(want));
      break;
    }
    if (want <= n || n > 65536) throw usage_error(fmt::format("cannot list the groups of user '{}'", user));
    n = want;
  }
  return a;
}

// Why the child could not become the job: which step failed, and errno.
struct ChildFailure {
  int step = 0;  // kStep*
  int error = 0;
};
enum : int { kStepSetup = 1, kStepGroups = 2, kStepIds = 3, kStepCwd = 4, kStepExec = 5 };

// How the child tells its parent: after a fork, through a pipe whose end
// of file (closed by the exec) means success; after a vfork, in the
// parent's memory, which the child shares until it executes.
struct FailureReport {
  int pipe = -1;
  volatile ChildFailure* shared = nullptr;  // volatile: the parent reads it after vfork returns
};

[[noreturn]] void child_failed(const FailureReport& report, int step) {
  ChildFailure f{step, errno};
  if (report.shared) {
    report.shared->error = f.error;
    report.shared->step = f.step;
  } else {
    ssize_t ignored = write(report.pipe, &f, sizeof f);
    (void)ignored;
  }
  _exit(127);
}

// The child's part: system calls only from here on (no allocation, no
// lock), and after a vfork nothing that writes the parent's memory but the
// failure (and errno, which the parent reads only when the vfork failed).
// With an `account`, it drops to that user for good. Never returns.
// `parent` is the supervisor: killed with its agent (kill -9 of every
// jobagent process), it takes the job's own process with it.
[[noreturn]] void become(const Account* account, const char* cwd, char* const argv[], char* const envp[], int in,
                         int out, int err, const FailureReport& report, pid_t parent) {
  auto fail = [&report](int step) { child_failed(report, step); };
  if (setpgid(0, 0) != 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) fail(kStepSetup);
  // The supervisor has no handler (supervisor.cpp makes sure of it), so
  // resetting what it and the agent block or ignore is enough.
  for (int s : kResetSignals) signal(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (account) {
    // Groups, then the gid, then the uid, all three of each: nothing of the
    // supervisor's ids or groups is left to take back.
    if (setgroups(account->groups.size(), account->groups.data()) != 0) fail(kStepGroups);
    if (setresgid(account->gid, account->gid, account->gid) != 0) fail(kStepIds);
    if (setresuid(account->uid, account->uid, account->uid) != 0) fail(kStepIds);
  }
  // After the ids change, which clears it. Its processes live on (a
  // supervisor killed with SIGKILL ends nothing), and ran beside the
  // rescue of their run (a tester): jobagent(8), FAILURE MODES.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) fail(kStepSetup);
  if (*cwd && chdir(cwd) != 0) fail(kStepCwd);
  execvpe(argv[0], argv, envp);
  child_failed(report, kStepExec);
}

// The NULL-ended array of C strings execve takes, pointing into `strings`.
std::vector<char*> exec_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Sets NAME to `value` in `env` unless it is there.
void default_variable(std::vector<std::string>& env, const std::string& name, const std::string& value) {
  for (const auto& e : env)
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') return;
  env.push_back(name + "=" + value);
}

pid_t start_as(const Account& a, const std::vector<std::string>& args, std::vector<std::string> env,
               const std::string& cwd, int in, int out, int err) {
  default_variable(env, "HOME", a.home);
  default_variable(env, "USER", a.name);
  default_variable(env, "LOGNAME", a.name);
  default_variable(env, "SHELL", a.shell);
  auto argv = exec_strings(args), envp = exec_strings(env);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) throw pipe_error();
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(report[0]);
    close(report[1]);
    throw Error(ExitCode::internal, fmt::format("cannot fork a job: {}", strerror(e)));
  }
  if (pid == 0) {
    close(report[0]);
    become(&a, cwd.c_str(), argv.data(), envp.data(), in, out, err, FailureReport{report[1], nullptr}, parent);
  }
  close(report[1]);
  // The exec closes the pipe: end of file is success.
  ChildFailure f;
  ssize_t n;
  do n = read(report[0], &f, sizeof f);
  while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n <= 0) return pid;
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  switch (f.step) {
    case kStepGroups:
    case kStepIds:
      throw usage_error(fmt::format("cannot run as user '{}': {}", a.name, strerror(f.error)),
                        "jobagent must run as root (or with CAP_SETUID, CAP_SETGID and CAP_KILL) to run jobs as another "
                        "user");
    case kStepSetup:
      throw Error(ExitCode::internal, fmt::format("cannot set up a job's process group and streams: {}",
                                                  strerror(f.error)));
    case kStepCwd:
      throw usage_error(fmt::format("working directory '{}' is not usable by user '{}': {}", cwd, a.name,
                                    strerror(f.error)));
    default:
      throw start_error(args[0], f.error);
  }
}

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

pid_t start_process(const std::vector<std::string>& args, std::vector<std::string> env, const std::string& cwd,
                    const std::string& user, int in, int out, int err) {
  if (args.empty()) throw usage_error("cannot start a job with an empty command");
  // Another user's job finds its directory as that user (its chdir says
  // why it cannot): this process must not look for it on its behalf.
  if (!user.empty()) return start_as(find_account(user), args, std::move(env), cwd, in, out, err);
  if (!cwd.empty()) {
    struct stat st {};
    if (stat(cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw usage_error(fmt::format("working directory '{}' does not exist on this host", cwd));
  }

  auto argv = exec_strings(args), envp = exec_strings(env);

  // A vfork: this thread waits until the child executes, and the child
  // uses this thread's stack meanwhile, so nothing is copied or mapped for
  // it. posix_spawn did the same, plus a stack mapped and unmapped each
  // time and a sigaction for each of the 64 signals in the child (a tenth
  // of the supervisor's CPU in a flood of `true` jobs). All signals stay
  // blocked until the child has reset what it must (become()).
  volatile ChildFailure failure;
  sigset_t all, was;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &was);
  const pid_t parent = getpid();
  pid_t pid = vfork();
  if (pid == 0)
    become(nullptr, cwd.c_str(), argv.data(), envp.data(), in, out, err, FailureReport{-1, &failure}, parent);
  const int fork_error = errno;
  pthread_sigmask(SIG_SETMASK, &was, nullptr);
  if (pid < 0)
    throw Error(ExitCode::internal,
                fmt::format("cannot start a job: {}; this host is out of processes or memory (see ulimit -u and "
                            "kernel.pid_max), and the run is tried again later",
                            strerror(fork_error)));
  if (failure.step == 0) return pid;
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (failure.step == kStepSetup)
    throw Error(ExitCode::internal,
                fmt::format("cannot set up a job's process group and streams: {}", strerror(failure.error)));
  throw start_error(args[0], failure.error);
}

void signal_group(pid_t pgid, int sig) {
  if (pgid > 0) kill(-pgid, sig);
}

std::string describe_signal(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("killed by SIG{}", abbrev) : fmt::format("killed by signal {}", sig);
}

}  // namespace jobctl::exec
