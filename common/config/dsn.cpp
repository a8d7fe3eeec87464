#include "common/config/dsn.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/config/dsn_parameters.hpp"
#include "common/config/libpq.hpp"
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

// Whether a DSN parameter holds a secret: the server's password, or the
// passphrase of the client's TLS key.
bool is_secret(const DsnParameter& p) { return p.name == "password" || p.name == "sslpassword"; }

// The secrets `dsn` holds: each password's value as written and as libpq
// reads it, and, where a URI's password holds an @ not written %40, what
// lies between its first @ and its last, which libpq reads as the host.
std::vector<std::string> secrets_of(const std::string& dsn) {
  std::vector<std::string> secrets;
  for (const DsnParameter& p : dsn_parameters(dsn)) {
    if (!is_secret(p)) continue;
    secrets.push_back(dsn.substr(p.value_begin, p.end - p.value_begin));
    secrets.push_back(parameter_value(dsn, p));
  }
  if (const size_t at = dsn.find("://"); at != std::string::npos) {
    const size_t slash = dsn.find('/', at + 3);
    const size_t first = dsn.find('@', at + 3), last = dsn.rfind('@', slash == std::string::npos ? slash : slash - 1);
    if (first < slash && last != std::string::npos && last > first) secrets.push_back(dsn.substr(first + 1, last - first - 1));
  }
  return secrets;
}

}  // namespace

// Every place any secret covers in `text` as given is marked first, then
// each run of marked bytes becomes one ***: text is never searched again
// after a replacement, which a password of stars would find in its own ***
// (and a DSN of many such passwords would make grow threefold for each).
std::string without_secrets(const std::string& dsn, const std::string& text) {
  std::vector<bool> hidden(text.size(), false);
  for (const std::string& secret : secrets_of(dsn)) {
    if (secret.empty()) continue;
    for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 1))
      std::fill_n(hidden.begin() + static_cast<std::ptrdiff_t>(at), secret.size(), true);
  }
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!hidden[i]) {
      out += text[i];
    } else if (i == 0 || !hidden[i - 1]) {
      out += "***";
    }
  }
  return out;
}

namespace {

// `text` (an error about a DSN) with the password of each URI's user info
// in it ("scheme://user:PASSWORD@host") hidden, whether or not libpq
// would read one there: a DSN it refuses ("schema=a postgres://u:pw@h",
// where the URI is no parameter) or a scheme it does not know
// ("POSTGRES://u:pw@h") is still a password its user meant. The user info
// ends at an @ before any / (libpq takes the first, a user who forgot to
// write @ as %40 means the last), so a password may hold ?, #, quotes and
// blanks; where the message's own words follow, more than the password
// may be hidden, never less.
std::string hide_user_info_passwords(std::string text) {
  for (size_t at = text.find("://"); at != std::string::npos; at = text.find("://", at + 3)) {
    const size_t start = at + 3;
    // To the last @ before the first /: a password with an @ not written
    // %40 is hidden whole, where libpq would read part of it as the host.
    const size_t slash = text.find('/', start);
    const size_t user_end = text.rfind('@', slash == std::string::npos ? std::string::npos : slash - 1);
    if (user_end == std::string::npos || user_end < start) continue;
    const size_t colon = text.find(':', start);
    if (colon >= user_end || user_end == colon + 1) continue;
    if (text.compare(colon + 1, user_end - colon - 1, "***") == 0) continue;
    text.replace(colon + 1, user_end - colon - 1, "***");
  }
  return text;
}

// Whether `text` is a whole number in [min, max].
bool integer_in(const std::string& text, long min, long max) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  long n = std::stol(text);
  return n >= min && n <= max;
}

Error bad_postgres(const std::string& text, const std::string& why) {
  return usage_error(hide_user_info_passwords(
                         fmt::format("invalid PostgreSQL DSN '{}': {}", redacted({Backend::postgres, text}), why)),
                     "see jobctl(1), DATABASE: postgres://USER@HOST:PORT/DBNAME or key=value pairs");
}

// jobctl's own `schema` option, taken out of a DSN libpq would refuse it
// in: the DSN without it, and its value if it was there.
std::pair<std::string, std::optional<std::string>> take_schema(const std::string& text) {
  const auto parameters = dsn_parameters(text);
  const auto schema = std::find_if(parameters.begin(), parameters.end(), [](const auto& p) { return p.name == "schema"; });
  if (schema == parameters.end()) return {text, std::nullopt};
  const std::string value = parameter_value(text, *schema);
  if (is_postgres_uri(text)) {
    // "?schema=x&a=b" keeps "?a=b"; "&schema=x" goes; "?schema=x" goes.
    const char separator = text[schema->begin - 1];
    std::string rest = text.substr(0, schema->begin - 1);
    if (schema->end < text.size()) rest += separator + text.substr(schema->end + 1);
    return {rest, value};
  }
  // The blanks before it go with it, unless they are all that will part
  // the words on either side: libpq reads "schema='x'port=1" as two
  // parameters, and "host=db port=1" must not become "host=dbport=1".
  std::string rest = text.substr(0, schema->begin) + text.substr(schema->end);
  const bool glued = schema->end < text.size() && !std::isspace(static_cast<unsigned char>(text[schema->end]));
  size_t cut = schema->begin;
  while (!glued && cut > 0 && std::isspace(static_cast<unsigned char>(rest[cut - 1]))) --cut;
  rest.erase(cut, schema->begin - cut);
  rest.erase(0, rest.find_first_not_of(" \t\n"));
  // libpq reads a string that starts with postgres:// as a URI: a word that
  // spells one and came after schema= stays in key=value form behind a blank.
  if (is_postgres_uri(rest)) rest.insert(0, " ");
  return {rest, value};
}

// A schema name jobctl accepts: a lower-case SQL identifier, as the server
// would fold an unquoted one.
bool plain_identifier(const std::string& name) {
  auto lower = [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; };
  return !name.empty() && name.size() <= 63 && lower(name[0]) &&
         std::all_of(name.begin(), name.end(), [&](char c) { return lower(c) || (c >= '0' && c <= '9'); });
}

// Whether `text` starts as a libpq key=value string does: a keyword (ASCII
// letters and underscores), then '=', with blanks around it. (Written out:
// a std::regex cost every command 0.1 ms to compile.)
bool starts_with_keyword(std::string_view text) {
  auto blank = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  size_t i = 0;
  while (i < text.size() && blank(text[i])) ++i;
  const size_t word = i;
  while (i < text.size() && letter(text[i])) ++i;
  if (i == word) return false;
  while (i < text.size() && blank(text[i])) ++i;
  return i < text.size() && text[i] == '=';
}

// A PostgreSQL DSN as libpq reads it (its syntax, keywords, percent
// escapes), and the numbers in it, which libpq would only refuse when
// connecting, as if the server were unreachable. Returns it as a Dsn.
Dsn checked_postgres(const std::string& text) {
  auto bad = [&](const std::string& why) { return bad_postgres(text, why); };
  (void)postgres_target(text);  // jobctl's own options, and libpq's reading of the rest
  char* error = nullptr;
  const std::string conninfo = take_schema(text).first;
  PQconninfoOption* options = libpq().PQconninfoParse(conninfo.c_str(), &error);
  if (!options) {
    std::string why = without_secrets(text, error ? error : "libpq could not read it");
    libpq().PQfreemem(error);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    throw bad(why);
  }
  std::string problem;
  for (const PQconninfoOption* o = options; o->keyword && problem.empty(); ++o) {
    if (!o->val) continue;
    const std::string key = o->keyword, value = o->val;
    if (key == "port") {  // one per host: 5432,5433
      std::string port;
      for (std::istringstream list(value); std::getline(list, port, ',');)
        if (!port.empty() && !integer_in(port, 1, 65535)) problem = fmt::format("port '{}' is not 1 to 65535", port);
    } else if (key == "connect_timeout" || key == "keepalives" || key == "keepalives_idle" ||
               key == "keepalives_interval" || key == "keepalives_count" || key == "tcp_user_timeout") {
      if (!integer_in(value, 0, 999'999'999)) problem = fmt::format("{} '{}' is not a whole number", key, value);
    }
  }
  libpq().PQconninfoFree(options);
  if (!problem.empty()) throw bad(problem);
  return {Backend::postgres, text};
}

}  // namespace

PostgresTarget postgres_target(const std::string& dsn) {
  auto [conninfo, schema] = take_schema(dsn);
  if (schema && !schema->empty() && !plain_identifier(*schema))
    throw bad_postgres(dsn, fmt::format("schema '{}' is not a lower-case name of letters, digits and _ (at most 63)",
                                        *schema));
  PostgresTarget t{conninfo, ""};
  char* error = nullptr;
  PQconninfoOption* parsed = libpq().PQconninfoParse(conninfo.c_str(), &error);
  if (!parsed) {
    libpq().PQfreemem(error);
    return t;  // checked_postgres says what is wrong with it
  }
  std::string own;
  for (const PQconninfoOption* o = parsed; o->keyword; ++o)
    if (o->val && std::string(o->keyword) == "options") own = o->val;
  libpq().PQconninfoFree(parsed);
  // The DSN's own search_path wins unless schema= is given; schema= empty
  // sends nothing.
  if (schema ? schema->empty() : own.find("search_path") != std::string::npos) return t;
  t.options = (own.empty() ? "" : own + " ") + "-csearch_path=" + (schema ? *schema : kDefaultSchema);
  return t;
}

Dsn parse_dsn(const std::string& text) {
  if (text.empty()) throw usage_error("the database DSN is empty", "pass --db sqlite:PATH or --db postgres://…");
  if (text.size() > kMaxDsnLength)
    throw usage_error(fmt::format("the database DSN is {} bytes long, more than {}", text.size(), kMaxDsnLength),
                      "pass --db sqlite:PATH or --db postgres://…");
  if (is_postgres_uri(text)) return checked_postgres(text);
  if (starts_with(text, "sqlite:")) {
    std::string path = text.substr(7);
    if (starts_with(path, "//")) {  // sqlite:///abs/path, or sqlite://localhost/abs/path as a file: URI
      path = path.substr(2);
      if (starts_with(path, "localhost/")) path = path.substr(9);
      if (!path.empty() && !starts_with(path, "/"))
        throw usage_error(fmt::format("invalid DSN '{}': sqlite:// names a host before the path, and an SQLite "
                                      "file can only be opened on this one",
                                      text),
                          fmt::format("write sqlite:{} for a path relative to the current directory, or "
                                      "sqlite:///ABSOLUTE/PATH",
                                      path));
    }
    if (path.empty()) throw usage_error(fmt::format("invalid DSN '{}': no file path after sqlite:", text));
    return {Backend::sqlite, path};
  }
  if (starts_with_keyword(text)) return checked_postgres(text);
  if (text.find("://") != std::string::npos)
    throw usage_error(
        hide_user_info_passwords(fmt::format("unsupported DSN scheme in '{}'", redacted({Backend::postgres, text}))),
                      "use postgres://…, postgresql://…, a libpq key=value string, sqlite:PATH or a file path");
  return {Backend::sqlite, text};
}

Dsn resolve_dsn(const std::optional<std::string>& flag) {
  if (flag) return parse_dsn(*flag);
  if (const char* env = std::getenv("JOBCTL_DB"); env && *env) return parse_dsn(env);
  return {Backend::sqlite, default_path(), true};
}

std::string redacted(const Dsn& dsn) {
  if (dsn.backend == Backend::sqlite) return "sqlite:" + dsn.target;
  std::string out = dsn.target;
  const auto parameters = dsn_parameters(out);
  for (auto p = parameters.rbegin(); p != parameters.rend(); ++p)
    if (is_secret(*p) && p->end > p->value_begin) out.replace(p->value_begin, p->end - p->value_begin, "***");
  return hide_user_info_passwords(out);
}

void hide_dsn_passwords(int argc, char** argv) {
  auto hide = [](char* value) {
    const size_t length = std::strlen(value);
    std::string shown;
    try {
      const Dsn dsn = parse_dsn(value);
      if (dsn.backend == Backend::sqlite) return;  // a path: no secret, and its own spelling
      shown = redacted(dsn);
    } catch (const Error&) {
      shown = std::string(length, '*');  // malformed: nothing of it can be told apart
    }
    if (shown == value) return;
    shown.resize(length, ' ');
    std::memcpy(value, shown.data(), length);
  };
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) return;
    if (std::strcmp(argv[i], "--db") == 0 && i + 1 < argc) hide(argv[++i]);
    else if (std::strncmp(argv[i], "--db=", 5) == 0) hide(argv[i] + 5);
  }
}

}  // namespace jobctl::config
