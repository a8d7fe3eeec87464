// Before any header: with _FORTIFY_SOURCE, <poll.h> makes poll an inline
// wrapper, which this file's poll would redefine.
#undef _FORTIFY_SOURCE
#include "server/read_deadline.hpp"

#include <poll.h>

#include <cerrno>
#include <ctime>
#include <optional>

namespace jobctl::server {
namespace {

thread_local std::optional<std::chrono::steady_clock::time_point> t_deadline;

}  // namespace

void start_reading(std::chrono::steady_clock::duration budget) {
  t_deadline = std::chrono::steady_clock::now() + budget;
}

void done_reading() { t_deadline.reset(); }

}  // namespace jobctl::server

// poll(2) as cpp-httplib (a shared library) calls it: the libc call, on
// ppoll, with the wait cut at this thread's deadline.
extern "C" int poll(struct pollfd* fds, nfds_t count, int timeout_ms) {
  using namespace std::chrono;
  const auto& deadline = jobctl::server::t_deadline;
  if (deadline) {
    const auto left = duration_cast<milliseconds>(*deadline - steady_clock::now()).count();
    if (left <= 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    if (timeout_ms < 0 || timeout_ms > left) timeout_ms = static_cast<int>(left);
  }
  if (timeout_ms < 0) return ppoll(fds, count, nullptr, nullptr);
  const timespec wait{timeout_ms / 1000, (timeout_ms % 1000) * 1'000'000L};
  return ppoll(fds, count, &wait, nullptr);
}
