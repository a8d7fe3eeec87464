#include "common/config/libpq.hpp"

#include <string>
#include <vector>

#include "common/util/program_directory.hpp"
#include "common/util/shared_library.hpp"

namespace jobctl::config {
namespace {

constexpr const char* kModule = "libjobctl-postgres.so";
constexpr const char* kHint = "it is installed with jobctl, in lib/jobctl/ beside its bin/: reinstall jobctl "
                              "(or install libpq5), or use a sqlite: DSN";

Libpq load() {
  const auto directory = util::program_directory();
  std::vector<std::string> names;
  if (!directory.empty()) names.push_back((directory.parent_path() / "lib/jobctl" / kModule).string());
  // A program run away from its installation (copied elsewhere) uses the
  // system's libpq: the same functions, 2.5 ms slower to load.
  names.push_back("libpq.so.5");
  void* lib = util::open_library(names, ExitCode::store, "the PostgreSQL client module", kHint);
  Libpq f;
#define JOBCTL_LIBPQ_LOAD(name)                                                                                  \
  f.name = reinterpret_cast<decltype(&::name)>(util::library_symbol(lib, kModule, #name, ExitCode::store, kHint));
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
