#pragma once
// libcurl, loaded when the agent starts its first webhook rather than
// linked: libcurl and what it brings (OpenSSL, GnuTLS, Kerberos, LDAP, SSH,
// HTTP/2: some twenty libraries, about 4 MB resident) would otherwise be
// mapped by every agent, most of which only run commands. Call its
// functions as libcurl().curl_easy_init(...); the types and constants are
// curl.h's own.
#include <curl/curl.h>

namespace jobctl::agent {

#define JOBCTL_LIBCURL_FUNCTIONS(X)                                                                            \
  X(curl_global_init) X(curl_easy_init) X(curl_easy_setopt) X(curl_easy_getinfo) X(curl_easy_header)           \
  X(curl_easy_reset) X(curl_easy_cleanup) X(curl_easy_strerror) X(curl_getdate) X(curl_slist_append)           \
  X(curl_slist_free_all) X(curl_multi_init) X(curl_multi_setopt) X(curl_multi_add_handle)                      \
  X(curl_multi_remove_handle) X(curl_multi_socket_action) X(curl_multi_info_read) X(curl_multi_strerror)       \
  X(curl_multi_cleanup)

struct Libcurl {
#define JOBCTL_LIBCURL_MEMBER(name) decltype(&::name) name = nullptr;
  JOBCTL_LIBCURL_FUNCTIONS(JOBCTL_LIBCURL_MEMBER)
#undef JOBCTL_LIBCURL_MEMBER
};

// libcurl.so.4, loaded and initialised (curl_global_init) on the first
// call, from any thread. Throws an Error saying how to install it when it
// cannot be loaded: the webhook fails, and is retried, as for any trouble
// of the agent's own.
const Libcurl& libcurl();

}  // namespace jobctl::agent
