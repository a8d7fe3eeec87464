#pragma once
// Where the running program's file is, to find what is installed beside
// it: jobctl-serve next to jobctl, the PostgreSQL client module in
// ../lib/jobctl/ (common/config/libpq.cpp).
#include <filesystem>

namespace jobctl::util {

// The directory of /proc/self/exe (symbolic links followed), or an empty
// path where /proc is not mounted (a chroot, say).
std::filesystem::path program_directory();

}  // namespace jobctl::util
