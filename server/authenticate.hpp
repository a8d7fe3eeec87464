#pragma once
// Who is calling jobctl serve: a Bearer token in the Authorization header,
// or the console's cookie holding the same token (set by /ui/?token=…).
// A request authenticated by the cookie that changes something must also
// prove it comes from the console's own pages (CSRF): see csrf_refusal.
#include <optional>
#include <string>

#include <httplib.h>

#include "server/tokens.hpp"

namespace jobctl::server {

inline constexpr const char* kTokenCookie = "jobctl_token";
// The header the console's pages send with every API request. A cross-site
// form cannot set it, and a cross-site script cannot without a CORS
// preflight, which this server never grants.
inline constexpr const char* kConsoleHeader = "X-Jobctl-Console";

struct Caller {
  Token token;
  bool by_cookie = false;
};

std::optional<Caller> authenticate(const httplib::Request& req, const Tokens& tokens);

// Whether the request's Origin header (browsers send it with every POST,
// PATCH and DELETE) names another site than this server.
bool from_other_origin(const httplib::Request& req);

// Why a cookie-authenticated request may not change anything ("" when it
// may): it lacks the console's header, or comes from another origin.
std::string csrf_refusal(const httplib::Request& req);

// The Set-Cookie values that log the console in with `secret` (HttpOnly,
// SameSite=Strict, Secure over TLS) and out again.
std::string login_cookie(const std::string& secret, bool tls);
std::string logout_cookie(bool tls);

}  // namespace jobctl::server
