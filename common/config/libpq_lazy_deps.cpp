// Part of the PostgreSQL client module (libjobctl-postgres.so; see
// common/CMakeLists.txt), not of the programs: the Kerberos (GSSAPI) and
// LDAP functions that Debian's static libpq calls, each library opened on
// its first call instead of at load.
//
// libpq.so.5 maps 22 libraries when it is loaded, most of them for LDAP
// (libldap, SASL, GnuTLS and its nine) and Kerberos; mapping them was
// about 2.5 ms of each jobctl command on PostgreSQL. libpq calls LDAP only
// for an ldap:// line in a service file, and GSSAPI only over TCP (to ask
// for a ticket with gssencmode=prefer) or for Kerberos authentication.
// Each function here forwards to the real one; where its library cannot
// be loaded it fails as the library would (GSS_S_FAILURE with a minor
// status of 0, no LDAP handle), and libpq reports that in its own words.
#define LDAP_DEPRECATED 1  // libpq calls ldap_init, ldap_simple_bind, ldap_search_st, ldap_unbind
#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gssapi/gssapi.h>
#include <ldap.h>

#include <cstdlib>
#include <string>

namespace {

template <const char* kSoname>
void* library() {
  static void* const handle = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);  // once, from any thread
  return handle;
}

template <class Function, const char* kSoname>
Function* find(const char* name) {
  void* handle = library<kSoname>();
  return handle ? reinterpret_cast<Function*>(dlsym(handle, name)) : nullptr;
}

constexpr char kGssapi[] = "libgssapi_krb5.so.2";
constexpr char kLdap[] = "libldap-2.5.so.0";

}  // namespace

#define JOBCTL_FORWARD(soname, ret, failed, name, params, args)         \
  extern "C" ret name params {                                          \
    static auto* const real = find<ret params, soname>(#name);          \
    if (!real) return failed;                                           \
    return real args;                                                   \
  }

// libpq calls gss_acquire_cred for one thing: over TCP, with gssencmode
// prefer (the default), to learn whether there is a Kerberos ticket to
// ask the server for GSSAPI encryption with. Loading the library and its
// six to answer costs each command 0.6 to 2 ms. Where Kerberos is not set
// up at all, the answer is known without them: none of the variables
// that point the library elsewhere is set, there is no /etc/krb5.conf to
// name another credentials cache or keytab, no other GSSAPI mechanism is
// installed, and neither the default credentials cache nor the default
// client keytab (MIT Kerberos's, as Debian builds it) exists. Then this
// answers as the library would, no credentials; else the library answers.
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

bool has_entries(const char* directory) {
  DIR* d = opendir(directory);
  if (!d) return false;
  bool found = false;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') found = true;
  closedir(d);
  return found;
}

bool kerberos_absent() {
  for (const char* name : {"KRB5CCNAME", "KRB5_CONFIG", "KRB5_CLIENT_KTNAME", "GSS_MECH_CONFIG", "GSS_USE_PROXY"})
    if (getenv(name)) return false;
  const std::string uid = std::to_string(getuid()), euid = std::to_string(geteuid());
  return !exists("/etc/krb5.conf") && !exists("/etc/gss/mech") && !has_entries("/etc/gss/mech.d") &&
         !exists("/tmp/krb5cc_" + uid) && !exists("/tmp/krb5cc_" + euid) &&
         !exists("/etc/krb5/user/" + euid + "/client.keytab");
}

}  // namespace

extern "C" OM_uint32 gss_acquire_cred(OM_uint32* minor, gss_name_t name, OM_uint32 time, gss_OID_set mechs,
                                      gss_cred_usage_t usage, gss_cred_id_t* cred, gss_OID_set* actual_mechs,
                                      OM_uint32* actual_time) {
  *minor = 0;
  if (usage == GSS_C_INITIATE && name == GSS_C_NO_NAME && kerberos_absent()) {
    *cred = GSS_C_NO_CREDENTIAL;
    if (actual_mechs) *actual_mechs = GSS_C_NO_OID_SET;
    if (actual_time) *actual_time = 0;
    return GSS_S_NO_CRED;
  }
  using Function = OM_uint32(OM_uint32*, gss_name_t, OM_uint32, gss_OID_set, gss_cred_usage_t, gss_cred_id_t*,
                             gss_OID_set*, OM_uint32*);
  static auto* const real = find<Function, kGssapi>("gss_acquire_cred");
  if (!real) return GSS_S_FAILURE;
  return real(minor, name, time, mechs, usage, cred, actual_mechs, actual_time);
}
JOBCTL_FORWARD(kGssapi, OM_uint32, (*minor = 0, GSS_S_FAILURE), gss_delete_sec_context,
               (OM_uint32 * minor, gss_ctx_id_t* context, gss_buffer_t token), (minor, context, token))
JOBCTL_FORWARD(kGssapi, OM_uint32, (*minor = 0, GSS_S_FAILURE), gss_display_status,
               (OM_uint32 * minor, OM_uint32 status, int type, gss_OID mech, OM_uint32* more, gss_buffer_t text),
               (minor, status, type, mech, more, text))
JOBCTL_FORWARD(kGssapi, OM_uint32, (*minor = 0, GSS_S_FAILURE), gss_import_name,
               (OM_uint32 * minor, gss_buffer_t text, gss_OID type, gss_name_t* name), (minor, text, type, name))
JOBCTL_FORWARD(kGssapi, OM_uint32, (*minor = 0, GSS_S_FAILURE), gss_init_sec_context,
               (OM_uint32 * minor, gss_cred_id_t cred, gss_ctx_id_t* context, gss_name_t target, gss_OID mech,
                OM_uint32 flags, OM_uint32 time, gss_channel_bindings_t bindings, gss_buffer_t input,
                gss_OID* actual_mech, gss_buffer_t output, OM_uint32* actual_flags, OM_uint32* actual_time),
               (minor, cred, context, target, mech, flags, time, bindings, input, actual_mech, output, actual_flags,
                actual_time))
JOBCTL_FORWARD(kGssapi, OM_uint32, (*minor = 0, GSS_S_FAILURE), gss_release_buffer, (OM_uint32 * minor, gss_buffer_t buffer),
               (minor, buffer))
JOBCTL_FORWARD(kGssapi, OM_uint32, (*minor = 0, GSS_S_FAILURE), gss_release_cred, (OM_uint32 * minor, gss_cred_id_t* cred),
               (minor, cred))
JOBCTL_FORWARD(kGssapi, OM_uint32, (*minor = 0, GSS_S_FAILURE), gss_release_name, (OM_uint32 * minor, gss_name_t* name),
               (minor, name))
JOBCTL_FORWARD(kGssapi, OM_uint32, (*minor = 0, GSS_S_FAILURE), gss_unwrap,
               (OM_uint32 * minor, gss_ctx_id_t context, gss_buffer_t input, gss_buffer_t output, int* confidential,
                gss_qop_t* qop),
               (minor, context, input, output, confidential, qop))
JOBCTL_FORWARD(kGssapi, OM_uint32, (*minor = 0, GSS_S_FAILURE), gss_wrap,
               (OM_uint32 * minor, gss_ctx_id_t context, int confidential, gss_qop_t qop, gss_buffer_t input,
                int* done_confidential, gss_buffer_t output),
               (minor, context, confidential, qop, input, done_confidential, output))
JOBCTL_FORWARD(kGssapi, OM_uint32, (*minor = 0, GSS_S_FAILURE), gss_wrap_size_limit,
               (OM_uint32 * minor, gss_ctx_id_t context, int confidential, gss_qop_t qop, OM_uint32 output_size,
                OM_uint32* input_size),
               (minor, context, confidential, qop, output_size, input_size))

// RFC 2744's name type of a host-based service (1.2.840.113554.1.2.1.4),
// which libgssapi_krb5 exports as data: no first call could bring it, so
// it is defined here. GSSAPI compares name types by value.
namespace {
gss_OID_desc host_based_service{10, const_cast<char*>("\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x04")};
}  // namespace
extern "C" {
gss_OID GSS_C_NT_HOSTBASED_SERVICE = &host_based_service;
}

// Every LDAP call but the first two needs the handle ldap_init gives, so
// their failures are never seen: they are the library's own error values.
JOBCTL_FORWARD(kLdap, LDAP*, nullptr, ldap_init, (LDAP_CONST char* host, int port), (host, port))
JOBCTL_FORWARD(kLdap, char*, const_cast<char*>("the LDAP library (libldap-2.5.so.0) cannot be loaded"),
               ldap_err2string, (int error), (error))
JOBCTL_FORWARD(kLdap, int, -1, ldap_count_entries, (LDAP * ld, LDAPMessage* chain), (ld, chain))
JOBCTL_FORWARD(kLdap, LDAPMessage*, nullptr, ldap_first_entry, (LDAP * ld, LDAPMessage* chain), (ld, chain))
JOBCTL_FORWARD(kLdap, struct berval**, nullptr, ldap_get_values_len,
               (LDAP * ld, LDAPMessage* entry, LDAP_CONST char* attribute), (ld, entry, attribute))
JOBCTL_FORWARD(kLdap, int, LDAP_OTHER, ldap_msgfree, (LDAPMessage * message), (message))
JOBCTL_FORWARD(kLdap, int, -1, ldap_result,
               (LDAP * ld, int id, int all, struct timeval* timeout, LDAPMessage** result),
               (ld, id, all, timeout, result))
JOBCTL_FORWARD(kLdap, int, LDAP_OTHER, ldap_search_st,
               (LDAP * ld, LDAP_CONST char* base, int scope, LDAP_CONST char* filter, char** attributes,
                int attributes_only, struct timeval* timeout, LDAPMessage** result),
               (ld, base, scope, filter, attributes, attributes_only, timeout, result))
JOBCTL_FORWARD(kLdap, int, LDAP_OPT_ERROR, ldap_set_option, (LDAP * ld, int option, LDAP_CONST void* value),
               (ld, option, value))
JOBCTL_FORWARD(kLdap, int, -1, ldap_simple_bind, (LDAP * ld, LDAP_CONST char* who, LDAP_CONST char* password),
               (ld, who, password))
JOBCTL_FORWARD(kLdap, int, LDAP_OTHER, ldap_unbind, (LDAP * ld), (ld))

extern "C" void ldap_value_free_len(struct berval** values) {
  static auto* const real = find<void(struct berval**), kLdap>("ldap_value_free_len");
  if (real) real(values);
}
