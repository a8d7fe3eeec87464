#pragma once
// Where the store lives, resolved the same way by jobctl and jobagent:
// --db, else $JOBCTL_DB, else $XDG_DATA_HOME/jobctl/jobs.db (else
// ~/.local/share/jobctl/jobs.db).
//
//   postgres://… postgresql://…   PostgreSQL URI
//   host=… dbname=… (key=value)    PostgreSQL libpq connection string
//   sqlite:PATH or a plain PATH    SQLite file
#include <cstddef>
#include <optional>
#include <string>

namespace jobctl::config {

enum class Backend { sqlite, postgres };

// The longest DSN taken, in bytes: a path (PATH_MAX) or more conninfo than
// anyone writes. The patterns that read a DSN (libstdc++'s std::regex)
// recurse once per character, and a few tens of KiB would overflow the stack.
inline constexpr size_t kMaxDsnLength = 4096;

struct Dsn {
  Backend backend = Backend::sqlite;
  std::string target;  // sqlite: file path; postgres: libpq conninfo as given
  // Neither --db nor JOBCTL_DB named it: the default file, which either
  // program makes on first use (any other store only `jobctl init` makes).
  bool is_default = false;
};

// PostgreSQL: jobctl's tables live in a schema of their own, `jobctl`
// unless the DSN says otherwise with jobctl's own option `schema=NAME`
// (`?schema=NAME` in a URI), or sets search_path itself
// (options=-csearch_path=...); `schema=` (empty) leaves the search_path
// to the server and the role (for a pooler that refuses startup options).
inline constexpr const char* kDefaultSchema = "jobctl";

// How to reach a PostgreSQL DSN with libpq: the DSN without jobctl's own
// options, and the `options` startup parameter that selects the schema
// (empty: none to send).
struct PostgresTarget {
  std::string conninfo;
  std::string options;
};
// Throws jobctl::Error(ExitCode::usage) for a malformed DSN.
PostgresTarget postgres_target(const std::string& dsn);

// Throws jobctl::Error(ExitCode::usage) for an empty, too long or malformed DSN.
Dsn resolve_dsn(const std::optional<std::string>& flag);
Dsn parse_dsn(const std::string& text);

// The DSN with any password replaced by "***", safe for logs and errors.
std::string redacted(const Dsn& dsn);
// Rewrites, in place, the value of each --db in a program's arguments
// (`--db DSN` or `--db=DSN`) to its redacted form, padded with blanks or
// cut to its length: the kernel shows a process's arguments to every user
// of the host (ps, /proc/PID/cmdline), jobs run as other users included.
// Call it on argv itself, after copying what is to be parsed.
void hide_dsn_passwords(int argc, char** argv);
// `text` (libpq's message about the PostgreSQL DSN `dsn`, which may quote
// it) with each secret the DSN holds replaced by "***".
std::string without_secrets(const std::string& dsn, const std::string& text);

}  // namespace jobctl::config
