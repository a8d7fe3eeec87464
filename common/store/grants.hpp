#pragma once
// `jobctl grant`: least-privilege PostgreSQL roles over jobctl's tables,
// with GRANTs only. Each kind is what its commands need (jobctl(1),
// GRANT): no kind may alter or drop a table; only `jobctl init`, run by
// the schema's owner, does that.
//   reader     reads everything (get, ls, runs, logs, wait, stats, dlq ls…)
//   submitter  a reader that adds jobs, schedules and DAG runs, and cannot
//              change or delete a run, an attempt, a worker or a job
//   operator   changes what exists: cancel, retry, pause, update, delete,
//              replay, purge, queue settings, gc
//   agent      what jobagent does: claims, heartbeats, completes, leads the
//              scheduler, removes old history (--gc-older-than)
//   none       takes every privilege on jobctl's schema away again
#include <string>
#include <string_view>
#include <vector>

#include "common/store/sql.hpp"

namespace jobctl::store {

enum class GrantKind { none, reader, submitter, operator_, agent };

// Throws Error(ExitCode::usage) naming the kinds.
GrantKind parse_grant_kind(std::string_view text);
std::string_view to_string(GrantKind kind);

// Gives `role` exactly the privileges of `kind` on the schema of `conn`'s
// search_path, taking whatever it had there before away, in one
// transaction. Returns the statements it ran. Throws Error(ExitCode::usage)
// on SQLite or for a role that does not exist, and the server's refusal
// (exit 5) when the connection's role may not grant (not the owner).
std::vector<std::string> grant(Connection& conn, GrantKind kind, const std::string& role);

}  // namespace jobctl::store
