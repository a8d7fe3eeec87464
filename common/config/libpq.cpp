#include "common/config/libpq.hpp"

#include <string>
#include <vector>

#include "common/util/program_directory.hpp"
#include "common/util/shared_library.hpp"

namespace jobctl::config {
namespace {

constexpr const char* kModule = "libjobctl-postgres.so";

Libpq load() {
  const auto directory = util::program_directory();
  std::vector<std::string> names;
  if (!directory.empty()) names.push_back((directory.parent_path() / "lib/jobctl" / kModule).string());
  // A program run away from its installation (copied elsewhere) uses the
  // system's libpq: the same functions, 2.5 ms slower to load.
  names.push_back("libpq.so.5");
  const auto lib = util::open_library(names, ExitCode::store, "the PostgreSQL client",
                                      "reinstall jobctl (the module is lib/jobctl/" + std::string(kModule) +
                                          " beside its bin/), install libpq5 (14 or later), or use a sqlite: DSN");
  const char* found = lib.name.c_str();
  Libpq f;
  // Only the system's libpq can be too old (14 brought pipeline mode).
#define JOBCTL_LIBPQ_LOAD(name)                                                                   \
  f.name = reinterpret_cast<decltype(&::name)>(util::library_symbol(                              \
      lib.handle, found, #name, ExitCode::store, "install libpq5 14 or later, or reinstall jobctl"));
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
