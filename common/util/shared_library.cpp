#include "common/util/shared_library.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

namespace jobctl::util {

void* open_library(const std::vector<std::string>& names, ExitCode code, const std::string& what,
                   const std::string& hint) {
  std::string first_reason;
  for (const auto& name : names) {
    if (void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
    if (first_reason.empty()) first_reason = dlerror();
  }
  throw Error(code, fmt::format("cannot load {}: {}", what, first_reason), hint);
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
