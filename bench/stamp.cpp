// jobctl_stamp FILE: the latency figure's job (scripts/bench). Writes the
// realtime clock in nanoseconds and a newline to FILE, first thing: the
// moment the job's process got control. It uses nothing but libc, so its
// own start-up (0.6 ms here; jobctl_bench, which loads the store's
// libraries, took 3.6 ms) adds next to nothing to the pickup it marks.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  if (argc != 2) {
    std::fputs("usage: jobctl_stamp FILE\n", stderr);
    return 2;
  }
  char text[32];
  const int n = std::snprintf(text, sizeof text, "%lld\n", static_cast<long long>(now.tv_sec) * 1'000'000'000LL + now.tv_nsec);
  const int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return 1;
  const bool ok = write(fd, text, static_cast<size_t>(n)) == n;
  return close(fd) == 0 && ok ? 0 : 1;
}
