#pragma once
// Libraries opened with dlopen when first needed rather than linked, so
// that the programs and commands that never use them do not pay for
// loading them (and what they bring): the PostgreSQL client module
// (common/config/libpq.hpp) and the agent's libcurl (agent/libcurl.hpp).
// Each keeps its own table of the functions it uses; these open the
// library and find them.
#include <string>
#include <vector>

#include "common/util/error.hpp"

namespace jobctl::util {

struct OpenedLibrary {
  void* handle;
  std::string name;  // which of the names it is
};

// The first of `names` (sonames or paths) that opens, opened RTLD_NOW |
// RTLD_LOCAL for the life of the process, or Error(code, "cannot load
// WHAT: <each one's dlerror>", hint).
OpenedLibrary open_library(const std::vector<std::string>& names, ExitCode code, const std::string& what,
                           const std::string& hint);

// The address of `name` in `library` (opened as `soname`), or closes it and
// throws Error(code, "the SONAME found has no NAME", hint): a version too old.
void* library_symbol(void* library, const char* soname, const char* name, ExitCode code, const std::string& hint);

}  // namespace jobctl::util
