#include "common/store/postgres_session.hpp"

#include <algorithm>
#include <string>

#include "common/config/dsn.hpp"
#include "common/config/libpq.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {
namespace {

using config::libpq;

void ignore_notice(void*, const char*) {}

}  // namespace

PGconn* connect_postgres(const std::string& dsn) {
  // Keywords are applied in order and the DSN (expanded from dbname) comes
  // after them, so a DSN that sets any of these keeps its own value; the
  // options that select jobctl's schema (they include the DSN's own) last.
  const auto target = config::postgres_target(dsn);
  const std::string& conninfo = target.conninfo;
  auto timeout_ms = store_timeout().count();
  // Whole seconds, and libpq treats less than 2 as 2.
  std::string connect_timeout = std::to_string(std::clamp<int64_t>((timeout_ms + 999) / 1000, 2, 10));
  std::string user_timeout = std::to_string(timeout_ms);
  const char* keys[] = {"connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
                        "keepalives_count", "tcp_user_timeout", "dbname", target.options.empty() ? nullptr : "options",
                        nullptr};
  const char* values[] = {connect_timeout.c_str(), "1", "10", "5", "3", user_timeout.c_str(), conninfo.c_str(),
                          target.options.c_str(), nullptr};
  PGconn* conn = libpq().PQconnectdbParams(keys, values, 1);
  // libpq prints server notices (and a FATAL on an idle connection) to
  // stderr by default, outside the log's format: errors reach us as results.
  if (conn) libpq().PQsetNoticeProcessor(conn, ignore_notice, nullptr);
  return conn;
}

}  // namespace jobctl::store
