// Store: jobctl doctor's findings about the store itself: schema version,
// clock skew, and per engine what makes a store slow or unsafe over time
// (PostgreSQL: dead tuples and vacuum, long transactions that hold vacuum
// back, invalid indexes, a synchronous standby that holds every commit;
// SQLite: the WAL's size, integrity, free pages).
#include <fmt/format.h>

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/store/admin.hpp"
#include "common/store/internal.hpp"
#include "common/store/migrations.hpp"
#include "common/util/error.hpp"
#include "common/util/strings.hpp"
#include "common/util/time.hpp"

namespace jobctl::store {
namespace {

constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kLowDisk = int64_t{64} << 20;  // free space below which doctor fails the store

Finding ok(std::string name, std::string detail) { return {std::move(name), Finding::Level::ok, std::move(detail), ""}; }
Finding warn(std::string name, std::string detail, std::string hint) {
  return {std::move(name), Finding::Level::warn, std::move(detail), std::move(hint)};
}
Finding bad(std::string name, std::string detail, std::string hint) {
  return {std::move(name), Finding::Level::fail, std::move(detail), std::move(hint)};
}

std::string mib(int64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// Steps of the store's clock that agents saw in the last day: leases and
// due times follow that clock, so a step delays or hurries work.
void clock_step_findings(Connection& c, std::vector<Finding>& out) {
  for (const auto& row : c.query("SELECT name, clock_step_us, clock_step_at FROM workers WHERE clock_step_at > "
                                 "NOW_US - 86400000000 ORDER BY clock_step_at DESC LIMIT 5")) {
    int64_t step = row.i64(1);
    out.push_back(warn("clock step",
                       fmt::format("agent {} saw the store's clock jump {:+.3f} s at {}", row.text(0),
                                   static_cast<double>(step) / 1e6, util::format_time(row.i64(2))),
                       "leases were kept (rescue waits a lease after a step), but due times moved with the "
                       "clock: keep the clock slewed by NTP (chrony), not stepped"));
  }
}

// On a primary with synchronous_standby_names, every commit waits for a
// standby to confirm it: a standby stopped, frozen or cut off holds every
// write (jobctl's commands give up after JOBCTL_STORE_TIMEOUT, agents see
// an outage) while reads, and every other finding, say all is well.
// Commits of this role's sessions waiting for it are the sure sign (other
// roles' waits, and the standbys' sync state, need pg_read_all_stats).
void replication_findings(Connection& c, std::vector<Finding>& out) {
  constexpr int64_t kStuckAfter = 2;  // seconds: a standby that answers confirms in milliseconds
  auto r = c.query(
      "SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit'), count(*), "
      "COALESCE(EXTRACT(EPOCH FROM max(now() - query_start))::bigint, 0), "
      "(SELECT count(*) FROM pg_stat_replication), "
      "(SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state IN ('sync', 'quorum')), "
      "(SELECT count(*) FROM pg_stat_replication WHERE sync_state IS NULL) "
      "FROM pg_stat_activity WHERE wait_event = 'SyncRep'");
  const auto& row = r.at(0);
  const std::string names = row.text(0), commit = row.text(1);
  const int64_t waiting = row.i64(2), oldest = row.i64(3), senders = row.i64(4), synchronous = row.i64(5),
                hidden = row.i64(6);
  const std::string hint =
      "start the standby or mend its network; or let commits go without it: ALTER SYSTEM SET "
      "synchronous_standby_names = ''; SELECT pg_reload_conf()";
  if (names.empty() || commit == "off" || commit == "local") {
    out.push_back(ok("replication", names.empty() ? "no synchronous standby: commits wait for none"
                                                  : "synchronous_commit is " + commit + ": commits wait for no standby"));
  } else if (waiting > 0 && oldest >= kStuckAfter) {
    out.push_back(bad("replication",
                      fmt::format("{} commit{} waiting for a synchronous standby ('{}'), the oldest for {} s: "
                                  "every write waits with them",
                                  waiting, waiting == 1 ? " is" : "s are", names, oldest),
                      hint));
  } else if (senders == 0 || (hidden == 0 && synchronous == 0)) {
    out.push_back(bad("replication",
                      fmt::format("synchronous_standby_names is '{}', but no synchronous standby is streaming: "
                                  "every commit waits for one",
                                  names),
                      hint));
  } else {
    out.push_back(ok("replication",
                     hidden > 0 ? fmt::format("synchronous standby '{}': {} connected", names, senders)
                                : fmt::format("synchronous standby '{}': {} of {} streaming and confirming commits",
                                              names, synchronous, senders)));
  }
}

void postgres_findings(Connection& c, std::vector<Finding>& out) {
  // A standby, or a server set read-only: every command that writes fails.
  auto ro = c.query("SELECT CASE WHEN pg_is_in_recovery() THEN 1 ELSE 0 END, "
                    "CASE WHEN current_setting('transaction_read_only') = 'on' THEN 1 ELSE 0 END");
  if (ro.at(0).i64(0) != 0 || ro.at(0).i64(1) != 0)
    out.push_back(bad("writes", ro.at(0).i64(0) != 0 ? "the server is a standby (in recovery)" : "the session is read-only",
                      "point --db at the primary; with several hosts in the DSN, add target_session_attrs=read-write"));
  else
    out.push_back(ok("writes", "the server takes writes"));
  if (ro.at(0).i64(0) == 0) replication_findings(c, out);
  for (const auto& row : c.query(
           "SELECT relname, n_live_tup, n_dead_tup, COALESCE(EXTRACT(EPOCH FROM now() - GREATEST(last_autovacuum, "
           "last_vacuum))::bigint, -1) FROM pg_stat_user_tables WHERE schemaname = current_schema() "
           "AND relname IN ('runs', 'attempts', 'jobs', 'workers', 'queues', 'tenants') ORDER BY relname")) {
    std::string table = row.text(0);
    int64_t live = row.i64(1), dead = row.i64(2), since = row.i64(3);
    std::string detail = fmt::format("{} live rows, {} dead, last vacuum {}", live, dead,
                                     since < 0 ? std::string("never") : util::format_age(0, since * kSecond));
    if (dead > 10'000 && dead > live / 5)
      out.push_back(warn("table " + table, detail,
                         fmt::format("dead rows slow the claim: check that autovacuum runs (VACUUM (VERBOSE) {}), and "
                                     "look for a long transaction below",
                                     table)));
    else
      out.push_back(ok("table " + table, detail));
  }
  // Client transactions in this database that hold a snapshot (and with
  // it vacuum). Without pg_read_all_stats, other roles' are invisible.
  const char* open_tx =
      "FROM pg_stat_activity WHERE xact_start IS NOT NULL AND pid <> pg_backend_pid() AND datname = current_database() "
      "AND backend_type = 'client backend' AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)";
  auto tx = c.query(fmt::format(
      "SELECT COALESCE(EXTRACT(EPOCH FROM max(now() - xact_start))::bigint, 0), "
      "(SELECT pid {0} ORDER BY xact_start LIMIT 1), (SELECT state {0} ORDER BY xact_start LIMIT 1) {0}",
      open_tx));
  int64_t oldest = tx.at(0).i64(0);
  std::string detail = oldest == 0 ? "none open" : fmt::format("{} s old (pid {}, {})", oldest, tx[0].text(1), tx[0].text(2));
  if (oldest > 300)
    out.push_back(warn("oldest transaction", detail,
                       fmt::format("it holds back vacuum of every table: end it, or SELECT pg_terminate_backend({})",
                                   tx[0].text(1))));
  else
    out.push_back(ok("oldest transaction", detail));
  auto invalid = c.query(
      "SELECT string_agg(i.relname, ', ') FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_namespace n "
      "ON n.oid = i.relnamespace WHERE n.nspname = current_schema() AND NOT x.indisvalid");
  if (!invalid.at(0).is_null(0))
    out.push_back(bad("indexes", "invalid: " + invalid[0].text(0),
                      "a CREATE INDEX CONCURRENTLY failed: DROP INDEX and run jobctl init, or REINDEX INDEX"));
  else
    out.push_back(ok("indexes", "all valid"));
}

constexpr const char* kDamagedHint = "restore from a backup; sqlite3 FILE .recover may save what is left";

// Whether this user may write the file and its directory (SQLite makes the
// -wal and -shm files there), and the room left on its file system: a
// store that refuses every write passed every check (a tester).
void writes_findings(const std::string& path, std::vector<Finding>& out) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (access(path.c_str(), W_OK) != 0 || access(dir.empty() ? "." : dir.c_str(), W_OK) != 0)
    out.push_back(bad("writes", fmt::format("this user ({}) cannot write {} or its directory", geteuid(), path),
                      "fix the file's and the directory's permissions, or run as their owner"));
  else
    out.push_back(ok("writes", "the file and its directory are writable"));
  struct statvfs fs {};
  if (statvfs(path.c_str(), &fs) != 0) return;
  const int64_t room = static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
  if (room < kLowDisk)
    out.push_back(bad("disk", fmt::format("{} free on the file system that holds it", mib(room)),
                      "free space: every write fails once it is full (\"database or disk is full\")"));
  else
    out.push_back(ok("disk", fmt::format("{} free", mib(room))));
}

void sqlite_findings(Connection& c, std::vector<Finding>& out) {
  std::string path;
  for (const auto& row : c.query("PRAGMA database_list"))
    if (row.text(1) == "main") path = row.text(2);
  int64_t page = c.query("PRAGMA page_size").at(0).i64(0);
  int64_t pages = c.query("PRAGMA page_count").at(0).i64(0);
  int64_t free_pages = c.query("PRAGMA freelist_count").at(0).i64(0);
  out.push_back(ok("file", fmt::format("{}: {}, {} free", path, mib(page * pages), mib(page * free_pages))));
  struct stat st;
  int64_t wal = stat((path + "-wal").c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
  if (wal > 256 << 20)
    out.push_back(warn("WAL", mib(wal),
                       "a long reader keeps the WAL from being checkpointed: stop it, or run "
                       "sqlite3 FILE 'PRAGMA wal_checkpoint(TRUNCATE)'"));
  else
    out.push_back(ok("WAL", mib(wal)));
  writes_findings(path, out);
  // A damaged file answers with what it found, and may then fail the
  // check itself (SQLITE_CORRUPT): doctor failed with the error alone.
  std::string first;
  try {
    auto check = c.query("PRAGMA integrity_check");
    first = check.empty() ? "?" : check[0].text(0);
  } catch (const Error& e) {
    if (e.code() != ExitCode::store) throw;
    first = e.what();
  }
  // Its text is lines, the first naming the database ("*** in database main ***").
  std::string shown;
  for (const auto& line : util::split(first, '\n'))
    if (!line.empty() && !line.starts_with("***")) {
      shown = line;
      break;
    }
  if (first == "ok")
    out.push_back(ok("integrity", "ok"));
  else
    out.push_back(bad("integrity", shown.empty() ? first : shown, kDamagedHint));
}

void all_findings(Connection& c, std::vector<Finding>& out) {
  int version = store::schema_version(c);
  if (version == 0) {
    // Why: another program's database is not fixed by init.
    auto why = [&c] {
      try {
        return missing_schema(c);
      } catch (const Error& e) {  // a search_path that names no schema
        return e;
      }
    }();
    out.push_back(bad("schema", why.what(), why.hint()));
  } else if (version == kSchemaVersion) {
    out.push_back(ok("schema", fmt::format("version {}", version)));
  } else if (version < kSchemaVersion) {
    out.push_back(bad("schema", fmt::format("version {}, this build needs {}", version, kSchemaVersion),
                      "run `jobctl init` to upgrade it"));
  } else {
    out.push_back(bad("schema", fmt::format("version {}, newer than this build ({})", version, kSchemaVersion),
                      "upgrade jobctl and jobagent"));
  }
  int64_t before = util::now_micros();
  int64_t store = now_us(c);
  int64_t after = util::now_micros();
  int64_t skew = store - (before + after) / 2;
  std::string detail = fmt::format("the store's clock is {:+.3f} s from this host's", static_cast<double>(skew) / 1e6);
  if (std::llabs(skew) > kSecond)
    out.push_back(warn("clock", detail,
                       "agents time leases and schedules by the store's clock, people by theirs: run NTP "
                       "(chrony, systemd-timesyncd) on both"));
  else
    out.push_back(ok("clock", detail));
  if (version >= 10) clock_step_findings(c, out);
  auto stale = version == 0 ? std::vector<Row>{} : c.query(
      "SELECT count(*) FROM workers WHERE state <> 'gone' AND heartbeat_at + lease_us < NOW_US");
  if (int64_t n = stale.empty() ? 0 : stale.at(0).i64(0); n > 0)
    out.push_back(warn("agents", fmt::format("{} agents stopped heartbeating but are not marked gone yet", n),
                       "a live agent marks them gone and rescues their runs within a lease: is any agent running?"));
  if (c.dialect() == Dialect::postgres) postgres_findings(c, out);
  else sqlite_findings(c, out);
}

}  // namespace

std::vector<Finding> Admin::doctor() {
  std::vector<Finding> out;
  try {
    all_findings(*conn_, out);
  } catch (const Error& e) {
    // A file damaged past reading its schema: that is the finding.
    const std::string what = e.what();
    if (conn_->dialect() != Dialect::sqlite || e.code() != ExitCode::store ||
        (what.find("malformed") == std::string::npos && what.find("not a database") == std::string::npos))
      throw;
    out.push_back(bad("integrity", what, kDamagedHint));
  }
  return out;
}

}  // namespace jobctl::store
