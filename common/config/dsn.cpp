#include "common/config/dsn.hpp"

#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::config {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string default_path() {
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) return std::string(xdg) + "/jobctl/jobs.db";
  const char* home = std::getenv("HOME");
  if (!home || !*home)
    throw usage_error("cannot find a place for the default database: neither XDG_DATA_HOME nor HOME is set",
                      "pass --db PATH or set JOBCTL_DB");
  return std::string(home) + "/.local/share/jobctl/jobs.db";
}

}  // namespace

Dsn parse_dsn(const std::string& text) {
  if (text.empty()) throw usage_error("the database DSN is empty", "pass --db sqlite:PATH or --db postgres://…");
  if (starts_with(text, "postgres://") || starts_with(text, "postgresql://")) return {Backend::postgres, text};
  if (starts_with(text, "sqlite:")) {
    std::string path = text.substr(7);
    if (starts_with(path, "//")) path = path.substr(2);  // sqlite:///abs/path
    if (path.empty()) throw usage_error(fmt::format("invalid DSN '{}': no file path after sqlite:", text));
    return {Backend::sqlite, path};
  }
  static const std::regex kv(R"(^\s*[A-Za-z_]+\s*=)");
  if (std::regex_search(text, kv)) return {Backend::postgres, text};
  if (text.find("://") != std::string::npos)
    throw usage_error(fmt::format("unsupported DSN scheme in '{}'", redacted({Backend::postgres, text})),
                      "use postgres://…, postgresql://…, a libpq key=value string, sqlite:PATH or a file path");
  return {Backend::sqlite, text};
}

Dsn resolve_dsn(const std::optional<std::string>& flag) {
  if (flag) return parse_dsn(*flag);
  if (const char* env = std::getenv("JOBCTL_DB"); env && *env) return parse_dsn(env);
  return {Backend::sqlite, default_path()};
}

std::string redacted(const Dsn& dsn) {
  if (dsn.backend == Backend::sqlite) return "sqlite:" + dsn.target;
  static const std::regex uri_pw(R"(^(postgres(?:ql)?://[^:/@]*:)[^@]*@)");
  static const std::regex kv_pw(R"((password\s*=\s*)('[^']*'|\S+))");
  static const std::regex query_pw(R"(([?&]password=)[^&]*)");
  std::string out = std::regex_replace(dsn.target, uri_pw, "$1***@");
  out = std::regex_replace(out, query_pw, "$1***");
  return std::regex_replace(out, kv_pw, "$1***");
}

}  // namespace jobctl::config
