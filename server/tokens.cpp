#include "server/tokens.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::server {
namespace {

constexpr size_t kMinTokenLength = 16;

std::optional<Role> parse_role(std::string_view word) {
  if (word == "read") return Role::read;
  if (word == "submit") return Role::submit;
  if (word == "operate") return Role::operate;
  if (word == "admin") return Role::admin;
  return std::nullopt;
}

// Equal bytes, in a time that depends only on the lengths.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

}  // namespace

std::string_view to_string(Role r) {
  switch (r) {
    case Role::read: return "read";
    case Role::submit: return "submit";
    case Role::operate: return "operate";
    case Role::admin: return "admin";
  }
  return "read";
}

Tokens Tokens::load(const std::string& path) {
  const std::string format_hint = "each line is NAME ROLE TOKEN (ROLE: read, submit, operate or admin); see jobctl(1), SERVE";
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    throw usage_error(fmt::format("--tokens-file '{}': {}", path, std::strerror(errno)), format_hint);
  if ((st.st_mode & 077) != 0)
    throw usage_error(fmt::format("--tokens-file '{}' is readable or writable by others (mode {:o}): refused", path,
                                  st.st_mode & 0777),
                      fmt::format("chmod 600 '{}'", path));
  std::ifstream in(path);
  if (!in) throw usage_error(fmt::format("--tokens-file '{}': {}", path, std::strerror(errno)), format_hint);
  Tokens out;
  std::set<std::string> names;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream words(line);
    std::string name, role, secret, extra;
    words >> name;
    if (name.empty() || name[0] == '#') continue;
    words >> role >> secret >> extra;
    // A message never quotes the token: it is the secret.
    const std::string where = fmt::format("--tokens-file '{}' line {}", path, n);
    if (secret.empty() || !extra.empty()) throw usage_error(where + ": expected NAME ROLE TOKEN", format_hint);
    auto r = parse_role(role);
    // A word as long as a token may be the token, its columns swapped (a
    // tester): not quoted. A shorter one cannot be a token, and is.
    if (!r && role.size() >= kMinTokenLength)
      throw usage_error(where + ": the second word is not a role, and is as long as a token: are the columns swapped?",
                        format_hint);
    if (!r) throw usage_error(fmt::format("{}: unknown role '{}'", where, role), format_hint);
    if (secret.size() < kMinTokenLength)
      throw usage_error(fmt::format("{}: the token is shorter than {} characters", where, kMinTokenLength),
                        "make one with: openssl rand -hex 24");
    if (!names.insert(name).second) throw usage_error(fmt::format("{}: the name '{}' is given twice", where, name));
    if (out.find(secret)) throw usage_error(where + ": this token is given to another name too");
    out.tokens_.push_back(Token{name, *r, secret});
  }
  if (out.tokens_.empty()) throw usage_error(fmt::format("--tokens-file '{}' holds no tokens", path), format_hint);
  return out;
}

std::optional<Token> Tokens::find(std::string_view presented) const {
  std::optional<Token> found;
  for (const auto& t : tokens_)  // every one compared, found or not
    if (same_secret(t.secret, presented)) found = t;
  return found;
}

}  // namespace jobctl::server
