#pragma once
// Versioned schema migrations, applied in order inside one transaction by
// `jobctl init`. Both backends share one logical schema; the few spelling
// differences (BLOB vs bytea, storage parameters) are per dialect.
//
// Time columns are BIGINT microseconds since the epoch, UTC, from the
// database clock (NOW_US), the same unit on both backends.
#include "common/store/sql.hpp"
#include "common/util/error.hpp"

namespace jobctl::store {

// The schema version this build reads and writes.
constexpr int kSchemaVersion = 19;

// 0 when the database holds no jobctl schema yet.
int schema_version(Connection& conn);

// Applies every migration above the current version; idempotent. Safe
// against a concurrent `jobctl init` (PostgreSQL: advisory lock; SQLite:
// the write lock). Returns how many migrations it applied. Throws
// Error(ExitCode::store) when the database is newer than this build.
int migrate(Connection& conn);
// Applies migrations up to `target` only: for tests of upgrades.
// PostgreSQL: first makes the schema the connection's search_path names
// (config::postgres_target), and moves a store found in public (see
// below) into it when that schema has none.
int migrate_to(Connection& conn, int target);

// PostgreSQL: the schema jobctl's tables are in, the first the
// connection's search_path names ("$user" aside). Throws Error(ExitCode::store)
// when it names none.
std::string search_path_schema(Connection& conn);

// Why schema_version() found no store, as the Error to throw (exit 5): a
// store in public made before jobctl had a schema of its own, a schema
// this role may not use, another program's database (its tables there:
// check --db, since init would add jobctl's beside them), or none at all
// (run `jobctl init`).
Error missing_schema(Connection& conn);

}  // namespace jobctl::store
