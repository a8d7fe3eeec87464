#include "bench/measure.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/util/error.hpp"

extern char** environ;

namespace jobctl::bench {

void put(const char* key, double value) { fmt::print("{}={:.6f}\n", key, value); }

double number(const Args& args, size_t i, const char* what) {
  try {
    size_t used = 0;
    double v = std::stod(args.at(i), &used);
    if (used == args[i].size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw usage_error(fmt::format("{}: expected a non-negative number, got '{}'", what, args.at(i)));
}
namespace {

int64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The fields of /proc/PID/stat after the command name, which may itself
// hold spaces and parentheses: field 3 (state) is element 0.
std::optional<std::vector<std::string>> stat_fields(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  if (fields.size() < 15) return std::nullopt;
  return fields;
}

double ticks(const std::string& field) {
  static const double per_second = static_cast<double>(sysconf(_SC_CLK_TCK));
  return std::strtod(field.c_str(), nullptr) / per_second;
}

constexpr size_t kPpid = 1, kUtime = 11, kStime = 12, kCutime = 13, kCstime = 14;

}  // namespace

int64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }
int64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }
double seconds_since(int64_t start) { return static_cast<double>(monotonic_ns() - start) / 1e9; }

void sleep_ms(double ms) {
  auto ns = static_cast<int64_t>(ms * 1e6);
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

pid_t start_process(const std::vector<std::string>& argv, const std::string& output) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (!output.empty()) {
    posix_spawn_file_actions_addopen(&fa, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw Error(ExitCode::usage, fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));
  return pid;
}

std::optional<Exit> wait_process(pid_t pid, milliseconds limit) {
  // glibc 2.36's <sys/pidfd.h> lacks extern "C": call the kernel directly.
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) throw Error(ExitCode::internal, fmt::format("pidfd_open({}): {}", pid, std::strerror(errno)));
  pollfd p{fd, POLLIN, 0};
  int n = 0;
  do {
    n = poll(&p, 1, static_cast<int>(limit.count()));
  } while (n < 0 && errno == EINTR);
  close(fd);
  if (n == 0) return std::nullopt;
  Exit e;
  if (wait4(pid, &e.status, 0, &e.usage) != pid)
    throw Error(ExitCode::internal, fmt::format("wait4({}): {}", pid, std::strerror(errno)));
  return e;
}

Exit stop_process(pid_t pid, milliseconds grace) {
  kill(pid, SIGTERM);
  if (auto e = wait_process(pid, grace)) return *e;
  kill(pid, SIGKILL);
  if (auto e = wait_process(pid, milliseconds(5000))) return *e;
  throw Error(ExitCode::internal, fmt::format("process {} survived SIGKILL", pid));
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return fmt::format("exit {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("signal {}", WTERMSIG(status));
  return fmt::format("status {}", status);
}

std::optional<CpuTimes> cpu_of(pid_t pid) {
  auto f = stat_fields(pid);
  if (!f) return std::nullopt;
  const auto& v = *f;
  return CpuTimes{ticks(v[kUtime]) + ticks(v[kStime]), ticks(v[kCutime]) + ticks(v[kCstime])};
}

std::optional<double> server_cpu() {
  const char* env = std::getenv("JOBCTL_BENCH_PG_PID");
  if (!env || !*env) return std::nullopt;
  std::string postmaster = env;
  // The postmaster's own and its reaped children's time, then each live
  // child's. A session reaped while /proc is read (as just after the
  // client being measured exited) would be in neither: its time is in the
  // children's total read again afterwards, so the reading is taken again
  // until that total stayed the same throughout. (Read once, a submit of
  // 100,000 jobs once showed 0.02 s of server CPU where it used 2.5 s.)
  for (int tries = 0; tries < 100; ++tries) {
    auto main = cpu_of(std::atoi(env));
    if (!main) return std::nullopt;
    double total = main->self + main->children;
    DIR* proc = opendir("/proc");
    if (!proc) return std::nullopt;
    while (dirent* d = readdir(proc)) {
      if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
      auto f = stat_fields(std::atoi(d->d_name));
      if (f && (*f)[kPpid] == postmaster) total += ticks((*f)[kUtime]) + ticks((*f)[kStime]);
    }
    closedir(proc);
    auto after = cpu_of(std::atoi(env));
    if (!after) return std::nullopt;
    if (after->children == main->children) return total;
  }
  throw Error(ExitCode::internal, "PostgreSQL's server processes kept ending while their CPU time was read");
}

double rusage_cpu(const rusage& u) {
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}


}  // namespace jobctl::bench
