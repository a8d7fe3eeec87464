#pragma once
// The measuring tools of jobctl_bench: clocks, child processes with bounded
// waits, CPU time read from /proc, percentiles.
//
// Failures a benchmark cannot go on from throw jobctl::Error; "not there"
// (a process already gone, no PostgreSQL server to watch) is an empty
// optional.
#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/util/percentile.hpp"

namespace jobctl::bench {

using std::chrono::milliseconds;
using Args = std::vector<std::string>;

// A result line on stdout: KEY=VALUE.
void put(const char* key, double value);
// args[i] as a non-negative number; throws usage Error naming `what`.
double number(const Args& args, size_t i, const char* what);

int64_t realtime_ns();   // CLOCK_REALTIME: comparable between processes
int64_t monotonic_ns();  // CLOCK_MONOTONIC: intervals inside one process
double seconds_since(int64_t monotonic_start_ns);
void sleep_ms(double ms);

// Starts argv[0] (PATH searched) with our environment; its stdout and
// stderr go to `output` (created or truncated), its stdin is /dev/null.
// Throws Error when it cannot start.
pid_t start_process(const std::vector<std::string>& argv, const std::string& output);

struct Exit {
  int status = 0;    // as from waitpid
  rusage usage{};    // the child's CPU, including its reaped children
};

// Waits at most `limit` for `pid` to end and reaps it; empty on timeout.
std::optional<Exit> wait_process(pid_t pid, milliseconds limit);
// SIGTERM, up to `grace` for it to end, then SIGKILL; always reaps.
Exit stop_process(pid_t pid, milliseconds grace);
// "exit 3" / "signal 9" for messages.
std::string describe_exit(int status);

// CPU seconds of one live process, from /proc/PID/stat.
struct CpuTimes {
  double self = 0;      // utime + stime
  double children = 0;  // cutime + cstime: its reaped children
};
std::optional<CpuTimes> cpu_of(pid_t pid);

// CPU seconds a PostgreSQL server has used so far: its live backends plus
// the ones the postmaster reaped. Empty without a postmaster pid (the
// script passes it in JOBCTL_BENCH_PG_PID; unset for SQLite).
std::optional<double> server_cpu();

double rusage_cpu(const rusage& u);  // user + system seconds

using util::percentile;  // common/util/percentile.hpp

}  // namespace jobctl::bench
