#include "common/util/shared_library.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

namespace jobctl::util {

void* open_library(const char* soname, ExitCode code, const std::string& what, const std::string& hint) {
  void* library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!library) throw Error(code, fmt::format("cannot load {}: {}", what, dlerror()), hint);
  return library;
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
