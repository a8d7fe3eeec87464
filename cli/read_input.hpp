#pragma once
// Reading what a user points a command at: a file, or standard input.
#include <fstream>
#include <string>

namespace jobctl::cli {

// The bytes of `path`, or of standard input for "-". Throws usage Error
// naming `what` (the flag or argument) when the file cannot be read.
std::string read_input(const std::string& path, const std::string& what);
// The file at `path`, open for reading; throws usage Error (naming `what`)
// when it cannot be read or is a directory.
std::ifstream open_input(const std::string& path, const std::string& what);

// A flag's value: "@FILE" reads the file ("@-" standard input), anything
// else is the text itself (--payload, --data, --checkpoint).
std::string text_or_file(const std::string& arg, const std::string& flag);

}  // namespace jobctl::cli
