// Before any header: with _FORTIFY_SOURCE, <poll.h> makes poll an inline
// wrapper, which this file's poll would redefine.
#undef _FORTIFY_SOURCE
#include "server/read_deadline.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <ctime>
#include <optional>

namespace jobctl::server {
namespace {

thread_local std::optional<std::chrono::steady_clock::time_point> t_deadline;
thread_local bool t_expired = false;
// Waiting for a request to begin (a new connection, or the keep-alive wait
// after an answer): no byte of it read yet.
thread_local bool t_idle = false;
std::atomic<bool> g_stopping{false};

}  // namespace

void start_reading(std::chrono::steady_clock::duration budget) {
  t_deadline = std::chrono::steady_clock::now() + budget;
  t_expired = false;
  t_idle = true;
}

void done_reading() { t_deadline.reset(); }

bool reading_expired() { return t_expired; }

void stop_waiting() { g_stopping = true; }

}  // namespace jobctl::server

// poll(2) as cpp-httplib (a shared library) calls it: the libc call, on
// ppoll, with the wait cut at this thread's deadline. Over TLS, OpenSSL
// reads a record in blocking read(2) calls after a single poll: each
// socket's receive timeout is cut at the deadline too, and read (below)
// fails once it has passed.
extern "C" int poll(struct pollfd* fds, nfds_t count, int timeout_ms) {
  using namespace std::chrono;
  static constexpr timespec kNow{0, 0};
  const auto& deadline = jobctl::server::t_deadline;
  bool cut = false;  // the wait ends at the deadline
  if (deadline) {
    const auto left = duration_cast<milliseconds>(*deadline - steady_clock::now()).count();
    if (left <= 0) {
      jobctl::server::t_expired = true;
      errno = ETIMEDOUT;
      return -1;
    }
    if (timeout_ms < 0 || timeout_ms >= left) {
      timeout_ms = static_cast<int>(left);
      cut = true;
    }
    // Stopping: a connection waiting for a request that has not begun is
    // closed, not waited for (the read fails; ECONNABORTED, as the server
    // closes it). A request under way is read to its end.
    if (jobctl::server::g_stopping && jobctl::server::t_idle && ppoll(fds, count, &kNow, nullptr) == 0) {
      errno = ECONNABORTED;
      return -1;
    }
    const timeval receive{static_cast<time_t>(left / 1000), static_cast<suseconds_t>((left % 1000) * 1000)};
    for (nfds_t i = 0; i < count; ++i) setsockopt(fds[i].fd, SOL_SOCKET, SO_RCVTIMEO, &receive, sizeof receive);
  }
  if (timeout_ms < 0) return ppoll(fds, count, nullptr, nullptr);
  const timespec wait{timeout_ms / 1000, (timeout_ms % 1000) * 1'000'000L};
  const int ready = ppoll(fds, count, &wait, nullptr);
  // A wait cut at the deadline that saw nothing: the budget ran out.
  if (ready == 0 && cut) jobctl::server::t_expired = true;
  if (ready > 0) jobctl::server::t_idle = false;  // the request's first bytes
  return ready;
}

// read(2) as OpenSSL (a shared library) calls it for a TLS connection: it
// reads a whole record in blocking reads after one poll, so a client
// sending a record a byte at a time never met the deadline there. On a
// thread past its deadline it fails (ETIMEDOUT, which OpenSSL does not
// retry); any other thread reads as it always did.
extern "C" ssize_t read(int fd, void* buf, size_t count) {
  const auto& deadline = jobctl::server::t_deadline;
  if (deadline && std::chrono::steady_clock::now() >= *deadline) {
    jobctl::server::t_expired = true;
    errno = ETIMEDOUT;
    return -1;
  }
  return syscall(SYS_read, fd, buf, count);
}
