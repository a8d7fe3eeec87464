#pragma once
// The PostgreSQL client, loaded when a PostgreSQL DSN first needs it rather
// than linked: libpq and OpenSSL cost a command about 2 ms of start-up,
// which a command on SQLite, or one that never opens a store (--version,
// --help, completions), should not pay. It is jobctl's own module,
// libjobctl-postgres.so in lib/jobctl/ beside the programs' bin/: libpq
// with Kerberos and LDAP opened only when first called (built in
// common/CMakeLists.txt). Call its functions as libpq().PQexec(...); the
// types and constants are libpq-fe.h's own.
#include <libpq-fe.h>

namespace jobctl::config {

#define JOBCTL_LIBPQ_FUNCTIONS(X)                                                                           \
  X(PQcmdTuples) X(PQclear) X(PQconnectdbParams) X(PQconninfoFree) X(PQconninfoParse) X(PQconsumeInput)     \
  X(PQenterPipelineMode) X(PQexitPipelineMode) X(PQpipelineSync)                                           \
  X(PQerrorMessage) X(PQexec) X(PQfinish) X(PQflush) X(PQfreemem) X(PQftype) X(PQgetResult) X(PQgetisnull) \
  X(PQgetlength) X(PQgetvalue) X(PQisBusy) X(PQnfields) X(PQnotifies) X(PQntuples) X(PQresultErrorField)    \
  X(PQresultErrorMessage) X(PQresultStatus) X(PQsendPrepare) X(PQsendQuery) X(PQsendQueryParams)           \
  X(PQsendQueryPrepared) X(PQsetNoticeProcessor) X(PQsetnonblocking) X(PQsocket) X(PQstatus)

struct Libpq {
#define JOBCTL_LIBPQ_MEMBER(name) decltype(&::name) name = nullptr;
  JOBCTL_LIBPQ_FUNCTIONS(JOBCTL_LIBPQ_MEMBER)
#undef JOBCTL_LIBPQ_MEMBER
};

// The module, loaded on the first call (from any thread); libpq.so.5 for
// a program away from its installation. Throws a store Error (exit 5)
// saying what to install when neither can be loaded.
const Libpq& libpq();

}  // namespace jobctl::config
