#pragma once
// Errors as RFC 9457 problem details (application/problem+json), with the
// message and hint jobctl prints and the HTTP status of its exit code.
#include <string>

#include <httplib.h>

#include "common/util/error.hpp"

namespace jobctl::server {

// 2 → 400, 3 → 404, 4 → 409, 5 → 503, 6 → 412, anything else 500.
int status_of(ExitCode code);

// Sets the response to a problem: {"type", "title", "status", "detail",
// "hint" (when there is one), "exit_code" (the CLI's, when there is one)}.
void send_problem(httplib::Response& res, int status, const std::string& detail, const std::string& hint = {},
                  int exit_code = 0);

// Exit 2 for what a request's headers say (If-Match): 400 even when its
// body is well-formed JSON.
class HeaderError : public Error {
 public:
  HeaderError(std::string message, std::string hint) : Error(ExitCode::usage, std::move(message), std::move(hint)) {}
};

// The problem of `e` as the answer to `req`: status_of(), except that
// exit 2 for a request whose body is well-formed JSON is 422.
void send_error(const httplib::Request& req, httplib::Response& res, const Error& e);

}  // namespace jobctl::server
