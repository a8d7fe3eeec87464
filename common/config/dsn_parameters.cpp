#include "common/config/dsn_parameters.hpp"

#include <algorithm>
#include <cctype>

namespace jobctl::config {
namespace {

// isspace in the C locale, as libpq tests it.
bool blank(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `text` with %XX undone; a % not followed by two hex digits stays.
std::string percent_decoded(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 && hex_digit(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// key=value pairs: a keyword ends at "=" or a blank; a value is quoted
// ('…', backslash escaping the next character) or runs to the next blank
// (backslash escaping too).
std::vector<DsnParameter> keyword_value_parameters(const std::string& dsn) {
  std::vector<DsnParameter> found;
  size_t at = 0;
  const size_t n = dsn.size();
  while (at < n) {
    if (blank(dsn[at])) {
      ++at;
      continue;
    }
    DsnParameter p;
    p.begin = at;
    while (at < n && dsn[at] != '=' && !blank(dsn[at])) ++at;
    p.name = dsn.substr(p.begin, at - p.begin);
    while (at < n && blank(dsn[at])) ++at;
    if (at >= n || dsn[at] != '=') continue;  // libpq: missing "="; go on with the next word
    ++at;
    while (at < n && blank(dsn[at])) ++at;
    p.value_begin = at;
    if (at < n && dsn[at] == '\'') {
      for (++at; at < n && dsn[at] != '\''; ++at)
        if (dsn[at] == '\\') ++at;
      if (at < n) ++at;  // the closing quote; an unterminated value runs to the end
    } else {
      for (; at < n && !blank(dsn[at]); ++at)
        if (dsn[at] == '\\') ++at;
    }
    p.end = at = std::min(at, n);  // a backslash at the very end
    found.push_back(std::move(p));
  }
  return found;
}

// Where a URI's query begins (its "?"), past the hosts (a host in [ ] may
// hold a "?"), their ports and the database name, as libpq reads them from
// `at`; npos when it has none. A host whose "]" is missing (libpq refuses
// it) is read as if it had none.
size_t query_start(const std::string& dsn, size_t at) {
  const size_t n = dsn.size();
  for (;;) {
    if (at < n && dsn[at] == '[') {
      const size_t close = dsn.find(']', at);
      if (close != std::string::npos) at = close + 1;
    }
    at = std::min(dsn.find_first_of(":/?,", at), n);
    if (at < n && dsn[at] == ':') at = std::min(dsn.find_first_of("/?,", at), n);
    if (at >= n || dsn[at] != ',') break;
    ++at;
  }
  if (at < n && dsn[at] == '/') at = dsn.find('?', at);
  return at < n ? at : std::string::npos;
}

// A URI: the user info ends at the first "@" or "/", and its password
// follows the first ":" in it; then each "&"-separated parameter of the
// query (libpq refuses one without "=").
std::vector<DsnParameter> uri_parameters(const std::string& dsn) {
  std::vector<DsnParameter> found;
  const size_t start = dsn.find("://") + 3;
  size_t rest = start;
  const size_t info_end = dsn.find_first_of("@/", start);
  if (info_end != std::string::npos && dsn[info_end] == '@') {
    const size_t colon = dsn.find(':', start);
    if (colon < info_end) found.push_back({"password", colon + 1, colon + 1, info_end});
    rest = info_end + 1;
  }
  const size_t query = query_start(dsn, rest);
  for (size_t at = query; at != std::string::npos;) {
    const size_t begin = at + 1;
    const size_t end = std::min(dsn.find('&', begin), dsn.size());
    const size_t equals = dsn.find('=', begin);
    if (equals < end) found.push_back({percent_decoded(dsn.substr(begin, equals - begin)), begin, equals + 1, end});
    at = end < dsn.size() ? end : std::string::npos;
  }
  return found;
}

}  // namespace

bool is_postgres_uri(const std::string& dsn) {
  return dsn.rfind("postgres://", 0) == 0 || dsn.rfind("postgresql://", 0) == 0;
}

std::vector<DsnParameter> dsn_parameters(const std::string& dsn) {
  return is_postgres_uri(dsn) ? uri_parameters(dsn) : keyword_value_parameters(dsn);
}

std::string parameter_value(const std::string& dsn, const DsnParameter& parameter) {
  const std::string written = dsn.substr(parameter.value_begin, parameter.end - parameter.value_begin);
  if (is_postgres_uri(dsn)) return percent_decoded(written);
  const bool quoted = !written.empty() && written.front() == '\'';
  std::string value;
  for (size_t i = quoted ? 1 : 0; i < written.size(); ++i) {
    if (quoted && written[i] == '\'') break;
    if (written[i] == '\\' && i + 1 < written.size()) ++i;
    value += written[i];
  }
  return value;
}

}  // namespace jobctl::config
