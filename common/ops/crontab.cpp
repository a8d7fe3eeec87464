#include "common/ops/crontab.hpp"

#include <fmt/format.h>

#include "common/cron/plan.hpp"
#include "common/model/job_json.hpp"
#include "common/util/error.hpp"
#include "common/util/strings.hpp"
#include "common/util/time.hpp"
#include "common/util/tz.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::ops {
namespace {

constexpr std::string_view kSpace = " \t";

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return std::string(s.substr(b, s.find_last_not_of(" \t\r") - b + 1));
}

// The first word of `s` and what follows it, trimmed.
std::pair<std::string, std::string> first_word(std::string_view s) {
  const auto end = s.find_first_of(kSpace);
  if (end == std::string_view::npos) return {std::string(s), ""};
  return {std::string(s.substr(0, end)), trim(s.substr(end))};
}

// NAME=value (spaces around = allowed, the value optionally quoted), as
// cron reads an environment line; false when the line is not one.
bool env_line(const std::string& line, std::string& name, std::string& value) {
  const auto eq = line.find('=');
  if (eq == std::string::npos) return false;
  name = trim(line.substr(0, eq));
  if (name.empty() || name.find_first_of(" \t") != std::string::npos) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  value = trim(line.substr(eq + 1));
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
    value = value.substr(1, value.size() - 2);
  return true;
}

// \% is a literal %; a bare % (cron: the rest is standard input) cannot be
// carried over.
std::string command_of(const std::string& text, int line) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '%') {
      out += '%';
      ++i;
    } else if (text[i] == '%') {
      throw usage_error(fmt::format("line {}: an unescaped % gives the rest of the line as standard input in cron, "
                                    "which jobctl does not",
                                    line),
                        "write \\% for a literal %, or put the command and its input in a script");
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string shell_quoted(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,@+") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string crontab_key_prefix(const std::string& queue) { return "crontab:" + queue + ":"; }

Crontab parse_crontab(std::string_view text, const std::string& queue, const std::string& tz) {
  Crontab out;
  std::map<std::string, std::string> env;
  std::string zone = tz;
  int n = 0;
  size_t at = 0;
  while (at <= text.size()) {
    const auto nl = text.find('\n', at);
    const std::string line = trim(text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
    at = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::string name, value;
    if (line[0] != '@' && env_line(line, name, value)) {
      if (name == "CRON_TZ") {
        zone = util::given_zone(value, fmt::format("CRON_TZ on line {}", n));
      } else if (name == "MAILTO" || name == "MAILFROM") {
        out.skipped.push_back({n, name + ": jobctl sends no mail; use --notify (jobctl(1), NOTIFICATIONS)"});
      } else {
        env[name] = value;
      }
      continue;
    }
    std::string cron, rest;
    if (line[0] == '@') {
      std::tie(cron, rest) = first_word(line);
      if (cron == "@reboot") {
        out.skipped.push_back({n, "@reboot: jobctl runs nothing at boot; use a systemd unit (jobagent(8))"});
        continue;
      }
    } else {
      rest = line;
      for (int field = 0; field < 5; ++field) {
        auto [word, after] = first_word(rest);
        if (word.empty() || after.empty())
          throw usage_error(fmt::format("line {}: '{}' is not a crontab entry", n, line),
                            "an entry is five fields and a command (0 3 * * * backup.sh), an @-word and a command "
                            "(@daily backup.sh), or NAME=value");
        cron += (field ? " " : "") + word;
        rest = after;
      }
    }
    if (rest.empty())
      throw usage_error(fmt::format("line {}: '{}' has no command", n, line), "write the command after the schedule");
    CrontabEntry e{n, {}};
    e.spec.queue = queue;
    e.spec.command.argv = {command_of(rest, n)};
    e.spec.command.via_shell = true;
    e.spec.env = env;
    e.spec.name = e.spec.command.argv[0].substr(0, 60);
    model::ScheduleSpec s;
    s.cron = cron;
    s.tz = zone;
    try {
      cron::validate_schedule(s, e.spec.name);
    } catch (const Error& err) {
      throw usage_error(fmt::format("line {}: {}", n, err.what()), err.hint());
    }
    e.spec.schedule = s;
    try {
      model::validate(e.spec);  // the limits every job has (--queue's name, the command's size)
    } catch (const Error& err) {
      throw usage_error(fmt::format("line {}: {}", n, err.what()), err.hint());
    }
    std::string identity = fmt::format("{}\n{}\n{}\n{}", zone, cron, e.spec.command.argv[0], queue);
    for (const auto& [k, v] : env) identity += fmt::format("\n{}={}", k, v);
    e.spec.idempotency_key = fmt::format("{}{:016x}", crontab_key_prefix(queue), util::stable_hash(identity));
    out.entries.push_back(std::move(e));
  }
  return out;
}

std::string crontab_of(const std::vector<store::ScheduleView>& schedules) {
  std::string out = "# jobctl schedules as a crontab (jobctl crontab export)\n";
  std::string zone;
  for (const auto& v : schedules) {
    const auto& spec = v.job.spec;
    if (!spec.schedule) continue;
    const auto& s = *spec.schedule;
    // What a comment quotes is kept to its line (util::one_line): a name
    // holding a newline wrote a working crontab line of its own (a tester).
    out += fmt::format("\n# {} (job {})\n", spec.name.empty() ? "unnamed" : util::one_line(spec.name), v.job.id);
    size_t fields = 0;
    for (std::string rest = s.cron; !rest.empty(); rest = first_word(rest).second) ++fields;
    const bool crontab_form = (s.cron[0] == '@' && s.cron.rfind("@every", 0) != 0) || fields == 5;
    if (!crontab_form || spec.command.webhook) {
      out += fmt::format("# not a crontab line ({}): {} {}\n",
                         spec.command.webhook ? "a webhook" : "seconds or @every", s.cron,
                         util::one_line(spec.command.display()));
      continue;
    }
    if (s.starts_at_us || s.ends_at_us || s.max_runs) {
      std::string bounds;
      if (s.starts_at_us) bounds += " from " + util::format_time(*s.starts_at_us);
      if (s.ends_at_us) bounds += " until " + util::format_time(*s.ends_at_us);
      if (s.max_runs) bounds += fmt::format(" at most {} runs", *s.max_runs);
      out += fmt::format("# bounded in jobctl, which a crontab cannot say:{}\n", bounds);
    }
    if (!spec.user.empty())
      out += fmt::format("# runs as user {} in jobctl: put the line in that user's crontab\n", util::one_line(spec.user));
    if (s.tz != zone) {
      out += fmt::format("CRON_TZ={}\n", s.tz);
      zone = s.tz;
    }
    std::string command;
    for (const auto& [k, val] : spec.env) command += fmt::format("export {}={}; ", k, shell_quoted(val));
    if (spec.command.via_shell) {
      command += spec.command.argv.at(0);
    } else {
      // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, wrongly)
      // on a const char* + std::string here.
      for (size_t i = 0; i < spec.command.argv.size(); ++i) {
        if (i > 0) command += ' ';
        command += shell_quoted(spec.command.argv[i]);
      }
    }
    // A crontab line ends at its newline: a command of several lines (or
    // a variable's value with one) would be cut there, its rest read as a
    // line of its own.
    if (command.find_first_of("\n\r") != std::string::npos) {
      out += fmt::format("# not a crontab line (a command of several lines): {} {}\n", s.cron, util::one_line(command));
      continue;
    }
    std::string escaped;
    for (char c : command) escaped += c == '%' ? std::string("\\%") : std::string(1, c);
    out += fmt::format("{} {}\n", s.cron, escaped);
  }
  return out;
}

}  // namespace jobctl::ops
