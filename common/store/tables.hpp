#pragma once
// The tables the store reads whole, each described once: its columns in
// the order every query selects them, their types, and what writes them.
// Rows are read and written by column name, checked when compiling:
//
//   Cells<kJobs> c{row};          c.text("queue")      (a misspelt name does not compile)
//   Writes<kJobs> w;              w.set("queue", s.queue)
//
// A new column is one entry here, one line in its mapper (rows.cpp) and
// its migration; the SELECT lists, the submit's INSERT and the update's
// SET are made from this table.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/store/sql.hpp"

namespace jobctl::store {

// What writes a column.
enum class Writer {
  key,         // the row's id, written once when it is made
  definition,  // a job's definition: written together from a JobSpec, at submit and at update
  made,        // a first value written with the row (and by state statements after)
  state,       // everything else: written by the statement that changes it
};

struct Column {
  std::string_view name;
  ColumnType type;
  Writer writer = Writer::state;
  std::string_view expr = {};  // selected as this SQL instead of alias.name (a computed column)
};

struct Table {
  std::string_view alias;  // the name every query gives the table ("j" for jobs)
  std::span<const Column> columns;

  constexpr size_t size() const { return columns.size(); }
  consteval size_t index(std::string_view column) const {
    for (size_t i = 0; i < columns.size(); ++i)
      if (columns[i].name == column) return i;
    throw "no such column in this table";  // a compile error: index is consteval
  }
};

namespace detail {
using enum ColumnType;
inline constexpr Column kJobColumns[] = {
    {"id", text, Writer::key},
    {"name", text, Writer::definition},
    {"queue", text, Writer::definition},
    {"priority", integer, Writer::definition},
    {"command", text, Writer::definition},
    {"env", text, Writer::definition},
    {"cwd", text, Writer::definition},
    {"payload", text, Writer::definition},
    {"timeout_us", integer, Writer::definition},
    {"idempotency_key", text, Writer::definition},
    {"version", integer},
    {"paused", integer},
    {"created_at", integer},
    {"max_retries", integer, Writer::definition},
    {"backoff", text, Writer::definition},
    {"retry_delay_us", integer, Writer::definition},
    {"max_retry_delay_us", integer, Writer::definition},
    {"retry_for_us", integer, Writer::definition},
    {"no_retry_exit_codes", text, Writer::definition},
    {"max_deliveries", integer, Writer::definition},
    {"delivery", text, Writer::definition},
    {"cron", text, Writer::definition},
    {"tz", text, Writer::definition},
    {"misfire", text, Writer::definition},
    {"catchup_window_us", integer, Writer::definition},
    {"overlap", text, Writer::definition},
    {"max_concurrent", integer, Writer::definition},
    {"jitter_us", integer, Writer::definition},
    {"starts_at", integer, Writer::definition},
    {"ends_at", integer, Writer::definition},
    {"max_runs", integer, Writer::definition},
    {"fired", integer},
    {"next_fire_at", integer, Writer::made},
    {"schedule_anchor", integer, Writer::made},
    {"deleted_at", integer},
    {"target", text, Writer::definition},
    {"concurrency_key", text, Writer::definition},
    {"tenant", text, Writer::definition},
    {"fan_out", text, Writer::definition},
    {"stagger_us", integer, Writer::definition},
    {"kind", text, Writer::made},
    {"dag_id", text, Writer::made},
    {"notify", text, Writer::definition},
    {"run_as", text, Writer::definition},
};

// A run has no definition: insert_runs (new_runs.hpp) makes it from values.
inline constexpr Column kRunColumns[] = {
    {"id", text, Writer::key},
    {"job_id", text},
    {"queue", text},
    {"status", text},
    {"created_at", integer},
    {"available_at", integer},
    {"started_at", integer},
    {"finished_at", integer},
    {"lease_owner", text},
    {"lease_expires_at", integer},
    {"fence", integer},
    {"deliveries", integer},
    {"attempts", integer},
    {"cancel_requested", integer},
    {"exit_code", integer},
    {"error", text},
    {"failures", integer},
    {"replay_of", text},
    {"replayed_at", integer},
    {"dismissed_at", integer},
    {"occurrence", integer},
    {"job_version", integer},
    {"pinned_to", text},
    {"dag_run_id", text},
    {"dag_node", text},
    {"waiting_on", integer},
    {"progress", text},
    {"progress_message", text},
    {"progress_at", integer},
    {"checkpoint", text},
};

// What a claim hands back of each run it leased (the runs it just updated,
// and the store's clock), before its job's columns.
inline constexpr Column kClaimedColumns[] = {
    {"id", text, Writer::key},
    {"job_id", text},
    {"fence", integer},
    {"attempts", integer},
    {"available_at", integer},
    {"failures", integer},
    {"started_at", integer},
    {"claimed_at", integer, Writer::state, "NOW_US"},
    {"occurrence", integer},
    {"queue", text},
    {"tenant", text},
    {"dag_run_id", text},
    {"dag_node", text},
    {"checkpoint", text},
};
}  // namespace detail

inline constexpr Table kJobs{"j", detail::kJobColumns};
inline constexpr Table kRuns{"r", detail::kRunColumns};
inline constexpr Table kClaimed{"c", detail::kClaimedColumns};

// "j.id, j.name, …": the table's columns as a select list, under its own
// alias, another one, or none ("").
std::string select_list(const Table& t);
std::string select_list(const Table& t, std::string_view alias);

// "name = $3, queue = $4, …": the columns `writer` writes, set from
// parameters numbered from `first_param` on, in table order.
std::string set_list(const Table& t, Writer writer, size_t first_param);

// The table's columns that `writer` writes, in table order, as the columns
// of a batch (Connection::batch).
std::vector<BatchColumn> batch_columns(const Table& t, std::initializer_list<Writer> writers);

// Throws Error(internal): a mapper left `column` unset.
[[noreturn]] void throw_unset_column(std::string_view column);

// A column of T named in the source: resolved to its position when compiling.
template <const Table& T>
struct ColumnName {
  size_t index;
  consteval ColumnName(const char* name) : index(T.index(name)) {}  // NOLINT: implicit from a literal on purpose
};

// One table's cells within a result row, from column `first` on (a row
// that joins two tables has the second after the first).
template <const Table& T>
class Cells {
 public:
  explicit Cells(const Row& row, size_t first = 0) : row_(row), first_(first) {}

  bool is_null(ColumnName<T> c) const { return row_.is_null(first_ + c.index); }
  const std::string& text(ColumnName<T> c) const { return row_.text(first_ + c.index); }
  int64_t i64(ColumnName<T> c) const { return row_.i64(first_ + c.index); }
  std::optional<int64_t> opt_i64(ColumnName<T> c) const { return row_.opt_i64(first_ + c.index); }
  std::optional<std::string> opt_text(ColumnName<T> c) const {
    if (is_null(c)) return std::nullopt;
    return text(c);
  }

 private:
  const Row& row_;
  size_t first_;
};

// The values of the columns a writer writes, set by name. values() hands
// them back in table order, the order of batch_columns(T, writers), and
// throws internal when one was left unset (a mapper that forgot a column).
template <const Table& T>
class Writes {
 public:
  explicit Writes(std::initializer_list<Writer> writers) {
    for (Writer w : writers) writers_ |= bit(w);
  }

  void set(ColumnName<T> c, Value v) {
    values_[c.index] = std::move(v);
    set_[c.index] = true;
  }

  // Moves the values out, in the table's order, into `out` (as many cells
  // as the writers' columns: a batch row) or a new vector. Call it once, last.
  void move_to(std::span<Value> out) && {
    for (size_t i = 0; i < T.size(); ++i)
      if (written(T.columns[i].writer) && !set_[i]) throw_unset_column(T.columns[i].name);
    size_t n = 0;
    for (size_t i = 0; i < T.size(); ++i)
      if (written(T.columns[i].writer)) out[n++] = std::move(values_[i]);
  }
  std::vector<Value> values() && {
    size_t n = 0;
    for (const auto& c : T.columns) n += written(c.writer) ? 1 : 0;
    std::vector<Value> out(n);
    std::move(*this).move_to(out);
    return out;
  }

 private:
  static unsigned bit(Writer w) { return 1u << static_cast<unsigned>(w); }
  bool written(Writer w) const { return (writers_ & bit(w)) != 0; }
  unsigned writers_ = 0;  // a bit per Writer
  std::array<Value, T.size()> values_;
  std::array<bool, T.size()> set_{};
};

}  // namespace jobctl::store
