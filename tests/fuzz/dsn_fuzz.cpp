// libFuzzer: store DSNs (common/config/dsn.hpp), as --db and JOBCTL_DB
// give them. The input is the DSN up to its first NUL, as an argument or
// an environment variable can carry no NUL.
//
// A DSN that parses names a SQLite file or a conninfo libpq reads (once
// jobctl's own schema= is out of it). The password libpq reads from a DSN
// does not show in its redacted form or in the error refusing it.
#include <fmt/format.h>

#include <cctype>
#include <optional>
#include <string>

#include "common/config/dsn.hpp"
#include "common/config/dsn_parameters.hpp"
#include "common/config/libpq.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace jobctl;
using config::libpq;

namespace {

// The password libpq reads from `dsn`; nothing when it cannot read it.
std::optional<std::string> password_in(const std::string& dsn) {
  PQconninfoOption* options = libpq().PQconninfoParse(dsn.c_str(), nullptr);
  if (!options) return std::nullopt;
  std::string password;
  for (const PQconninfoOption* o = options; o->keyword; ++o)
    if (o->val && std::string(o->keyword) == "password") password = o->val;
  libpq().PQconninfoFree(options);
  return password;
}

size_t count(const std::string& text, const std::string& piece) {
  size_t n = 0;
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++n;
  return n;
}

// How often `piece` is in `shown` other than across a "***": the marker
// redaction leaves can spell a password with the text beside it
// ("password=***" holds the password "assword=***").
size_t count_outside_markers(const std::string& shown, const std::string& piece) {
  size_t n = 0;
  for (size_t at = shown.find(piece); at != std::string::npos; at = shown.find(piece, at + 1)) {
    bool across = false;
    for (size_t star = at >= 2 ? at - 2 : 0; star < at + piece.size() && !across; ++star)
      across = shown.compare(star, 3, "***") == 0;
    if (!across) ++n;
  }
  return n;
}

// The DSN as libpq's values spell it: backslash escapes and %XX undone.
std::string unescaped(const std::string& dsn) {
  std::string out;
  for (size_t i = 0; i < dsn.size(); ++i) {
    if (dsn[i] == '\\' && i + 1 < dsn.size()) {
      out += dsn[++i];
    } else if (dsn[i] == '%' && i + 2 < dsn.size() && std::isxdigit(static_cast<unsigned char>(dsn[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(dsn[i + 2]))) {
      out += static_cast<char>(std::stoi(dsn.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += dsn[i];
    }
  }
  return out;
}

// Rewrites the password written at [begin, end) of `dsn` into another of
// the same shape: each byte becomes Q (R where it was Q), each %XX becomes
// %51 (%52 where it spelt Q); blanks, quotes and backslashes stay, so libpq
// splits the DSN as before.
void swap_password_bytes(std::string& dsn, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    const auto byte = static_cast<unsigned char>(dsn[i]);
    if (byte == '%' && i + 2 < end && std::isxdigit(static_cast<unsigned char>(dsn[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(dsn[i + 2]))) {
      dsn.replace(i + 1, 2, std::stoi(dsn.substr(i + 1, 2), nullptr, 16) == 'Q' ? "52" : "51");
      i += 2;
    } else if (!std::isspace(byte) && byte != '\'' && byte != '\\') {
      dsn[i] = byte == 'Q' ? 'R' : 'Q';
    }
  }
}

// What jobctl shows of `text`: its redacted form, or the error refusing it.
std::string shown_for(const std::string& text) {
  try {
    return config::redacted(config::parse_dsn(text));
  } catch (const Error& e) {
    return e.what();
  }
}

// `shown` (the redacted DSN, or the error refusing it) must not hold the
// password (of 8 bytes or more) unless the DSN has it elsewhere too, as
// written or as libpq reads it. Pieces of it are not checked: text that
// redaction joins ("host=h  port=x" once a password between them is gone)
// can match a piece by chance; a partial leak found earlier has its own
// unit test (tests/unit/dsn_test.cpp). Nor is a match that takes in a
// "***", so a password holding one is not checked where it shows as is.
// Nor one that jobctl's own words spell (the password "id PostgreSQL DSN "
// is in "invalid PostgreSQL DSN"; the password "'\377\377…" is in
// "port '\377\377…'"): the same DSN with the password's bytes swapped
// (quotes, escapes and blanks kept, and libpq reading another password from
// it) shows it too.
void check_hidden(const std::string& dsn, const std::string& password, const std::string& shown) {
  if (password.size() < 8 || count_outside_markers(shown, password) == 0) return;
  if (count(dsn, password) > 1 || count(unescaped(dsn), password) > 1) return;
  std::string other = dsn;
  for (const auto& p : config::dsn_parameters(dsn))
    if (p.name == "password") swap_password_bytes(other, p.value_begin, p.end);
  std::string conninfo = other;
  try {
    conninfo = config::postgres_target(other).conninfo;
  } catch (const Error&) {  // a schema= jobctl refuses: libpq reads no password from it either
  }
  const auto swapped = password_in(conninfo);
  if (swapped && *swapped != password && count_outside_markers(shown_for(other), password) > 0) return;
  fuzz::fail(fmt::format("'{}' is shown as '{}', which holds its password", dsn, shown));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string full = fuzz::text_of(data, size);
  const std::string text = full.substr(0, full.find('\0'));
  config::Dsn dsn;
  try {
    dsn = config::parse_dsn(text);
  } catch (const Error& e) {
    fuzz::check_refusal(e);
    if (auto password = password_in(text)) check_hidden(text, *password, e.what());
    return 0;
  }
  if (dsn.target.empty()) fuzz::fail(fmt::format("'{}' names no store", text));
  if (dsn.backend == config::Backend::sqlite) return 0;
  // What jobctl hands libpq: the DSN without jobctl's own schema= option.
  const auto password = password_in(config::postgres_target(dsn.target).conninfo);
  if (!password) fuzz::fail(fmt::format("'{}' was accepted, but libpq cannot read it", text));
  check_hidden(text, *password, config::redacted(dsn));
  return 0;
}
