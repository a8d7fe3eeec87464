#pragma once
// Errors as RFC 9457 problem details (application/problem+json), with the
// message and hint jobctl prints and the HTTP status of its exit code.
#include <string>

#include <httplib.h>

#include "common/jobdef/fields.hpp"
#include "common/util/error.hpp"

namespace jobctl::server {

// 2 → 400, 3 → 404, 4 → 409, 5 → 503, 6 → 412, anything else 500.
int status_of(ExitCode code);

// Sets the response to a problem: {"type", "title", "status", "detail",
// "hint" (when there is one), "exit_code" (the CLI's, when there is one)}.
void send_problem(httplib::Response& res, int status, const std::string& detail, const std::string& hint = {},
                  int exit_code = 0);

// Exit 2 for what a well-formed JSON body asks: 422 Unprocessable Content.
// Any other exit 2 (a body that is not JSON, a path, a query, a header)
// is 400.
class BodyError : public Error {
 public:
  explicit BodyError(const Error& e) : Error(e) {}
};

// Runs `read`, which interprets a body already parsed as JSON: its exit-2
// errors are the body's, naming fields by their keys.
template <class F>
auto from_body(F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const BodyError&) {
    throw;
  } catch (const Error& e) {
    if (e.code() != ExitCode::usage) throw;
    throw BodyError(jobdef::in_line_terms(e));  // a body names the fields by their keys
  }
}

// The problem of `e`: status_of(), and 422 for a BodyError.
void send_error(httplib::Response& res, const Error& e);

}  // namespace jobctl::server
