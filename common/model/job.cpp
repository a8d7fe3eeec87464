#include "common/model/job.hpp"

namespace jobctl::model {

std::string_view to_string(Priority p) { return name_of(kPriorityNames, p); }
std::string_view to_string(RunStatus s) { return name_of(kRunStatusNames, s); }
std::string_view to_string(AttemptOutcome o) { return name_of(kAttemptOutcomeNames, o); }
Priority parse_priority(std::string_view text) { return parse_name(kPriorityNames, text, "priority"); }
RunStatus parse_run_status(std::string_view text) { return parse_name(kRunStatusNames, text, "status"); }

bool is_final(RunStatus s) {
  return s == RunStatus::succeeded || s == RunStatus::failed || s == RunStatus::dead ||
         s == RunStatus::cancelled || s == RunStatus::skipped;
}

std::string_view to_string(WorkerState s) {
  switch (s) {
    case WorkerState::active: return "active";
    case WorkerState::draining: return "draining";
    case WorkerState::gone: return "gone";
  }
  return "?";
}

std::vector<std::string> Command::exec_argv() const {
  if (via_shell) return {"/bin/sh", "-c", argv.at(0)};
  return argv;
}

std::string Command::display() const {
  if (webhook) return webhook->display();
  if (via_shell) return argv.at(0);
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`;&|<>*?()[]{}") == std::string::npos;
    out += plain ? a : "'" + a + "'";
  }
  return out;
}

int group_limit(const JobSpec& s) {
  int limit = s.schedule ? effective_max_concurrent(*s.schedule) : s.max_concurrent.value_or(0);
  if (limit == 0 && !s.concurrency_key.empty()) return 1;
  return limit;
}

}  // namespace jobctl::model
