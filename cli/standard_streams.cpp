#include "cli/standard_streams.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace jobctl::cli {
namespace {

bool stdout_was_closed = false;
bool stderr_is_output = false;

constexpr int kOutputFailed = 74;  // EX_IOERR, as sysexits.h has it

// Whether stdout is a pipe whose reader has closed it: its write end then
// polls as an error. (The failed write itself may be long past: stdio
// drops what it could not write, and a later fflush succeeds.)
bool reader_gone() {
  pollfd p{STDOUT_FILENO, POLLOUT, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;
}

}  // namespace

void guard_standard_streams() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int opened = open(fd == 1 ? "/dev/full" : "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (opened >= 0 && opened != fd) {  // a lower one was closed too and took it: dup into place
      dup2(opened, fd);
      close(opened);
    }
    if (fd == 1) stdout_was_closed = true;
  }
}

void output_on_stderr() { stderr_is_output = true; }

int with_output_checked(int code) {
  // What could not be written to stderr cannot be said there either.
  if (stderr_is_output && (std::fflush(stderr) != 0 || std::ferror(stderr))) return code == 0 ? kOutputFailed : code;
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && !std::ferror(stdout)) return code;
  const int error = errno;
  if (reader_gone()) return code == 0 ? kOutputFailed : code;  // its reader left (jobctl run | head): said by SIGPIPE
  if (stdout_was_closed) {
    std::fprintf(stderr, "jobctl: error: standard output is closed: the output is lost\n");
    std::fprintf(stderr, "hint: send it to a file, or to /dev/null to discard it\n");
  } else {
    std::fprintf(stderr, "jobctl: error: cannot write the output: %s\n",
                 !flushed && error != 0 ? std::strerror(error) : "a write to standard output failed");
    std::fprintf(stderr, "hint: check the file or pipe standard output goes to (a full disk?)\n");
  }
  return code == 0 ? kOutputFailed : code;
}

}  // namespace jobctl::cli
