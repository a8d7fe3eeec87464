#include "common/model/job.hpp"

#include <array>
#include <utility>

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::model {
namespace {

constexpr std::array<std::pair<Priority, std::string_view>, 4> kPriorities{{
    {Priority::critical, "critical"},
    {Priority::high, "high"},
    {Priority::normal, "normal"},
    {Priority::low, "low"},
}};

constexpr std::array<std::pair<RunStatus, std::string_view>, 8> kStatuses{{
    {RunStatus::blocked, "blocked"},
    {RunStatus::pending, "pending"},
    {RunStatus::running, "running"},
    {RunStatus::succeeded, "succeeded"},
    {RunStatus::failed, "failed"},
    {RunStatus::dead, "dead"},
    {RunStatus::cancelled, "cancelled"},
    {RunStatus::skipped, "skipped"},
}};

constexpr std::array<std::pair<AttemptOutcome, std::string_view>, 6> kOutcomes{{
    {AttemptOutcome::running, "running"},
    {AttemptOutcome::succeeded, "succeeded"},
    {AttemptOutcome::failed, "failed"},
    {AttemptOutcome::cancelled, "cancelled"},
    {AttemptOutcome::released, "released"},
    {AttemptOutcome::lost, "lost"},
}};

template <typename Table, typename Enum>
std::string_view name_of(const Table& table, Enum value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return "?";
}

template <typename Table>
auto parse_from(const Table& table, std::string_view text, std::string_view what) {
  for (const auto& [v, name] : table)
    if (name == text) return v;
  std::string choices;
  for (const auto& [v, name] : table) choices += (choices.empty() ? "" : ", ") + std::string(name);
  throw usage_error(fmt::format("invalid {} '{}'", what, text), fmt::format("use one of: {}", choices));
}

}  // namespace

std::string_view to_string(Priority p) { return name_of(kPriorities, p); }
std::string_view to_string(RunStatus s) { return name_of(kStatuses, s); }
std::string_view to_string(AttemptOutcome o) { return name_of(kOutcomes, o); }
Priority parse_priority(std::string_view text) { return parse_from(kPriorities, text, "priority"); }
RunStatus parse_run_status(std::string_view text) { return parse_from(kStatuses, text, "status"); }

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
