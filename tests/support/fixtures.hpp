#pragma once
// Test support: a temporary directory and a fresh database per test, on
// the backend chosen by JOBCTL_TEST_BACKEND (sqlite or postgres; ctest
// registers every store and end-to-end test once for each), and helpers
// to drive the real jobctl and jobagent binaries.
//
// Both are removed when the test passes and kept, with their location
// printed, when it fails.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config/dsn.hpp"
#include "common/store/store.hpp"

namespace jobctl::test {

// A second in the store's microseconds.
inline constexpr int64_t kSecond = 1'000'000;

// jobagent flags for a quick pickup: it looks for work every 100 ms.
inline const std::vector<std::string> kFastPoll{"--poll-interval", "100ms"};

// Lets `us` microseconds pass on the store's clock: its fake clock moves
// on, nothing sleeps. (Only this store's connection sees the shift.)
inline void outlive(store::Store& s, int64_t us) { s.connection().shift_clock(us + 1); }

// True once any assertion of the current test failed (set by the listener
// in test_main.cpp).
bool current_test_failed();

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
  int failures_at_start_;
};

config::Backend test_backend();
const char* backend_name();

// A database of its own: a SQLite file in a TempDir, or a fresh schema in
// the PostgreSQL server named by JOBCTL_TEST_PG_DSN.
class TestDb {
 public:
  // Migrated to `schema_version` (default: the current one), so upgrade
  // paths can be tested from an older schema.
  explicit TestDb(const TempDir& dir, int schema_version = -1);
  ~TestDb();
  const std::string& dsn() const { return dsn_; }  // for --db
  std::unique_ptr<store::Store> open();            // the store, migrated to the current schema
  std::unique_ptr<store::Connection> connect() const;  // a bare connection to it (for fault injection)

 private:
  void migrate_to(int version);

  std::string dsn_;
  std::string schema_;  // postgres only
};

// A process started from the tests, its output sent to files.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env, const TempDir& dir,
          const std::string& label);
  ~Process();  // SIGKILLs it if still running
  pid_t pid() const { return pid_; }
  void signal(int sig);
  // Waits for exit (at most `limit`, then fails the test); returns the exit
  // code, or 128+signal.
  int wait(std::chrono::seconds limit = std::chrono::seconds(60));
  bool running();
  // Whether it is asleep in nanosleep(2) now (/proc/PID/wchan): a command
  // that polls, between two looks.
  bool sleeping() const;
  std::string out() const;
  std::string err() const;

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  std::string out_path_, err_path_;
};

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

// Runs jobctl with --db set to `db` and waits for it; `env` adds NAME=VALUE
// entries to its environment.
Result run_jobctl(const TestDb& db, const TempDir& dir, const std::vector<std::string>& args,
                  const std::string& stdin_text = "", const std::vector<std::string>& env = {});

// The same on a terminal (a pty for stdin, stdout and stderr, read
// together into `out`), for what jobctl says only to a person.
Result run_jobctl_on_terminal(const TestDb& db, const std::vector<std::string>& args);

// `jobctl submit ARGS…`: the new job's id (fails the test unless exit 0).
std::string submit(const TestDb& db, const TempDir& dir, std::vector<std::string> args);
// `jobctl get ID -o json` (fails the test unless exit 0).
nlohmann::json get(const TestDb& db, const TempDir& dir, const std::string& id);

// Starts a jobagent on `db` with extra flags, named `label`, and `env`
// added to its environment (NAME=VALUE); its lock file (jobagent(8)) goes
// in `dir`, which the test's agents share.
std::unique_ptr<Process> start_agent(const TestDb& db, const TempDir& dir, const std::vector<std::string>& flags,
                                     const std::string& label = "agent", const std::vector<std::string>& env = {});

// Polls `done` every 20 ms until it holds. This is a hang guard, not a
// timing assertion: `limit` is generous and only ends a broken test.
void eventually(const std::function<bool()>& done, const std::string& what,
                std::chrono::seconds limit = std::chrono::seconds(120));

// Whether `c` is PostgreSQL 15 or later, which flushes a session's table
// statistics on demand: what tuples_read needs.
bool counts_reads(store::Connection& c);
// The tuples of `table` PostgreSQL has read so far, by scans and through
// indexes: this session's counts are flushed as it goes idle after
// pg_stat_force_next_flush().
int64_t tuples_read(store::Connection& c, const std::string& table);
// What the store has read so far, to count a statement's reads by: on
// PostgreSQL the rows of `table` (tuples_read), on SQLite the steps every
// statement `c` keeps prepared has taken (sqlite_stmt), whatever the table.
int64_t reads(store::Connection& c, const std::string& table);
// Whether reads() counts on this server: PostgreSQL 15 and later
// (counts_reads), an SQLite built with sqlite_stmt (SQLITE_ENABLE_STMTVTAB).
bool reads_counted(store::Connection& c);
// ANALYZE of the test's own tables: on PostgreSQL, those of `c`'s schema. A bare ANALYZE takes
// every schema's tables, and tests run side by side on one database: it
// gave another test's fresh tables statistics of empty tables.
void analyze(store::Connection& c);
// PostgreSQL's generic plan (the one a statement keeps under plan_once,
// or once planned for any values) of the one statement this session
// prepared whose text is LIKE `statement`, as EXPLAIN (`options`) prints
// it for the arguments `args` (SQL literals, comma-separated). Fails the
// test unless exactly one statement matches.
std::string prepared_plan(store::Connection& c, const std::string& statement, const std::string& args,
                          const std::string& options = "COSTS OFF");
// How many times `needle` occurs in `text`.
size_t occurrences(std::string_view text, std::string_view needle);

std::string read_file(const std::string& path);
// Whether process `pid` has ended: no such process, or a zombie (it runs no
// more; reaping it is its parent's business, and a pid namespace's init
// that is not one, as under unshare, never does).
bool process_ended(int pid);
std::string trim(const std::string& s);
// A TCP connection to 127.0.0.1:port (REQUIRE fails the test without one);
// the caller closes it.
int connect_loopback(int port);
std::vector<std::string> lines(const std::string& s);

}  // namespace jobctl::test
