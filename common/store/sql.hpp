#pragma once
// The thin layer both store backends share: a connection that runs
// parameterised SQL and hands back materialised rows.
//
// SQL is written once, in PostgreSQL's spelling, with conventions the
// drivers translate:
//   $1, $2, …  bound parameters (SQLite receives ?1, ?2, …)
//   NOW_US     the database clock in microseconds since the epoch, one
//              time for a whole transaction (PostgreSQL's now())
//   CLOCK_US   the same clock read as the statement runs, after its
//              snapshot: later than every commit the statement sees
//              (PostgreSQL's clock_timestamp()). On SQLite, NOW_US: a
//              write transaction holds the lock from its BEGIN, so its
//              time already follows every commit it can see.
// Parameters are always bound, never spliced into the text. Statements are
// prepared once per connection and cached by their text.
//
// What the two databases do differently (notifications, row locks, lists
// and batches bound as one parameter) the Connection does as an operation
// of its own, so code above the drivers never asks which database it is
// on. The few places that run a different algorithm per database say so
// where they call dialect(): see ARCHITECTURE.md, "The store".
//
// A Connection is not thread-safe: one per thread. Failures throw
// jobctl::Error (ExitCode::store when the database is unreachable or
// locked, ExitCode::internal for a statement the program got wrong) with
// the statement's first line as context.
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace jobctl::store {

enum class Dialect { sqlite, postgres };

// Raw bytes, bound as BLOB / bytea (everything else is bound as text).
struct Blob {
  std::string bytes;
  friend bool operator==(const Blob&, const Blob&) = default;
};

using Value = std::variant<std::nullptr_t, int64_t, std::string, Blob>;

// One result row. Cells are text as the database printed them, except
// BLOB/bytea cells, which hold the raw bytes.
class Row {
 public:
  explicit Row(std::vector<std::optional<std::string>> cells) : cells_(std::move(cells)) {}

  bool is_null(size_t i) const { return !cells_.at(i).has_value(); }
  const std::string& text(size_t i) const;  // "" for NULL
  int64_t i64(size_t i) const;              // 0 for NULL
  std::optional<int64_t> opt_i64(size_t i) const;
  size_t size() const { return cells_.size(); }

 private:
  std::vector<std::optional<std::string>> cells_;
};

using Rows = std::vector<Row>;
using Params = std::vector<Value>;

// NULL for an unset optional, else its value (integers as int64_t).
template <typename T>
Value nullable(const std::optional<T>& v) {
  if (!v) return nullptr;
  if constexpr (std::is_integral_v<T>)
    return int64_t{*v};
  else
    return *v;
}
// NULL for "", else the text.
inline Value nullable(const std::string& s) {
  if (s.empty()) return nullptr;
  return s;
}

// A column of a batch: rows bound together and read back as a table (see
// Connection::batch). Its values are text, int64_t or null.
enum class ColumnType { text, integer };
struct BatchColumn {
  std::string_view name;
  ColumnType type;
};
// A batch's rows, made one at a time as exec_batch reads them, so a large
// batch is never held whole: fill(i, cells) writes row i's cells into
// `cells`, one per column in order. The cells are reused from row to row.
using BatchFill = std::function<void(size_t row, std::span<Value> cells)>;

// How a transaction starts. `write` takes the write lock up front on SQLite
// (BEGIN IMMEDIATE), so a read-then-write cannot fail halfway with BUSY.
enum class TxMode { read, write };

// Leads a statement whose best plan depends on its values and the tables'
// size, such as one reading a list of ids: PostgreSQL plans it at each use
// instead of preparing it, so that a plan made while the tables were nearly
// empty (scans where lookups are due) cannot outlive that.
inline constexpr std::string_view kPlanEachTime = "/* planned at each use */ ";

// NOW_US read once for a whole statement: in a statement over many rows
// (a batch), PostgreSQL computes NOW_US again for each row that names it,
// as numeric arithmetic, and a scalar subquery is computed once.
inline constexpr const char* kNowOnce = "(SELECT NOW_US)";

class Connection {
 public:
  virtual ~Connection() = default;
  virtual Dialect dialect() const = 0;

  // Runs a statement and returns all its rows.
  virtual Rows query(std::string_view sql, const Params& params = {}) = 0;
  // A query whose rows are wanted only once the transaction's next
  // statement, its COMMIT say, is answered: on PostgreSQL, in a
  // transaction, it goes out with that statement in one pipeline (as
  // exec_batch's Send::with_next), a round trip less, and `read` gets its
  // rows as that pipeline is read; its error fails that statement. `read`
  // only keeps the rows: it must not throw. Elsewhere it runs at once.
  virtual void query_with_next(std::string_view sql, const Params& params, const std::function<void(Rows&&)>& read) = 0;
  // Runs a statement and returns the number of rows it changed.
  virtual int64_t exec(std::string_view sql, const Params& params = {}) = 0;
  // Runs a script of several statements with no parameters (migrations).
  virtual void exec_script(std::string_view sql) = 0;

  virtual void begin(TxMode mode) = 0;
  virtual void commit() = 0;
  virtual void rollback() = 0;  // never throws

  // Wakes whoever listens on `channel` once the transaction commits
  // (PostgreSQL's NOTIFY, sent with the transaction's next statement: an
  // error in it, such as a payload over 8000 bytes, fails that one). A
  // SQLite store has no listeners, its agents poll the file: nothing to do.
  virtual void notify(std::string_view channel, const std::string& payload) = 0;
  // From here to the end of the transaction, PostgreSQL plans every
  // statement once for any values, not for each set of them
  // (plan_cache_mode force_generic_plan, sent with the next statement):
  // kPlanEachTime statements too, and a plan is made again when it is
  // invalidated (new statistics, a schema change) or when `table` has
  // doubled or halved since the session's plans were made (a plan made for
  // an empty table must not outlive the table's growth: then every plan
  // the session cached is dropped). For statements whose one plan suits
  // any values, but which PostgreSQL may still plan at each use
  // (store/claim.cpp). Outside a transaction it does nothing. SQLite
  // prepares each statement once already: nothing to do.
  virtual void plan_once(std::string_view table) = 0;
  // Appended to a SELECT in a write transaction: the row-lock `clause` in
  // PostgreSQL's words ("FOR UPDATE", "FOR SHARE OF j", "FOR UPDATE OF r
  // SKIP LOCKED"), with a leading space. SQLite's write transaction holds
  // the whole file already: "".
  virtual std::string row_lock(std::string_view clause) const = 0;
  // A list of strings bound as one parameter, and the condition that
  // `column` is one of the list bound as $n.
  virtual Value list(const std::vector<std::string>& items) const = 0;
  virtual std::string in_list(std::string_view column, int n) const = 0;
  // A batch of rows read as the table `alias` with `columns`: the FROM
  // item of an INSERT … SELECT or UPDATE … FROM run by exec_batch, whose
  // parameters $1…$n-1 come before the batch's, and none after them (the
  // batch takes one per column on SQLite, two on PostgreSQL).
  virtual std::string batch(std::span<const BatchColumn> columns, int n, std::string_view alias) const = 0;
  // Runs `sql` (with batch(columns, params.size() + 1, …) in it) over
  // `rows` rows that `fill` makes, as one statement would: one reading of
  // the clock for all of them. PostgreSQL binds thousands of rows at once
  // as arrays (unnest); SQLite runs the prepared statement once per row,
  // which is what it is fastest at. Returns the rows changed, unless
  // `when` let it wait (then 0).
  //
  // Send::with_next, for a write whose count nobody reads: in a
  // transaction on PostgreSQL, a small batch waits to go out with the
  // transaction's next statement (or its COMMIT), in one pipeline, as a
  // NOTIFY does: a round trip less. A large one goes into that pipeline at
  // once, so the server writes it while the caller goes on; its answer is
  // read with the next statement's all the same. Its error, a unique
  // violation too, then fails that statement, which ends the transaction
  // all the same. Outside a transaction, and on SQLite, it runs at once.
  enum class Send { now, with_next };
  virtual int64_t exec_batch(std::string_view sql, const Params& params, std::span<const BatchColumn> columns,
                             size_t rows, const BatchFill& fill, Send when = Send::now) = 0;
  // The store's clock (NOW_US) runs `us` ahead of the database's from now
  // on: a test's fake clock. Statements already prepared are prepared anew.
  virtual void shift_clock(int64_t us) = 0;
  // From now on no wait for an answer goes past `deadline` (nothing: the
  // store timeout alone): a command that waits (jobctl wait --timeout)
  // gives up at its own time, not a whole JOBCTL_STORE_TIMEOUT later.
  // Past it, a statement fails as a store that did not answer. Only
  // PostgreSQL waits for answers; SQLite's reads never wait.
  virtual void answer_by(std::optional<std::chrono::steady_clock::time_point> deadline) { (void)deadline; }
  // From now on a wait for an answer also gives up, as one past its
  // deadline, once `stop` says so (nothing: never). It is asked each second
  // and whenever a signal interrupts the wait: jobctl run's Ctrl-C acts at
  // once while the store does not answer.
  virtual void give_up_when(std::function<bool()> stop) { (void)stop; }
  // SQLite: whether the file this connection has open was deleted or
  // replaced since (its path names another file now, or none): what is
  // written goes where nobody will read it. PostgreSQL: never.
  virtual bool file_replaced() { return false; }
};

// Commits on commit(); rolls back when destroyed without one (an exception
// unwinding through it), so a failed command writes nothing.
class Transaction {
 public:
  Transaction(Connection& c, TxMode mode) : conn_(c) { conn_.begin(mode); }
  ~Transaction() {
    if (!done_) conn_.rollback();
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    conn_.commit();
    done_ = true;
  }

 private:
  Connection& conn_;
  bool done_ = false;
};

// Thrown for a UNIQUE constraint violation, so callers can tell "someone
// else inserted this first" from a real failure.
class UniqueViolation : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The longest one store call may wait, end to end: JOBCTL_STORE_TIMEOUT (a
// duration such as 30s), else 30 s. A call that waits longer (a frozen or
// unreachable server, a SQLite file locked by another process) fails with
// jobctl::Error(ExitCode::store). Throws Error(usage) when the variable is
// malformed.
std::chrono::milliseconds store_timeout();

// A PostgreSQL array literal ({"a","b",NULL}): how the PostgreSQL driver
// binds lists and batches, and the two PostgreSQL-only statements (the
// claim, a batch of completions) bind theirs.
std::string pg_array(const std::vector<std::optional<std::string>>& items);

// `name` as a PostgreSQL identifier: in double quotes, its own doubled.
std::string quoted_identifier(std::string_view name);
// Appends one item (NULL when none) to an array literal being written
// between its "{" and "}".
void append_pg_array_item(std::string& array, const std::optional<std::string_view>& item);

// The first line of a statement, at most 80 characters (cut at a word,
// with " …"), as context in error messages.
std::string statement_summary(std::string_view sql);

// Whether opening a SQLite store may make its file (and its directories).
enum class Create { no, yes };

// Throws jobctl::Error(ExitCode::store) when the database cannot be opened,
// or (Create::no) has no file yet.
std::unique_ptr<Connection> open_sqlite(const std::string& path, Create create);
std::unique_ptr<Connection> open_postgres(const std::string& conninfo);

}  // namespace jobctl::store
