#include "agent/secrets.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "agent/secret_forms.hpp"
#include "common/model/webhook.hpp"
#include "common/util/error.hpp"

namespace jobctl::agent {
namespace {

constexpr std::string_view kEnvPrefix = "JOBAGENT_SECRET_";

// A file of secrets is owned by this process's user or root: another owner
// (a --run-as user, whose jobs could then read or rewrite it) may change
// it and its mode. It may be read by its owner, and by its group when that
// is this process's own (root:jobagent 0640); written by its owner only.
void check_mode(const struct stat& st, const std::string& path, const char* what) {
  const unsigned mode = st.st_mode & 0777;
  if ((mode & 007) != 0)
    throw usage_error(fmt::format("{} '{}' is readable or writable by others (mode {:o}): refused", what, path, mode),
                      fmt::format("chmod 600 '{}' (or 640, its group the agent's own)", path));
  if ((mode & 020) != 0)
    throw usage_error(fmt::format("{} '{}' is writable by its group (mode {:o}): refused", what, path, mode),
                      fmt::format("chmod 600 '{}' (or 640, its group the agent's own)", path));
  if ((mode & 040) != 0 && st.st_gid != getegid())
    throw usage_error(fmt::format("{} '{}' is readable by group {}, which is not the agent's (group {}): refused",
                                  what, path, st.st_gid, getegid()),
                      fmt::format("chmod 600 '{}', or chgrp it to the agent's group", path));
  if (st.st_uid != geteuid() && st.st_uid != 0)
    throw usage_error(fmt::format("{} '{}' is owned by user {}, neither the agent's nor root: refused (that user, "
                                  "and any job run as them, may read and change it)",
                                  what, path, st.st_uid),
                      fmt::format("chown root '{}' (or the agent's user)", path));
}

// The file's content, its mode checked on the file opened (not on a path
// that could change in between).
std::string read_checked(const std::string& path, const char* what) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw usage_error(fmt::format("{} '{}': {}", what, path, std::strerror(errno)),
                      "check the path; the agent's user must be able to read it (and no other user)");
  std::string content;
  try {
    struct stat st;
    if (fstat(fd, &st) != 0)
      throw usage_error(fmt::format("{} '{}': {}", what, path, std::strerror(errno)));
    check_mode(st, path, what);
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw usage_error(fmt::format("{} '{}': {}", what, path, std::strerror(errno)));
      content.append(buf, static_cast<size_t>(n));
    }
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  return content;
}

void read_lines(const std::string& path, const char* what, Secrets::Values& out) {
  std::istringstream in(read_checked(path, what));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    auto eq = line.find('=');
    std::string name = eq == std::string::npos ? "" : line.substr(first, eq - first);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.pop_back();
    // The value is never part of the message: it may be the secret.
    if (!model::is_secret_name(name))
      throw usage_error(fmt::format("{} '{}' line {}: expected NAME=value with a NAME of A-Z a-z 0-9 _", what,
                                    path, n));
    out[name] = line.substr(eq + 1);
  }
}

// systemd's credentials (LoadCredential=NAME:PATH): "secrets" is a file of
// NAME=value lines; any other credential named like a secret is one
// value, its file's content less one final line break.
void read_credentials(const std::string& dir, Secrets::Values& out) {
  constexpr const char* kWhat = "the credential";
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec), end;
  if (ec)
    throw usage_error(fmt::format("$CREDENTIALS_DIRECTORY '{}': {}", dir, ec.message()),
                      "systemd sets it for a unit with LoadCredential=; unset it otherwise");
  std::vector<std::string> names;
  for (; it != end; it.increment(ec)) names.push_back(it->path().filename().string());
  if (ec)
    throw usage_error(fmt::format("$CREDENTIALS_DIRECTORY '{}': {}", dir, ec.message()),
                      "systemd sets it for a unit with LoadCredential=; unset it otherwise");
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const std::string path = dir + "/" + name;
    if (name == "secrets") {
      read_lines(path, kWhat, out);
    } else if (model::is_secret_name(name)) {
      std::string value = read_checked(path, kWhat);
      if (!value.empty() && value.back() == '\n') value.pop_back();
      if (!value.empty() && value.back() == '\r') value.pop_back();
      out[name] = std::move(value);
    }
  }
}

}  // namespace

Secrets::Values Secrets::take_from_environment() {
  Values taken;
  std::vector<std::string> names;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv = *e;
    auto eq = kv.find('=');
    if (kv.substr(0, kEnvPrefix.size()) != kEnvPrefix || eq == std::string_view::npos) continue;
    std::string name(kv.substr(kEnvPrefix.size(), eq - kEnvPrefix.size()));
    if (model::is_secret_name(name)) taken[name] = std::string(kv.substr(eq + 1));
    names.emplace_back(kv.substr(0, eq));
    // The kernel shows the environment the process started with, where it
    // still lies: unsetenv alone would leave the value there.
    explicit_bzero(*e + eq + 1, kv.size() - eq - 1);
  }
  for (const auto& name : names) unsetenv(name.c_str());
  return taken;
}

Secrets Secrets::load(const Values& environment, const std::optional<std::string>& file,
                      const std::optional<std::string>& credentials_dir) {
  Secrets s;
  if (file) read_lines(*file, "--secrets-file", s.values_);
  if (credentials_dir) read_credentials(*credentials_dir, s.values_);
  for (const auto& [name, value] : environment) s.values_[name] = value;
  return s;
}

std::optional<std::string> Secrets::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

Secrets::Resolved Secrets::resolve(std::string_view text, Values& used) const {
  static constexpr std::string_view kOpen = "{{secret:";
  Resolved r;
  size_t pos = 0;
  for (size_t at = text.find(kOpen); at != std::string_view::npos; at = text.find(kOpen, pos)) {
    size_t end = text.find("}}", at + kOpen.size());
    if (end == std::string_view::npos) break;  // validated at submit; keep the rest as written
    r.text.append(text.substr(pos, at - pos));
    std::string name(text.substr(at + kOpen.size(), end - at - kOpen.size()));
    if (auto v = get(name)) {
      r.text += *v;
      used[name] = *v;
    } else if (r.missing.empty()) {
      r.missing = name;
    }
    pos = end + 2;
  }
  r.text.append(text.substr(pos));
  return r;
}

namespace {

// Each value with its name, longest first: a value inside another is
// replaced only after the other, whatever form either takes.
std::vector<std::pair<std::string, std::string>> by_length(const Secrets::Values& values) {
  std::vector<std::pair<std::string, std::string>> out(values.begin(), values.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  return out;
}

// The encoded forms of `value` but the percent-encoded ones (and the value
// as sent, which percent_form_end matches), longest first.
std::vector<std::string> other_forms(const std::string& value) {
  auto forms = secret_forms(value);
  if (!forms.empty()) forms.erase(forms.begin());
  std::stable_sort(forms.begin(), forms.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  return forms;
}

}  // namespace

size_t Secrets::longest(const Values& values) {
  size_t longest = 0;
  for (const auto& [name, value] : values) {
    longest = std::max(longest, longest_percent_form(value));
    for (const auto& form : secret_forms(value)) longest = std::max(longest, form.size());
  }
  return longest;
}

std::string Secrets::redact(std::string text, const Values& values, Cut cut) {
  size_t first_mark = std::string::npos;
  auto mark_at = [&](size_t at, size_t length, const std::string& name) {
    const std::string mark = "[secret:" + name + "]";
    text.replace(at, length, mark);
    first_mark = std::min(first_mark, at);
    return at + mark.size();
  };
  for (const auto& [name, value] : by_length(values)) {
    if (value.empty()) continue;
    // As sent or percent-encoded, from where it can start: its first
    // byte, or an encoded byte.
    const std::string starts = value[0] == ' ' ? std::string{' ', '%', '+'} : std::string{value[0], '%'};
    for (size_t at = text.find_first_of(starts); at != std::string::npos; at = text.find_first_of(starts, at)) {
      const size_t end = percent_form_end(text, at, value);
      at = end == std::string::npos ? at + 1 : mark_at(at, end - at, name);
    }
    for (const auto& form : other_forms(value))
      for (size_t at = text.find(form); at != std::string::npos;) at = text.find(form, mark_at(at, form.size(), name));
  }
  if (cut == Cut::yes) {
    // What precedes the first full form, up to the longest form's length
    // less one, may be the end of a form the cut went through.
    const size_t longest = Secrets::longest(values);
    size_t drop = std::min({longest > 0 ? longest - 1 : 0, first_mark, text.size()});
    text.erase(0, drop);
  }
  return text;
}

}  // namespace jobctl::agent
