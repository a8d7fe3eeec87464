#pragma once
// Versioned schema migrations, applied in order inside one transaction by
// `jobctl init`. Both backends share one logical schema; the few spelling
// differences (BLOB vs bytea, storage parameters) are per dialect.
//
// Time columns are BIGINT microseconds since the epoch, UTC, from the
// database clock (NOW_US), the same unit on both backends.
#include "common/store/sql.hpp"

namespace jobctl::store {

// The schema version this build reads and writes.
constexpr int kSchemaVersion = 10;

// 0 when the database holds no jobctl schema yet.
int schema_version(Connection& conn);

// Applies every migration above the current version; idempotent. Safe
// against a concurrent `jobctl init` (PostgreSQL: advisory lock; SQLite:
// the write lock). Returns how many migrations it applied. Throws
// Error(ExitCode::store) when the database is newer than this build.
int migrate(Connection& conn);
// Applies migrations up to `target` only: for tests of upgrades.
int migrate_to(Connection& conn, int target);

}  // namespace jobctl::store
