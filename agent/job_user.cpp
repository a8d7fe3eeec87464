#include "agent/job_user.hpp"

#include <linux/capability.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "common/model/job_json.hpp"
#include "common/util/error.hpp"
#include "common/util/strings.hpp"

namespace jobctl::agent {
namespace {

bool user_exists(const std::string& name) { return getpwnam(name.c_str()) != nullptr; }

std::string own_user() {
  const passwd* pw = getpwuid(geteuid());
  return pw ? pw->pw_name : std::to_string(geteuid());
}

// Whether this process may become another user and signal its processes:
// the effective capabilities CAP_SETGID (6), CAP_SETUID (7) and CAP_KILL (5).
bool may_switch_users() {
  if (geteuid() == 0) return true;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    const unsigned long long caps = std::stoull(line.substr(7), nullptr, 16);
    const unsigned long long needed = (1ULL << 5) | (1ULL << 6) | (1ULL << 7);
    return (caps & needed) == needed;
  }
  return false;
}

std::string joined(const std::vector<std::string>& users) {
  std::string out;
  for (const auto& u : users) out += (out.empty() ? "" : ",") + u;
  return out;
}

}  // namespace

void keep_capabilities_from_jobs() {
  // Ambient capabilities survive execve, and a change between two non-root
  // users; inheritable ones reach a program with file capabilities.
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return;
  for (auto& d : data) d.inheritable = 0;
  syscall(SYS_capset, &header, data);
}

void check_user_options(Options& opts) {
  opts.own_user = own_user();
  auto check = [&](const std::string& user, const char* flag) {
    model::validate_user_name(user, flag);
    if (!user_exists(user))
      throw usage_error(fmt::format("{}: no user '{}' on this host", flag, user), "name users of this host");
    if (user != opts.own_user && !may_switch_users())
      throw usage_error(fmt::format("{} {}: jobagent runs as '{}' and cannot run jobs as another user", flag, user,
                                    opts.own_user),
                        "run jobagent as root (or with CAP_SETUID, CAP_SETGID and CAP_KILL), or leave the flag out");
  };
  if (!opts.run_as.empty()) check(opts.run_as, "--run-as");
  for (const auto& user : opts.allow_users) check(user, "--allow-users");
}

std::string job_user(const model::JobSpec& spec, const Options& opts) {
  return spec.user.empty() ? opts.run_as : spec.user;
}

std::optional<std::string> refuse_user(const std::string& user, const Options& opts) {
  // The agent's own user is the default only without --run-as: with one,
  // a job must not get back what --run-as keeps jobs from (root).
  const bool own_by_default = user == opts.own_user && opts.run_as.empty();
  if (user.empty() || own_by_default || user == opts.run_as ||
      std::count(opts.allow_users.begin(), opts.allow_users.end(), user) > 0)
    return std::nullopt;
  return fmt::format("this agent ({}) does not run jobs as user '{}' (its --allow-users: {}); start it with "
                     "--allow-users {}, or send the job to an agent that does with --on",
                     opts.name, user, opts.allow_users.empty() ? "none" : joined(opts.allow_users), user);
}

}  // namespace jobctl::agent
