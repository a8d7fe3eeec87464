#pragma once
// The error rule of the whole tree, stated once:
//
// * Anything a user can cause (bad flag value, unknown id, unreachable store,
//   a job in the wrong state) is thrown as jobctl::Error carrying the exit
//   code the command must end with. The message names the bad value; the
//   hint says how to fix it.
// * Each main catches Error exactly once, prints "jobctl: error: MESSAGE"
//   (and "hint: HINT" on the next line when there is one) and exits with
//   the code. Nothing below a main prints errors or calls exit().
// * Functions that can legitimately find nothing return std::optional;
//   they throw only for failures.
// * Store drivers translate database failures into Error with
//   ExitCode::store (connection, schema) or ExitCode::internal (a query the
//   program got wrong), with the failing statement as context.
#include <stdexcept>
#include <string>

namespace jobctl {

// Exit codes shared by jobctl and jobagent; documented in jobctl(1).
enum class ExitCode : int {
  ok = 0,
  job_failed = 1,      // wait/submit --wait: the job ended failed, dead or cancelled
  check_failed = 1,    // check: a threshold is breached
  usage = 2,           // bad flag, bad value, malformed input
  not_found = 3,       // no job or run with that id
  invalid_state = 4,   // e.g. cancel of a job that already finished
  store = 5,           // store unreachable, schema missing or too old
  conflict = 6,        // reserved for optimistic-concurrency conflicts
  internal = 70,       // a bug: please report it
  timeout = 124,       // wait --timeout elapsed
};

namespace detail {
// `text` with each NUL written \x00, as util::show_bytes writes it.
// what() is a C string, so a NUL in a message would end it: a value quoted
// through show_bytes has none left, and this keeps any other from cutting
// its message short.
// (A plain loop: GCC 12 at -O3 took string::find('\0') for a read of
// uninitialised memory, -Wmaybe-uninitialized, and scripts/bench's
// build stopped there.)
inline std::string visible_nul(std::string text) {
  bool any = false;
  for (char c : text) any = any || c == '\0';
  if (!any) return text;
  std::string out;
  for (char c : text) {
    if (c == '\0') out += "\\x00";
    else out += c;
  }
  return out;
}
}  // namespace detail

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, std::string message, std::string hint = {})
      : std::runtime_error(detail::visible_nul(std::move(message))), code_(code),
        hint_(detail::visible_nul(std::move(hint))) {}

  ExitCode code() const { return code_; }
  const std::string& hint() const { return hint_; }
  // The message, then the hint after "; ": for a place that keeps one line.
  std::string with_hint() const { return hint_.empty() ? std::string(what()) : std::string(what()) + "; " + hint_; }

 private:
  ExitCode code_;
  std::string hint_;
};

// Shorthand for the most common case: the user gave a bad value.
inline Error usage_error(std::string message, std::string hint = {}) {
  return Error(ExitCode::usage, std::move(message), std::move(hint));
}

}  // namespace jobctl
