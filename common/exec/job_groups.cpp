#include "common/exec/job_groups.hpp"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

namespace jobctl::exec {
namespace {

constexpr auto kEndLimit = std::chrono::seconds(5);

// The living (not zombie) processes of `jobs`.
std::vector<pid_t> members(const JobGroups& jobs) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream stat(fmt::format("/proc/{}/stat", pid));
    std::string line;
    if (!std::getline(stat, line)) continue;
    // "pid (comm) state ppid pgrp session …": comm may hold anything, so
    // from its last ')'.
    const size_t paren = line.rfind(')');
    char state = 0;
    int ppid = 0, group = 0, session = 0;
    if (paren == std::string::npos ||
        std::sscanf(line.c_str() + paren + 1, " %c %d %d %d", &state, &ppid, &group, &session) != 4)
      continue;
    // Never this process, nor its own group (an agent started from the
    // shell that ran the dead one, whose group id came round again).
    if (pid == getpid() || group == getpgrp()) continue;
    if (state != 'Z' && session == jobs.session &&
        std::find(jobs.groups.begin(), jobs.groups.end(), group) != jobs.groups.end())
      out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

}  // namespace

std::string job_groups_text(pid_t agent, pid_t supervisor, const JobGroups& jobs) {
  std::string text = fmt::format("{} {}\nsession {} groups", agent, supervisor, jobs.session);
  for (pid_t g : jobs.groups) text += fmt::format(" {}", g);
  return text + "\n";
}

JobGroups parse_job_groups(const std::string& text) {
  JobGroups jobs;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string word, groups;
    pid_t session = -1;
    if (!(words >> word) || word != "session" || !(words >> session) || !(words >> groups) || groups != "groups")
      continue;
    jobs.session = session;
    for (pid_t g; words >> g;)
      if (g > 1) jobs.groups.push_back(g);
  }
  if (jobs.session <= 0) jobs.groups.clear();
  return jobs;
}

JobGroups read_job_groups(int fd) {
  std::string text;
  char buf[4096];
  for (off_t at = 0;;) {
    ssize_t n = pread(fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return parse_job_groups(text);
    text.append(buf, static_cast<size_t>(n));
    at += n;
  }
}

Ended end_job_groups(const JobGroups& jobs) {
  if (jobs.groups.empty()) return {};
  std::set<pid_t> killed;
  const auto give_up = std::chrono::steady_clock::now() + kEndLimit;
  for (;;) {
    auto left = members(jobs);
    if (left.empty() || std::chrono::steady_clock::now() >= give_up) return Ended{killed.size(), left.size()};
    for (pid_t pid : left)
      if (kill(pid, SIGKILL) == 0) killed.insert(pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace jobctl::exec
