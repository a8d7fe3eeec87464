// SQLite driver for store::Connection: WAL mode, a busy timeout so several
// agent processes can share one file, a statement cache, and the database
// clock as a registered function.
#include <sys/stat.h>

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/store/sql.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"

namespace jobctl::store {
namespace {

// $N -> ?N, and NOW_US and CLOCK_US -> jobctl_now_us(); see sql.hpp.
std::string translate(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  for (size_t i = 0; i < sql.size(); ++i) {
    if (sql[i] == '$' && i + 1 < sql.size() && sql[i + 1] >= '0' && sql[i + 1] <= '9') {
      out += '?';
    } else if (sql.compare(i, 6, "NOW_US") == 0) {
      out += "jobctl_now_us()";
      i += 5;
    } else if (sql.compare(i, 8, "CLOCK_US") == 0) {
      out += "jobctl_now_us()";
      i += 7;
    } else {
      out += sql[i];
    }
  }
  return out;
}

// NOW_US: the host's clock, shifted by the connection's offset
// (shift_clock), read when a statement first asks, and then kept to the end
// of the transaction, as PostgreSQL's now(): every statement of a
// transaction sees one time. Read anew by each statement, a second could
// end between two statements of one change: restart_schedule counted the
// occurrences come due, then skipped one more than it counted. Outside a
// transaction (as SQLite itself tells) each statement reads it anew.
class StoreClock {
 public:
  void statement(bool in_transaction) {  // a statement starts
    if (!in_transaction) read_us_.reset();
  }
  void shift(int64_t us) { offset_us_ += us; }
  int64_t now_us() {
    if (!read_us_) {
      auto now = std::chrono::system_clock::now().time_since_epoch();
      read_us_ = std::chrono::duration_cast<std::chrono::microseconds>(now).count();
    }
    return *read_us_ + offset_us_;
  }

 private:
  int64_t offset_us_ = 0;
  std::optional<int64_t> read_us_;
};

void now_us(sqlite3_context* ctx, int, sqlite3_value**) {
  sqlite3_result_int64(ctx, static_cast<StoreClock*>(sqlite3_user_data(ctx))->now_us());
}

// SQLite counts every allocation it makes (for sqlite3_memory_used and a
// soft heap limit, which nothing here uses) under one mutex for the whole
// process: lock, unlock and the counting were 15 % of jobctl's CPU in a
// `submit --file` of 100,000 jobs (perf). Turned off before the first
// connection starts SQLite; sqlite3_config refuses once it has started
// (SQLITE_MISUSE), which leaves the counting on and nothing else changed.
void stop_counting_allocations() {
  static const int once = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)once;
}

// The file was deleted or replaced as it was opened: its first reads failed,
// or read it without its write-ahead log.
struct MovedWhileOpening {};

Error no_store(const std::string& path) {
  return Error(ExitCode::store, fmt::format("no store at '{}'", path),
               fmt::format("check --db and JOBCTL_DB, or create it with `jobctl --db sqlite:{} init`", path));
}

class SqliteConnection final : public Connection {
 public:
  SqliteConnection(const std::string& path, Create create) : path_(path), busy_timeout_(store_timeout()) {
    stop_counting_allocations();
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
    if (create == Create::yes) {
      flags |= SQLITE_OPEN_CREATE;
      std::error_code ec;
      auto parent = std::filesystem::path(path).parent_path();
      if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    } else if (std::error_code ec; !std::filesystem::exists(path, ec)) {
      throw no_store(path);
    }
    refuse_special_file(path);
    int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      db_ = nullptr;
      // Deleted since it was looked for: missing, as it would be a moment later.
      if (std::error_code ec; create == Create::no && !std::filesystem::exists(path, ec)) throw no_store(path);
      throw Error(ExitCode::store, fmt::format("cannot open SQLite database '{}': {}", path, msg),
                  "check that the directory exists and is writable, or pass another --db");
    }
    sqlite3_extended_result_codes(db_, 1);
    // A command is a short process. As the last connection to the file, it
    // would checkpoint the WAL and delete it on closing, and the next
    // command would create it again: four more fsyncs, about 11 ms here.
    // The WAL stays instead (FILE-wal and FILE-shm remain beside FILE): no
    // checkpoint on close while it is short (see the destructor), and the
    // file kept should one run.
    int persist = 1;
    sqlite3_file_control(db_, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
    sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    // Waiting for another process's write lock is bounded like any store call.
    sqlite3_busy_timeout(db_, static_cast<int>(busy_timeout_.count()));
    sqlite3_create_function(db_, "jobctl_now_us", 0, SQLITE_UTF8, &clock_, now_us, nullptr, nullptr);
    try {
      // WAL lets readers run beside the one writer; synchronous=FULL makes a
      // submit that returned durable even across power loss. This is the
      // first read of the file, so a file that is not a database fails here,
      // and the destructor will not run to close the handle.
      exec_script("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY; "
                  "PRAGMA journal_size_limit=67108864;");
      // The journal mode is the file's own, kept by it: set only on a new
      // file or a jobctl store. A --db naming another program's database
      // was left in WAL mode by the command that refused it.
      if (new_or_ours()) exec_script("PRAGMA journal_mode=WAL;");
      // Deleted since it was opened, before the reads above found its
      // write-ahead log: they read the file without it, an older store.
      if (file_replaced()) throw MovedWhileOpening{};
    } catch (...) {
      // Asked while the file is still held, so that its inode is not one
      // a new file at the path could have been given.
      const bool moved = file_replaced();
      sqlite3_close(db_);
      if (moved) throw MovedWhileOpening{};
      throw;
    }
  }

  bool file_replaced() override {
    int moved = 0;
    return sqlite3_file_control(db_, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK && moved != 0;
  }

  // A directory, a device or a FIFO given as the store: SQLite said "disk
  // I/O error" or "unable to open", and as root made /dev/null-journal.
  static void refuse_special_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
    const char* what = S_ISDIR(st.st_mode)   ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "a device";
    throw Error(ExitCode::usage, fmt::format("'{}' is {}, not an SQLite file", path, what),
                "give --db (or JOBCTL_DB) the path of a file, such as DIR/jobs.db");
  }

  // Whether the file is new (nothing in it yet) or holds jobctl's schema.
  bool new_or_ours() {
    constexpr std::string_view kSql =
        "SELECT NOT EXISTS (SELECT 1 FROM sqlite_master) OR "
        "EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations')";
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, kSql.data(), static_cast<int>(kSql.size()), &stmt, nullptr);
    if (rc != SQLITE_OK) fail(rc, sqlite3_errmsg(db_), kSql);
    rc = sqlite3_step(stmt);
    const bool yes = rc == SQLITE_ROW && sqlite3_column_int(stmt, 0) == 1;
    std::string msg = rc == SQLITE_ROW ? "" : sqlite3_errmsg(db_);
    sqlite3_finalize(stmt);
    if (rc != SQLITE_ROW) fail(rc, msg, kSql);
    return yes;
  }

  ~SqliteConnection() override {
    for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
    // The first process to open the file after the last one closed it
    // reads the whole WAL back to rebuild its index (about 1 ms a
    // megabyte here), and knows nothing of what was checkpointed of it, so
    // it cannot start the WAL over: with commands alone and no agent
    // holding the file open, the WAL grew for ever (14 MB after 500
    // submits, 14 ms each). So a connection that leaves a WAL past
    // kCheckpointOnClose checkpoints it on closing, if it is the last one
    // (SQLite takes the file's exclusive lock for that, which fails at
    // once while another connection is open), and the WAL is cut to
    // nothing (journal_size_limit is set). One command in a few pays it.
    // (SQLite's own name for the WAL: it follows a symbolic link to the file.)
    std::error_code ec;
    const char* file = sqlite3_db_filename(db_, "main");
    const char* wal_path = file && *file ? sqlite3_filename_wal(file) : nullptr;
    const auto wal = wal_path ? std::filesystem::file_size(wal_path, ec) : 0;
    if (!ec && wal > kCheckpointOnClose) sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
    sqlite3_close(db_);
  }

  Dialect dialect() const override { return Dialect::sqlite; }

  // In-process: there is no round trip to save.
  void query_with_next(std::string_view sql, const Params& params, const std::function<void(Rows&&)>& read) override {
    read(query(sql, params));
  }

  Rows query(std::string_view sql, const Params& params) override {
    sqlite3_stmt* stmt = prepare(sql, params);
    Rows rows;
    int rc;
    // A row that cannot be held (bad_alloc) leaves the statement released
    // all the same: its bindings point into `params`.
    struct Release {
      sqlite3_stmt* stmt;
      ~Release() {
        if (stmt) release(stmt);
      }
    } on_throw{stmt};
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      int n = sqlite3_column_count(stmt);
      std::vector<std::optional<std::string>> cells;
      cells.reserve(static_cast<size_t>(n));
      for (int c = 0; c < n; ++c) {
        switch (sqlite3_column_type(stmt, c)) {
          case SQLITE_NULL: cells.emplace_back(std::nullopt); break;
          case SQLITE_BLOB: {
            auto* p = static_cast<const char*>(sqlite3_column_blob(stmt, c));
            cells.emplace_back(std::string(p ? p : "", static_cast<size_t>(sqlite3_column_bytes(stmt, c))));
            break;
          }
          default: {
            auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
            cells.emplace_back(std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt, c))));
          }
        }
      }
      rows.emplace_back(std::move(cells));
    }
    on_throw.stmt = nullptr;
    finish(stmt, rc, sql);
    return rows;
  }

  int64_t exec(std::string_view sql, const Params& params) override { return run(prepare(sql, params), sql); }

  void exec_script(std::string_view sql) override {
    char* err = nullptr;
    new_statement();
    std::string text = translate(sql);
    int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errstr(rc);
      sqlite3_free(err);
      fail(rc, msg, sql);
    }
  }

  void begin(TxMode mode) override { exec_script(mode == TxMode::write ? "BEGIN IMMEDIATE" : "BEGIN"); }
  void commit() override { exec_script("COMMIT"); }
  void rollback() override { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }

  void notify(std::string_view, const std::string&) override {}
  void plan_once(std::string_view) override {}

  std::string row_lock(std::string_view) const override { return {}; }

  Value list(const std::vector<std::string>& items) const override { return nlohmann::json(items).dump(); }

  std::string in_list(std::string_view column, int n) const override {
    return fmt::format("{} IN (SELECT value FROM json_each(${}))", column, n);
  }

  // One row: a parameter per column. exec_batch runs the statement per row.
  std::string batch(std::span<const BatchColumn> columns, int n, std::string_view alias) const override {
    std::string picks;
    for (size_t i = 0; i < columns.size(); ++i)
      picks += fmt::format("{}${} AS {}", i ? ", " : "", n + static_cast<int>(i), columns[i].name);
    return fmt::format("(SELECT {}) AS {}", picks, alias);
  }

  int64_t exec_batch(std::string_view sql, const Params& params, std::span<const BatchColumn> columns, size_t rows,
                     const BatchFill& fill, Send) override {
    new_statement();  // one reading for the whole batch, as one statement
    int64_t changed = 0;
    std::vector<Value> cells(columns.size());
    sqlite3_stmt* stmt = statement(sql);
    for (size_t r = 0; r < rows; ++r) {
      fill(r, cells);
      bind_all(stmt, params);
      bind_all(stmt, cells, params.size() + 1);
      changed += run(stmt, sql);
    }
    return changed;
  }

  void shift_clock(int64_t us) override { clock_.shift(us); }

 private:
  // A statement starts: the clock's time is read anew unless it is kept
  // for the transaction this one is part of.
  void new_statement() { clock_.statement(sqlite3_get_autocommit(db_) == 0); }

  // The statement, its parameters bound, a new statement to the clock.
  sqlite3_stmt* prepare(std::string_view sql, const Params& params) {
    new_statement();
    sqlite3_stmt* stmt = statement(sql);
    bind_all(stmt, params);
    return stmt;
  }

  // The prepared statement of `sql`, from the cache or made once.
  sqlite3_stmt* statement(std::string_view sql) {
    std::string key(sql);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    std::string text = translate(sql);
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, text.c_str(), static_cast<int>(text.size()), SQLITE_PREPARE_PERSISTENT, &stmt,
                                nullptr);
    if (rc != SQLITE_OK) fail(rc, sqlite3_errmsg(db_), sql);
    cache_.emplace(std::move(key), stmt);
    return stmt;
  }

  // Binds `values` as the parameters from `first` on.
  void bind_all(sqlite3_stmt* stmt, std::span<const Value> values, size_t first = 1) {
    for (size_t i = 0; i < values.size(); ++i) bind(stmt, static_cast<int>(first + i), values[i]);
  }

  // Steps a bound statement to its end; returns the rows it changed.
  int64_t run(sqlite3_stmt* stmt, std::string_view sql) {
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    }
    finish(stmt, rc, sql);
    return sqlite3_changes64(db_);
  }

  // Text and bytes are bound in place (SQLITE_STATIC), not copied: every
  // statement is stepped to its end and released (finish(), release())
  // while the values it was given are still there.
  static void bind(sqlite3_stmt* stmt, int idx, const Value& v) {
    if (std::holds_alternative<std::nullptr_t>(v)) {
      sqlite3_bind_null(stmt, idx);
    } else if (auto* i = std::get_if<int64_t>(&v)) {
      sqlite3_bind_int64(stmt, idx, *i);
    } else if (auto* s = std::get_if<std::string>(&v)) {
      sqlite3_bind_text(stmt, idx, s->data(), static_cast<int>(s->size()), SQLITE_STATIC);
    } else {
      const auto& b = std::get<Blob>(v).bytes;
      sqlite3_bind_blob(stmt, idx, b.data(), static_cast<int>(b.size()), SQLITE_STATIC);
    }
  }

  // Ready for its next use, holding nothing of its last: reset, and its
  // bindings (into values that may be gone next) cleared.
  static void release(sqlite3_stmt* stmt) {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
  }

  void finish(sqlite3_stmt* stmt, int rc, std::string_view sql) {
    std::string msg = rc == SQLITE_DONE ? "" : sqlite3_errmsg(db_);
    release(stmt);
    if (rc != SQLITE_DONE) fail(rc, msg, sql);
  }

  [[noreturn]] void fail(int rc, const std::string& msg, std::string_view sql) {
    int primary = rc & 0xff;
    if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY) throw UniqueViolation(msg);
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
      throw Error(ExitCode::store,
                  fmt::format("SQLite database '{}' stayed locked for {}", path_,
                              util::format_duration(std::chrono::duration_cast<util::Micros>(busy_timeout_))),
                  "another process holds a long write transaction; retry, or look for a stuck process "
                  "(JOBCTL_STORE_TIMEOUT sets how long to wait)");
    if (primary == SQLITE_CORRUPT)
      throw Error(ExitCode::store, fmt::format("SQLite database '{}': {}", path_, msg),
                  "the file is damaged (jobctl doctor says where): restore it from a backup; "
                  "sqlite3 FILE .recover may save what is left");
    if (primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY || primary == SQLITE_IOERR ||
        primary == SQLITE_FULL || primary == SQLITE_NOTADB)
      throw Error(ExitCode::store, fmt::format("SQLite database '{}': {}", path_, msg));
    throw Error(ExitCode::internal, fmt::format("SQLite: {} (in: {})", msg, statement_summary(sql)));
  }

  // Measured (100 `jobctl submit` in a row, no agent): 32 KiB to 256 KiB
  // all gave a p50 of 5.1-6.8 ms; a checkpoint at every close, 6.4-7.2.
  static constexpr uintmax_t kCheckpointOnClose = 128 * 1024;
  std::string path_;
  std::chrono::milliseconds busy_timeout_;
  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
  StoreClock clock_;  // read by jobctl_now_us()
};

}  // namespace

std::unique_ptr<Connection> open_sqlite(const std::string& path, Create create) {
  // A file deleted or replaced while it was being opened (an operator
  // resetting or restoring the store) failed its first read with "disk I/O
  // error" (exit 5): the file the path names now is opened instead, once,
  // or said to be missing.
  try {
    return std::make_unique<SqliteConnection>(path, create);
  } catch (const MovedWhileOpening&) {
  }
  try {
    return std::make_unique<SqliteConnection>(path, create);
  } catch (const MovedWhileOpening&) {
    throw Error(ExitCode::store, fmt::format("SQLite database '{}' was deleted or replaced twice as it was opened", path),
                "run the command again once nothing replaces the file");
  }
}

}  // namespace jobctl::store
