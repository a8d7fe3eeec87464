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

// Throws jobctl::Error(ExitCode::usage) for an empty, too long or malformed DSN.
Dsn resolve_dsn(const std::optional<std::string>& flag);
Dsn parse_dsn(const std::string& text);

// The DSN with any password replaced by "***", safe for logs and errors.
std::string redacted(const Dsn& dsn);

}  // namespace jobctl::config
