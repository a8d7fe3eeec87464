#include "agent/libcurl.hpp"

#include <fmt/format.h>

#include "common/util/error.hpp"
#include "common/util/shared_library.hpp"

namespace jobctl::agent {
namespace {

// The soname of libcurl since 7.16: its ABI only grows. Debian's libcurl4
// (OpenSSL) installs it; libcurl3-gnutls has another soname.
constexpr const char* kSoname = "libcurl.so.4";

Libcurl load() {
  void* lib = util::open_library({kSoname}, ExitCode::store, "libcurl, which webhook jobs need",
                                 "install it (Debian: apt-get install libcurl4)")
                  .handle;
  Libcurl f;
#define JOBCTL_LIBCURL_LOAD(name)                                                                                \
  f.name = reinterpret_cast<decltype(&::name)>(                                                                  \
      util::library_symbol(lib, kSoname, #name, ExitCode::store, "install libcurl 7.85 or later (Debian 12: libcurl4)"));
  JOBCTL_LIBCURL_FUNCTIONS(JOBCTL_LIBCURL_LOAD)
#undef JOBCTL_LIBCURL_LOAD
  if (CURLcode rc = f.curl_global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK)
    throw Error(ExitCode::internal, fmt::format("curl_global_init failed: {}", f.curl_easy_strerror(rc)));
  return f;  // the library stays loaded for the life of the process
}

}  // namespace

const Libcurl& libcurl() {
  static const Libcurl loaded = load();  // a failed load throws, and the next call tries again
  return loaded;
}

}  // namespace jobctl::agent
