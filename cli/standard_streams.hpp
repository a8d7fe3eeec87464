#pragma once
// jobctl's standard output as scripts rely on it: what could not be
// written (a full disk, a closed stdout) is an error, not a success with
// the output lost.
namespace jobctl::cli {

// Before anything is opened: a standard stream that is closed (`>&-`) is
// given a file, so that no store file or connection takes its number and
// receives what is printed. A closed stdout becomes /dev/full, whose
// every write fails, and is reported so by with_output_checked.
void guard_standard_streams();

// `code` once stdout is flushed; when a write to it failed, says so on
// stderr and returns 74 (EX_IOERR), unless `code` already says the
// command failed.
int with_output_checked(int code);

// Standard error carries what the command prints too, not only its
// messages (logs, run: a job's stderr): with_output_checked then returns
// 74 when a write to it failed as well (`jobctl logs ID 2>/dev/full`
// lost the job's stderr and exited 0, a tester).
void output_on_stderr();

}  // namespace jobctl::cli
