#include "common/util/shared_library.hpp"

#include <dlfcn.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace jobctl::util {

OpenedLibrary open_library(const std::vector<std::string>& names, ExitCode code, const std::string& what,
                           const std::string& hint) {
  std::vector<std::string> reasons;
  for (const auto& name : names) {
    if (void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return {library, name};
    reasons.emplace_back(dlerror());
  }
  throw Error(code, fmt::format("cannot load {}: {}", what, fmt::join(reasons, "; ")), hint);
}

void* library_symbol(void* library, const char* soname, const char* name, ExitCode code, const std::string& hint) {
  void* symbol = dlsym(library, name);
  if (!symbol) {
    dlclose(library);
    throw Error(code, fmt::format("the {} found has no {}", soname, name), hint);
  }
  return symbol;
}

}  // namespace jobctl::util
