#pragma once
// Reading what a user points a command at: a file, or standard input.
#include <string>

namespace jobctl::cli {

// The bytes of `path`, or of standard input for "-". Throws usage Error
// naming `what` (the flag or argument) when the file cannot be read.
std::string read_input(const std::string& path, const std::string& what);

}  // namespace jobctl::cli
