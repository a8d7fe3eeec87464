#pragma once
// Reading what a user points a command at: a file, or standard input.
#include <cstddef>
#include <string>

namespace jobctl::cli {

// The most jobctl reads of a file (jobctl(1), DESCRIPTION), so that /dev/zero or
// a mistaken file is refused rather than read until memory runs out.
struct ReadLimit {
  size_t bytes;
  const char* instead;  // the hint: where content this large belongs
};
// A flag's @FILE (--payload, --data, --checkpoint): far more than any of
// them may hold once parsed and compacted.
inline constexpr ReadLimit kValueFileLimit{16u << 20, "the value itself may be at most 1 MiB: pass large data by "
                                                      "reference (a path or URL) instead"};
// A DAG document or a crontab.
inline constexpr ReadLimit kDocumentLimit{64u << 20, "check the path: a DAG or crontab this large is not one"};
// A batch for submit --file.
inline constexpr ReadLimit kBatchLimit{256u << 20, "split the batch into files of fewer jobs"};

// The bytes of `path`, or of standard input for "-", at most limit.bytes.
// Throws usage Error naming `what` (the flag or argument) when the file
// cannot be read or holds more.
std::string read_input(const std::string& path, const std::string& what, const ReadLimit& limit);

// A flag's value: "@FILE" reads the file ("@-" standard input), anything
// else is the text itself (--payload, --data, --checkpoint).
std::string text_or_file(const std::string& arg, const std::string& flag);

}  // namespace jobctl::cli
