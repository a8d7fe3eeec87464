#include "agent/secrets.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "common/model/webhook.hpp"
#include "common/util/error.hpp"

namespace jobctl::agent {
namespace {

constexpr std::string_view kEnvPrefix = "JOBAGENT_SECRET_";

void read_file(const std::string& path, std::map<std::string, std::string>& out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    throw usage_error(fmt::format("--secrets-file '{}': {}", path, std::strerror(errno)),
                      "check the path; the file holds NAME=value lines and has mode 600");
  if ((st.st_mode & 077) != 0)
    throw usage_error(fmt::format("--secrets-file '{}' is readable or writable by others (mode {:o}): refused",
                                  path, st.st_mode & 0777),
                      fmt::format("chmod 600 '{}'", path));
  std::ifstream in(path);
  if (!in)
    throw usage_error(fmt::format("--secrets-file '{}': {}", path, std::strerror(errno)),
                      "the agent's user must be able to read it (and nobody else)");
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
      throw usage_error(fmt::format("--secrets-file '{}' line {}: expected NAME=value with a NAME of A-Z a-z 0-9 _",
                                    path, n));
    out[name] = line.substr(eq + 1);
  }
}

}  // namespace

Secrets Secrets::load(char** env, const std::optional<std::string>& file) {
  Secrets s;
  if (file) read_file(*file, s.values_);
  for (char** e = env; e && *e; ++e) {
    std::string_view kv = *e;
    if (kv.substr(0, kEnvPrefix.size()) != kEnvPrefix) continue;
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(kv.substr(kEnvPrefix.size(), eq - kEnvPrefix.size()));
    if (model::is_secret_name(name)) s.values_[name] = std::string(kv.substr(eq + 1));
  }
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

size_t Secrets::longest(const Values& values) {
  size_t n = 0;
  for (const auto& [name, value] : values) n = std::max(n, value.size());
  return n;
}

std::string Secrets::redact(std::string text, const Values& values, Cut cut) {
  std::vector<std::pair<std::string, std::string>> by_length(values.begin(), values.end());
  std::sort(by_length.begin(), by_length.end(),
            [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  size_t first_mark = std::string::npos;
  for (const auto& [name, value] : by_length) {
    if (value.empty()) continue;
    std::string mark = "[secret:" + name + "]";
    for (size_t at = text.find(value); at != std::string::npos; at = text.find(value, at + mark.size())) {
      text.replace(at, value.size(), mark);
      first_mark = std::min(first_mark, at);
    }
  }
  if (cut == Cut::yes) {
    // What precedes the first full value, up to a value's length less one,
    // may be the end of a value the cut went through.
    size_t drop = std::min({longest(values) > 0 ? longest(values) - 1 : 0, first_mark, text.size()});
    text.erase(0, drop);
  }
  return text;
}

}  // namespace jobctl::agent
