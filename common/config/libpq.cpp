#include "common/config/libpq.hpp"

#include "common/util/shared_library.hpp"

namespace jobctl::config {
namespace {

// The soname of every libpq since PostgreSQL 8.0: its ABI only grows.
constexpr const char* kSoname = "libpq.so.5";

Libpq load() {
  void* lib = util::open_library(kSoname, ExitCode::store, "the PostgreSQL client library",
                                 "install it (Debian: apt-get install libpq5), or use a sqlite: DSN");
  Libpq f;
#define JOBCTL_LIBPQ_LOAD(name)                                                                                  \
  f.name = reinterpret_cast<decltype(&::name)>(                                                                  \
      util::library_symbol(lib, kSoname, #name, ExitCode::store, "install libpq 14 or later (Debian 12: libpq5)"));
  JOBCTL_LIBPQ_FUNCTIONS(JOBCTL_LIBPQ_LOAD)
#undef JOBCTL_LIBPQ_LOAD
  return f;  // the library stays loaded for the life of the process
}

}  // namespace

const Libpq& libpq() {
  static const Libpq loaded = load();  // a failed load throws, and the next call tries again
  return loaded;
}

}  // namespace jobctl::config
