#include "server/authenticate.hpp"

#include <strings.h>

#include <fmt/format.h>

#include "common/util/strings.hpp"

namespace jobctl::server {
namespace {

// The cookie carries the token hex-encoded: a token may hold any character
// but white space, and a cookie value may not hold ';', ',', '"' or '\'.
std::string hex_of(const std::string& text) {
  std::string out;
  out.reserve(text.size() * 2);
  for (unsigned char c : text) out += fmt::format("{:02x}", c);
  return out;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = digit(hex[i]), lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

std::optional<std::string> cookie_token(const httplib::Request& req) {
  for (const auto& part : util::split(req.get_header_value("Cookie"), ';')) {
    std::string_view p = part;
    while (!p.empty() && p.front() == ' ') p.remove_prefix(1);
    const std::string_view name = std::string_view(kTokenCookie);
    if (p.size() > name.size() && p.substr(0, name.size()) == name && p[name.size()] == '=')
      return from_hex(p.substr(name.size() + 1));
  }
  return std::nullopt;
}

std::string cookie_attributes(bool tls) { return std::string("; Path=/; HttpOnly; SameSite=Strict") + (tls ? "; Secure" : ""); }

}  // namespace

std::optional<Caller> authenticate(const httplib::Request& req, const Tokens& tokens) {
  const std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";  // the scheme in any case (RFC 9110)
  // A Bearer token is the only credential looked at; another scheme (a
  // proxy's Basic authentication, passed on) leaves the cookie to decide.
  if (header.size() >= kBearer.size() && strncasecmp(header.c_str(), kBearer.data(), kBearer.size()) == 0) {
    if (auto t = tokens.find(std::string_view(header).substr(kBearer.size()))) return Caller{*t, false};
    return std::nullopt;
  }
  if (auto secret = cookie_token(req))
    if (auto t = tokens.find(*secret)) return Caller{*t, true};
  return std::nullopt;
}

bool from_other_origin(const httplib::Request& req) {
  const std::string origin = req.get_header_value("Origin");
  if (origin.empty()) return false;
  auto scheme_end = origin.find("://");
  return scheme_end == std::string::npos || origin.substr(scheme_end + 3) != req.get_header_value("Host");
}

std::string csrf_refusal(const httplib::Request& req) {
  if (req.get_header_value(kConsoleHeader) != "1")
    return fmt::format("a request signed in by the console's cookie that changes something must carry the header "
                       "{}: 1", kConsoleHeader);
  if (from_other_origin(req))
    return fmt::format("a console request from another origin ({}) may not change anything",
                       req.get_header_value("Origin"));
  return {};
}

std::string login_cookie(const std::string& secret, bool tls) {
  return fmt::format("{}={}{}", kTokenCookie, hex_of(secret), cookie_attributes(tls));
}

std::string logout_cookie(bool tls) { return fmt::format("{}={}; Max-Age=0", kTokenCookie, cookie_attributes(tls)); }

}  // namespace jobctl::server
