#pragma once
// How jobctl opens a PostgreSQL connection and bounds every wait on it, for
// the store's connection and the agents' LISTEN connection alike.
//
// Connecting gives up after connect_timeout (10 s unless the DSN sets its
// own), TCP keepalives and tcp_user_timeout notice a peer that vanished,
// and the server cancels a statement after the store timeout. A server
// that is frozen (SIGSTOP, a hung host) still acknowledges TCP, so none of
// those fire: the driver also waits for every answer with a deadline of
// its own (wait_for_result).

#include <string>

#include "common/config/libpq.hpp"

namespace jobctl::store {

// Opens a connection to `dsn` (jobctl's form: see config::postgres_target
// for its schema) with the defaults above (the DSN's own settings win) and
// notices silenced. Never null; check PQstatus.
PGconn* connect_postgres(const std::string& dsn);

}  // namespace jobctl::store
