#include "agent/incarnation.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "common/exec/job_groups.hpp"
#include "common/exec/supervisor.hpp"
#include "common/store/admin.hpp"
#include "common/store/agent.hpp"
#include "common/util/error.hpp"
#include "common/util/host.hpp"
#include "common/util/log.hpp"

namespace jobctl::agent {
namespace {

using util::log_event;
using util::LogLevel;

// How long a dead incarnation's supervisor may take beyond --kill-grace:
// it gives up 10 s after its SIGKILLs.
constexpr auto kSupervisorSlack = std::chrono::seconds(15);

// Whether `pid` is a zombie: dead, waiting for its parent to reap it (a
// parent that never does, or init that has not yet).
bool zombie(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  // pid (comm) state …: comm may hold blanks and parentheses, so the state
  // follows the last ')'.
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

// Alive as far as this host can tell (a pid reused since is "alive": the
// incarnation is then left to its leases). Our own pid was reused; a
// zombie is dead (kill(pid, 0) succeeds on it: an agent killed with -9
// under a parent that had not reaped it yet was "another live agent").
bool alive(int pid) {
  if (pid <= 0 || pid == getpid()) return false;
  return (kill(pid, 0) == 0 || errno == EPERM) && !zombie(pid);
}

std::string lock_path(const std::string& dir, const std::string& worker_id) {
  return dir + "/" + worker_id + ".lock";
}

// A gone incarnation's lock file nobody holds any more: litter.
void sweep(const std::string& path) {
  exec::Fd held;
  if (exec::take_lock(path, std::chrono::milliseconds(0), held) == exec::Taken::yes) unlink(path.c_str());
}

void take_over_from(store::Store& store, const Options& opts, const std::string& path, const store::Incarnation& w) {
  std::vector<std::pair<std::string, std::string>> fields{{"worker_id", w.worker_id}, {"pid", std::to_string(w.pid)}};
  exec::Fd held;
  switch (exec::take_lock(path, opts.kill_grace + kSupervisorSlack, held)) {
    case exec::Taken::missing:
      log_event(LogLevel::info, "incarnation_unknown", fields);  // its leases will expire
      return;
    case exec::Taken::busy:
      log_event(LogLevel::warn, "incarnation_busy", fields);  // its supervisor is still ending its jobs
      return;
    case exec::Taken::yes:
      break;
  }
  // Its supervisor was killed with it: what its jobs started lives on.
  // Ended before their runs go again, not beside them.
  exec::Ended ended = exec::end_job_groups(exec::read_job_groups(held.get()));
  if (ended.killed > 0) fields.emplace_back("processes_killed", std::to_string(ended.killed));
  if (ended.left > 0) fields.emplace_back("processes_left", std::to_string(ended.left));
  int runs = store.agent().give_back_runs(
      w.worker_id, fmt::format("the previous incarnation of agent {} (pid {}) died", opts.name, w.pid));
  unlink(path.c_str());
  fields.emplace_back("runs", std::to_string(runs));
  log_event(LogLevel::warn, "took_over", fields);
}

}  // namespace

std::string lock_directory() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  std::string dir = runtime && *runtime ? std::string(runtime) + "/jobagent" : fmt::format("/tmp/jobagent-{}", getuid());
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw usage_error(fmt::format("cannot create the lock directory {}: {}", dir, std::strerror(errno)),
                      "set XDG_RUNTIME_DIR to a directory of your own");
  // In /tmp anyone may have made it first: use it only if it is ours alone.
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0)
    throw usage_error(fmt::format("the lock directory {} is not a directory of this user's that only it may use", dir),
                      "remove it, or set XDG_RUNTIME_DIR to a directory of your own");
  return dir;
}

void refuse_namesakes(store::Store& store, const Options& opts, const std::string& worker_id) {
  const std::string host = util::host_name();
  for (const auto& w : store.admin().list_workers()) {
    if (w.id == worker_id || w.name != opts.name || w.state == model::WorkerState::gone) continue;
    if (w.host == host && !alive(w.pid)) continue;  // a dead incarnation of this agent
    if (w.id > worker_id) continue;                 // it registered after us: it gives way
    store.agent().set_worker_state(worker_id, model::WorkerState::gone);
    throw Error(ExitCode::invalid_state,
                fmt::format("another live agent is named '{}' (pid {} on host {})", opts.name, w.pid, w.host),
                "give this one its own --name, or stop that one first");
  }
}

void take_over(store::Store& store, Runner& runner, const Options& opts, const std::string& worker_id) {
  const std::string dir = lock_directory();
  runner.lock(lock_path(dir, worker_id));
  for (const auto& w : store.agent().incarnations(opts.name, util::host_name())) {
    if (w.worker_id == worker_id) continue;
    if (w.gone) sweep(lock_path(dir, w.worker_id));
    else if (!alive(w.pid)) take_over_from(store, opts, lock_path(dir, w.worker_id), w);
  }
}

}  // namespace jobctl::agent
