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

void send_error(httplib::Response& res, const Error& e);

}  // namespace jobctl::server
