// PostgreSQL driver for store::Connection over libpq: statements prepared
// once per connection (named s1, s2, …), parameters sent as text except
// blobs (binary bytea) and a batch's columns (binary arrays, or one value
// each; see batch()), results read as text with bytea decoded to bytes.
// A connection that broke is opened again before the next statement, so a
// long-lived agent survives a database restart.
//
// Every answer is awaited with a deadline (the store timeout): the
// connection is non-blocking and the driver polls its socket, so a frozen
// server costs a caller at most that long, then an Error(store). A
// statement whose answer never came may or may not have been applied; the
// connection is dropped, never reused half-way through a reply.
//
// A new session's settings, a transaction's BEGIN, its NOTIFYs (delivered
// at COMMIT wherever they stand in it) and the writes it lets wait
// (exec_batch's Send::with_next) go out with the next statement in one
// pipeline (libpq's pipeline mode): a transaction of n statements costs n
// round trips (COMMIT included), not n + 1 + its NOTIFYs, less those
// writes, and a connection's first statement brings its settings along.
// A transaction that ran no statement sends nothing. A large batch that
// may wait goes out at once instead, still without a sync (its answer is
// read with the next statement's): the server writes it while this
// process makes what follows (see kSendAtOnceRows).
#include <poll.h>

#include <chrono>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "common/config/dsn.hpp"
#include "common/config/libpq.hpp"
#include "common/store/plan_size.hpp"
#include "common/store/postgres_session.hpp"
#include "common/store/sql.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"

namespace jobctl::store {
namespace {

using config::libpq;

constexpr Oid kByteaOid = 17;
constexpr const char* kNowUs = "(extract(epoch from now()) * 1000000)::int8";
constexpr const char* kClockUs = "(extract(epoch from clock_timestamp()) * 1000000)::int8";
constexpr std::string_view kPlanOnce = "SET LOCAL plan_cache_mode = force_generic_plan";
// A generic plan is made for the tables as they are then, and PostgreSQL
// makes it again only on new statistics, which autovacuum may take a
// minute to gather. An agent that planned its claim on an empty store kept
// that plan once a herd of 100,000 runs had come: each claim read the whole
// table to find its runs by ctid (a sequential scan, then costed at 10
// pages), 6-8 s a claim until autovacuum analysed it (scripts/bench, the
// herd). So plan_once reads the size of the table the plans are for, in
// the pipeline with the transaction's first statement, and once it has
// doubled or halved (by more than kPlanSlack) since the plans were made,
// DISCARD PLANS goes out with the next statement: every plan the session
// cached is made again at its next use. Made again once a second instead,
// an idle agent's polls had every plan made anew each time: 8 ms of server
// CPU a second for one idle agent (pg_stat_statements, track_planning),
// 5 ms of it the claim's.
constexpr std::string_view kForgetPlans = "DISCARD PLANS";

// NOW_US and CLOCK_US, `offset_us` ahead (a test's shifted clock; see
// shift_clock).
std::string translate(std::string_view sql, int64_t offset_us) {
  std::string out;
  out.reserve(sql.size() + 64);
  auto put = [&](const char* clock) {
    if (offset_us == 0) out += clock;
    else out += fmt::format("({} + {})", clock, offset_us);
  };
  for (size_t i = 0; i < sql.size(); ++i) {
    if (sql.compare(i, 6, "NOW_US") == 0) {
      put(kNowUs);
      i += 5;
    } else if (sql.compare(i, 8, "CLOCK_US") == 0) {
      put(kClockUs);
      i += 7;
    } else {
      out += sql[i];
    }
  }
  return out;
}

// How many rows one batch statement binds: memory stays bounded.
constexpr size_t kBatchRows = 5000;
// A batch of this many rows or more that may wait for the next statement
// (Send::with_next) goes out at once, in the pipeline, its answer read
// with the next statement's: the server writes it while the caller makes
// the next (a part of a `submit --file` read while the last is written).
// A smaller one rides with the next statement, in the same packets.
constexpr size_t kSendAtOnceRows = 1000;

// A batch column's items in one part, as one array parameter in
// PostgreSQL's binary form (array_send's): the server reads each item as it
// stands, where the text form had it parse the whole array first (array_in
// was 17 % of the server's time in a submit --file of 100,000 jobs). While
// every item is the same value, none is written: such a column goes as
// that one value instead (see batch()).
class BinaryArray {
 public:
  explicit BinaryArray(ColumnType type) : type_(type), bytes_(kHeader, '\0') {}

  void add(const Value& v) {
    // A cell of the column's type or NULL, whether or not the column varies.
    const bool fits = std::holds_alternative<std::nullptr_t>(v) ||
                      (type_ == ColumnType::integer ? std::holds_alternative<int64_t>(v)
                                                    : std::holds_alternative<std::string>(v));
    if (!fits) throw Error(ExitCode::internal, "a batch cell is not of its column's type");
    if (!varied_) {
      if (count_ == 0) first_ = v;
      if (count_ == 0 || v == first_) {
        ++count_;
        return;
      }
      varied_ = true;
      for (int32_t i = 0; i < count_; ++i) write(first_);
    }
    ++count_;
    write(v);
  }

  // Every item is the same value (NULL too): value().
  bool one_value() const { return !varied_; }
  const Value& value() const { return first_; }

  // The parameter: the header (one dimension of count_ items, counted
  // from 1) written into the room left for it ahead of the items.
  Blob finish() && {
    if (!varied_)
      for (int32_t i = 0; i < count_; ++i) write(first_);
    size_t at = 0;
    for (int64_t word : {int64_t{1}, int64_t{nulls_ > 0}, int64_t{type_ == ColumnType::integer ? kInt8Oid : kTextOid},
                         int64_t{count_}, int64_t{1}}) {
      write_big_endian(word, 4, bytes_.data() + at);
      at += 4;
    }
    return Blob{std::move(bytes_)};
  }

 private:
  static constexpr size_t kHeader = 5 * 4;
  static constexpr Oid kTextOid = 25, kInt8Oid = 20;

  static void write_big_endian(int64_t n, int size, char* out) {
    const auto bits = static_cast<uint64_t>(n);
    for (int i = 0; i < size; ++i) out[i] = static_cast<char>((bits >> ((size - 1 - i) * 8)) & 0xff);
  }
  void append(int64_t n, int size) {
    bytes_.resize(bytes_.size() + static_cast<size_t>(size));
    write_big_endian(n, size, bytes_.data() + bytes_.size() - static_cast<size_t>(size));
  }
  void write(const Value& v) {
    if (std::holds_alternative<std::nullptr_t>(v)) {
      ++nulls_;
      append(-1, 4);
    } else if (type_ == ColumnType::integer) {
      append(8, 4);
      append(std::get<int64_t>(v), 8);
    } else {
      const auto& text = std::get<std::string>(v);
      append(static_cast<int64_t>(text.size()), 4);
      bytes_ += text;
    }
  }

  ColumnType type_;
  std::string bytes_;
  Value first_;
  bool varied_ = false;
  int32_t count_ = 0, nulls_ = 0;
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

std::string decode_bytea(const char* p, int len) {
  std::string out;
  if (len >= 2 && p[0] == '\\' && p[1] == 'x') {
    out.reserve(static_cast<size_t>(len - 2) / 2);
    for (int i = 2; i + 1 < len; i += 2)
      out += static_cast<char>((hex_value(p[i]) << 4) | hex_value(p[i + 1]));
  }
  return out;
}

// libpq's messages span lines ("…\n\tThis probably means…"): errors and
// logs here are one line each.
std::string joined_lines(const std::string& text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// The rows an INSERT, UPDATE or DELETE changed.
int64_t rows_changed(PGresult* res) {
  const char* n = libpq().PQcmdTuples(res);
  return (n && *n) ? std::stoll(n) : 0;
}

struct ResultGuard {
  PGresult* res;
  ~ResultGuard() { libpq().PQclear(res); }
};

// The hint for a server error that is the server's condition or its
// settings (exit 5, with the server's own message), not a bug in jobctl:
// none for any other SQLSTATE.
std::optional<std::string> server_condition(const std::string& state) {
  auto is = [&](std::string_view prefix) { return state.rfind(prefix, 0) == 0; };
  if (state == "25006")
    return "the server is read-only (a standby?): point --db at the primary; with several hosts in the DSN, add "
           "target_session_attrs=read-write";
  if (state == "57014")
    return "it ran past the store timeout, which jobctl makes the session's statement_timeout: a lock held "
           "elsewhere or a busy server; retry, or raise JOBCTL_STORE_TIMEOUT";
  if (state == "55P03") return "a lock was not granted within lock_timeout; retry, or raise lock_timeout for jobctl's role";
  if (state == "42501")
    return "the role lacks a privilege on jobctl's tables or schema; connect as their owner, or grant it (jobctl(1), "
           "POSTGRESQL)";
  if (state == "3D000" || state == "3F000") return "check the database and schema named in --db";
  if (state == "28P01" || state == "28000") return "check the user and password in --db or ~/.pgpass";
  if (is("08") || is("57P") || is("53") || is("58")) return "check that the server is up and has room; jobctl retries "
                                                            "where it can";
  if (is("40")) return "the transaction conflicted with another and was rolled back; retry";
  return std::nullopt;
}

class PostgresConnection final : public Connection {
  using Clock = std::chrono::steady_clock;

  struct Statement {
    std::string sql;
    Params params;
    std::string name = {};  // prepared as, if it is
    bool setup = false;     // sets the transaction up (see only_setup_ahead)
    // Sent ahead, it is given its result (rows) before the next statement's.
    std::function<void(const PGresult*)> answered = {};
  };

 public:
  explicit PostgresConnection(const std::string& conninfo) : conninfo_(conninfo), timeout_(store_timeout()) {
    connect(Reconnect::no);
  }

  ~PostgresConnection() override { libpq().PQfinish(conn_); }

  Dialect dialect() const override { return Dialect::postgres; }

  Rows query(std::string_view sql, const Params& params) override {
    ResultGuard r{run(sql, params)};
    return rows_of(r.res);
  }

  void query_with_next(std::string_view sql, const Params& params, const std::function<void(Rows&&)>& read) override {
    if (!in_transaction_) return read(query(sql, params));
    refuse_if_lost(sql);
    ensure_connected();  // prepared_name() may prepare it now
    const std::string* name = prepared_name(sql);
    forget_plans_first();
    ahead_.push_back({std::string(sql), params, name ? *name : std::string(), false,
                      [read](const PGresult* r) { read(rows_of(r)); }});
  }

  int64_t exec(std::string_view sql, const Params& params) override {
    ResultGuard r{run(sql, params)};
    return rows_changed(r.res);
  }

  void exec_script(std::string_view sql) override {
    refuse_if_lost(sql);
    ensure_connected();
    if (anything_ahead()) libpq().PQclear(run_pipeline(std::nullopt));  // a script cannot join a pipeline
    script(sql);
  }

  // The claim's limits rely on each statement seeing what committed before
  // it (see store/claim.cpp): never a server default of REPEATABLE READ.
  void begin(TxMode mode) override {
    lost_ = false;
    ahead_.clear();
    // A read sees one snapshot for all its statements, as SQLite's does.
    ahead_.push_back({mode == TxMode::read ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
                                           : "BEGIN ISOLATION LEVEL READ COMMITTED",
                      {}});
    in_transaction_ = true;
    begun_ = false;
  }

  void commit() override {
    refuse_if_lost("COMMIT");
    if (!begun_ && only_setup_ahead()) {  // nothing ran in it, nothing to notify: nothing to end
      end_transaction();
      return;
    }
    ensure_connected();
    try {
      ResultGuard r{run_pipeline(Statement{"COMMIT", {}})};
    } catch (const Error& e) {
      // No answer, or the connection gone, once COMMIT may have reached the
      // server: whether the transaction committed is not known. A script
      // told "exit 5, nothing written" retried, and made the job twice
      // (a tester, with the synchronous standby frozen).
      if (e.code() != ExitCode::store || (conn_ && libpq().PQstatus(conn_) == CONNECTION_OK)) throw;  // rolled back
      end_transaction();
      throw Error(ExitCode::store,
                  fmt::format("the outcome is unknown: the change may or may not have been saved, as {}", e.what()),
                  "look before you retry (jobctl get, ls); a submit retried with the same --idempotency-key is "
                  "never made twice");
    }
    end_transaction();
  }

  void rollback() override {
    const bool sent = begun_ && !lost_;
    lost_ = false;
    end_transaction();
    if (!sent) return;
    try {
      // What went out without a sync is answered first, whatever it is,
      // and read by nobody: a query's reader may be gone with its caller.
      if (!sent_.empty()) {
        for (auto& s : sent_) s.answered = nullptr;
        try {
          libpq().PQclear(run_pipeline(std::nullopt));
        } catch (const std::exception&) {  // its error (a unique violation too): rolled back below all the same
        }
      }
      if (conn_ && libpq().PQstatus(conn_) == CONNECTION_OK) script("ROLLBACK");
    } catch (const std::exception&) {
      // Never throws: a connection that cannot roll back is dropped, and
      // the server ends the transaction with it.
    }
  }

  void notify(std::string_view channel, const std::string& payload) override {
    refuse_if_lost("SELECT pg_notify($1, $2)");
    Params params{std::string(channel), payload};
    if (in_transaction_)
      ahead_.push_back({"SELECT pg_notify($1, $2)", std::move(params)});
    else
      libpq().PQclear(run("SELECT pg_notify($1, $2)", params));
  }

  void plan_once(std::string_view table) override {
    if (!in_transaction_) return;
    ahead_.push_back({std::string(kPlanOnce), {}, {}, true});
    auto read = [this](const PGresult* r) {
      const char* bytes = libpq().PQgetvalue(r, 0, 0);
      int64_t n = 0;
      std::from_chars(bytes, bytes + std::strlen(bytes), n);
      planned_table_is(n);
    };
    // Prepared on its second use, as any statement: it goes with every claim.
    std::string size = fmt::format("SELECT pg_relation_size('{}')", table);
    ensure_connected();
    const std::string* name = prepared_name(size);
    ahead_.push_back({std::move(size), {}, name ? *name : std::string(), true, read});
  }

  std::string row_lock(std::string_view clause) const override { return fmt::format(" {}", clause); }

  Value list(const std::vector<std::string>& items) const override { return pg_array({items.begin(), items.end()}); }

  std::string in_list(std::string_view column, int n) const override {
    return fmt::format("{} = ANY (${}::text[])", column, n);
  }

  // One array per column, one parameter each, unnested side by side in a
  // select list: PostgreSQL zips them row by row as the statement reads
  // them. unnest(a, b, …) in FROM stored every row in a tuplestore first
  // (a fifth of the server's time in a submit --file of 100,000 jobs).
  //
  // Then, one parameter per column again: its value, when the column has
  // that one value in every row of the statement. Its array is then NULL:
  // unnest() of it returns no rows, PostgreSQL pads a select list's
  // shorter set-returning functions with NULL at no cost per row, and
  // COALESCE takes the value. A column that varies has its value NULL.
  // (Most of a batch's columns are the same in every row: a plain job has
  // 40, of which only its id varies in a submit --file.) The text of the
  // statement is the same either way, so it is prepared once.
  std::string batch(std::span<const BatchColumn> columns, int n, std::string_view alias) const override {
    const int count = static_cast<int>(columns.size());
    std::string arrays, cells;
    for (int i = 0; i < count; ++i) {
      const auto& c = columns[static_cast<size_t>(i)];
      const char* type = c.type == ColumnType::integer ? "int8" : "text";
      arrays += fmt::format("{}unnest(${}::{}[]) AS {}", i ? ", " : "", n + i, type, c.name);
      cells += fmt::format("{}COALESCE(b.{}, ${}::{}) AS {}", i ? ", " : "", c.name, n + count + i, type, c.name);
    }
    return fmt::format("(SELECT {} FROM (SELECT {}) AS b) AS {}", cells, arrays, alias);
  }

  // A statement per kBatchRows rows, each column bound as one array or as
  // its one value (see batch()). The server inserts one while this
  // process encodes the next: each is sent before the next is made, and
  // (Send::now) awaited after, one in flight at most, so memory stays
  // bounded. One that may wait, in a transaction, goes into the pipeline
  // at once (kSendAtOnceRows), or waits for the next statement if small.
  int64_t exec_batch(std::string_view sql, const Params& params, std::span<const BatchColumn> columns, size_t rows,
                     const BatchFill& fill, Send when) override {
    int64_t changed = 0;
    std::vector<Value> cells(columns.size());
    auto make = [&](size_t start) {
      std::vector<BinaryArray> arrays;
      for (const auto& column : columns) arrays.emplace_back(column.type);
      for (size_t r = start; r < std::min(rows, start + kBatchRows); ++r) {
        fill(r, cells);
        for (size_t c = 0; c < columns.size(); ++c) arrays[c].add(cells[c]);
      }
      // The arrays, then the values (see batch()). A column with one
      // value in every row goes as a NULL array and that value. The first
      // column always goes whole: there are as many rows as the longest
      // array has items.
      Params p = params, values;
      p.reserve(params.size() + 2 * arrays.size());
      values.reserve(arrays.size());
      for (size_t c = 0; c < arrays.size(); ++c) {
        if (c > 0 && arrays[c].one_value()) {
          p.emplace_back(nullptr);
          values.push_back(arrays[c].value());
        } else {
          p.emplace_back(std::move(arrays[c]).finish());
          values.emplace_back(nullptr);
        }
      }
      p.insert(p.end(), std::make_move_iterator(values.begin()), std::make_move_iterator(values.end()));
      return p;
    };
    if (rows == 0) return 0;
    if (when == Send::with_next && in_transaction_) {
      for (size_t start = 0; start < rows; start += kBatchRows) {
        Params p = make(start);
        refuse_if_lost(sql);
        ensure_connected();  // prepared_name() may prepare it now
        const std::string* name = prepared_name(sql);
        ahead_.push_back({std::string(sql), std::move(p), name ? *name : std::string()});
        if (rows >= kSendAtOnceRows) send_ahead();
      }
      return 0;
    }
    if (rows <= kBatchRows) return exec(sql, make(0));  // prepared on its second use, as any statement
    bool in_flight = false;
    auto answered = [&] {
      ResultGuard r{await(sql)};
      check(r.res, sql);
      changed += rows_changed(r.res);
      in_flight = false;
    };
    for (size_t start = 0; start < rows; start += kBatchRows) {
      Params p;
      try {
        p = make(start);
      } catch (...) {  // no answer is left unread on the connection
        if (in_flight) libpq().PQclear(await(sql));
        throw;
      }
      if (in_flight) answered();
      refuse_if_lost(sql);
      ensure_connected();  // a session opened anew has its settings to send
      if (anything_ahead()) {  // a BEGIN or settings to go with it: in one pipeline
        changed += exec(sql, p);
        continue;
      }
      send(sql, nullptr, p);
      in_flight = true;
      if (!flush(sql, answer_deadline())) answered();  // the connection failed: throws its error
    }
    if (in_flight) answered();
    return changed;
  }

  // Statements prepared with the old clock are dropped on both sides.
  void answer_by(std::optional<Clock::time_point> deadline) override { answer_by_ = deadline; }
  void give_up_when(std::function<bool()> stop) override { give_up_when_ = std::move(stop); }

  void shift_clock(int64_t us) override {
    ensure_connected();
    clock_offset_us_ += us;
    if (!prepared_.empty()) script("DEALLOCATE ALL");
    prepared_.clear();
    seen_.clear();
  }

 private:
  // JIT compilation costs ~100 ms per statement whose estimate crosses
  // jit_above_cost, and the claim's window functions do: it made a claim
  // 60x slower (1.8 ms vs 113 ms for 100 waiting runs). Every statement
  // here is short, so JIT never pays. The server cancels a statement a
  // little before the driver would give up on it, so a slow statement ends
  // with the server's own error. Both go out with the first statement.
  void configure_session() {
    auto server_ms = std::max<int64_t>(timeout_.count() - timeout_.count() / 10, 1);
    settings_ = {{"SET jit = off", {}}, {fmt::format("SET statement_timeout = {}", server_ms), {}}};
  }

  enum class Reconnect { no, yes };

  void connect(Reconnect again) {
    conn_ = connect_postgres(conninfo_);
    if (libpq().PQstatus(conn_) != CONNECTION_OK || libpq().PQsetnonblocking(conn_, 1) != 0) {
      std::string msg = config::without_secrets(conninfo_, joined_lines(libpq().PQerrorMessage(conn_)));
      drop();
      // The server refused one more session (max_connections, or the role's
      // or database's CONNECTION LIMIT): it is up, and the DSN is right.
      const bool full = msg.find("too many connections") != std::string::npos ||
                        msg.find("remaining connection slots") != std::string::npos;
      throw Error(ExitCode::store,
                  fmt::format("{} PostgreSQL at {}: {}", again == Reconnect::yes ? "lost the connection to" : "cannot connect to",
                              where(), msg),
                  full ? "raise the server's max_connections or the role's CONNECTION LIMIT, or run fewer clients: "
                         "each jobagent holds three connections (jobagent(8), --db)"
                       : "check that the server is running and the DSN (--db or JOBCTL_DB) is right");
    }
    configure_session();
  }

  // A broken connection is opened anew; its prepared statements are gone.
  // Not in a transaction under way: the server ended it with the old one.
  void ensure_connected() {
    if (conn_ && libpq().PQstatus(conn_) == CONNECTION_OK && !ended_by_server()) return;
    if (begun_) lost_ = true;
    refuse_if_lost("");
    drop();
    connect(Reconnect::yes);
    // What waits to go out was prepared on the old session, if at all: it
    // goes out by its text (a name would be unknown to the new one).
    for (auto& s : ahead_) s.name.clear();
  }

  // Whether the server has ended this idle connection (a restart,
  // pg_terminate_backend, idle_session_timeout): it sent its error and
  // closed, so the socket reads. Found so before a statement goes out on
  // it, not by that statement's failure (jobctl serve answered 503 once per
  // thread after a restart). Not while answers are due or a transaction is
  // under way: those are read, and a lost transaction refused, as ever.
  // Only after a second idle: a connection in steady use (an agent's claims,
  // heartbeats and completions) pays no system call for it.
  bool ended_by_server() {
    if (begun_ || !sent_.empty()) return false;
    const auto now = Clock::now();
    const bool idle = now - last_look_ >= std::chrono::seconds(1);
    last_look_ = now;
    if (!idle) return false;
    // Its error message, then the end of the stream, each read as it is
    // there (libpq reads the one without looking for the other).
    for (int reads = 0; reads < 4; ++reads) {
      pollfd p{libpq().PQsocket(conn_), POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) break;
      if (!libpq().PQconsumeInput(conn_)) return true;
    }
    return libpq().PQstatus(conn_) != CONNECTION_OK;
  }

  // Until the transaction ends (rollback, or a new begin), every statement
  // of one whose connection was lost fails: none may run on a new
  // connection, outside it, nor may its COMMIT succeed there.
  void refuse_if_lost(std::string_view sql) {
    if (!lost_) return;
    throw Error(ExitCode::store,
                fmt::format("lost the connection to PostgreSQL at {} in a transaction, which the server rolled back{}",
                            where(), sql.empty() ? "" : fmt::format(" (in: {})", statement_summary(sql))),
                "retry; check that the server is up");
  }

  // Runs a script of statements without parameters, at once.
  void script(std::string_view sql) {
    std::string text = translate(sql, clock_offset_us_);
    if (!libpq().PQsendQuery(conn_, text.c_str())) fail_to_send(sql);
    ResultGuard r{await(sql)};
    check(r.res, sql);
  }

  void drop() {
    libpq().PQfinish(conn_);
    conn_ = nullptr;
    settings_.clear();
    sent_.clear();
    sent_settings_ = 0;
    syncs_sent_ = 0;
    prepared_.clear();
    seen_.clear();
    plans_for_.reset();  // a new session plans afresh
    forget_plans_ = false;
  }

  std::string where() const { return config::redacted({config::Backend::postgres, conninfo_}); }

  [[noreturn]] void fail_to_send(std::string_view sql) {
    std::string msg = joined_lines(libpq().PQerrorMessage(conn_));
    drop();
    throw Error(ExitCode::store, fmt::format("PostgreSQL at {}: {} (in: {})", where(), msg, statement_summary(sql)));
  }

  // Waits until the socket is ready for `events` or the deadline passes;
  // false on the deadline.
  bool wait_socket(short events, Clock::time_point deadline) {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0 || (give_up_when_ && give_up_when_())) return false;
      pollfd p{libpq().PQsocket(conn_), events, 0};
      int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)) + 1);
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return true;  // let libpq report it
    }
  }

  // When an answer is due: JOBCTL_STORE_TIMEOUT from now, or the caller's
  // earlier deadline (answer_by).
  Clock::time_point answer_deadline() const {
    const auto due = Clock::now() + timeout_;
    return answer_by_ && *answer_by_ < due ? *answer_by_ : due;
  }

  [[noreturn]] void give_up(std::string_view sql) {
    drop();
    if (give_up_when_ && give_up_when_())
      throw Error(ExitCode::store,
                  fmt::format("stopped waiting for PostgreSQL at {} (in: {})", where(), statement_summary(sql)));
    if (answer_by_ && Clock::now() >= *answer_by_)
      throw Error(ExitCode::store,
                  fmt::format("PostgreSQL at {} did not answer before the command's own deadline (in: {})", where(),
                              statement_summary(sql)));
    throw Error(ExitCode::store,
                fmt::format("PostgreSQL at {} did not answer within {} (in: {})", where(),
                            util::format_duration(std::chrono::duration_cast<util::Micros>(timeout_)),
                            statement_summary(sql)),
                "the server is down, frozen or overloaded; JOBCTL_STORE_TIMEOUT sets this limit");
  }

  static bool failed(const PGresult* r) {
    ExecStatusType st = libpq().PQresultStatus(r);
    return st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_EMPTY_QUERY;
  }

  // Pushes what libpq holds to the server, reading meanwhile; false when
  // the connection failed (libpq then reports it). Gives up at the deadline.
  bool flush(std::string_view sql, Clock::time_point deadline) {
    int flushed;
    while ((flushed = libpq().PQflush(conn_)) == 1) {
      if (!wait_socket(POLLIN | POLLOUT, deadline)) give_up(sql);
      if (!libpq().PQconsumeInput(conn_)) break;
    }
    return flushed >= 0;
  }

  // Waits until PQgetResult would not block. Gives up at the deadline,
  // freeing `held`, a result the caller keeps meanwhile.
  void await_readable(std::string_view sql, Clock::time_point deadline, PGresult* held) {
    while (libpq().PQisBusy(conn_)) {
      if (!wait_socket(POLLIN, deadline)) {
        libpq().PQclear(held);
        give_up(sql);
      }
      if (!libpq().PQconsumeInput(conn_)) break;
    }
  }

  // The answer to what was just sent: its last result, or its first error.
  // Gives up (dropping the connection) at the deadline.
  PGresult* await(std::string_view sql) {
    auto deadline = answer_deadline();
    const bool sent = flush(sql, deadline);
    PGresult* keep = nullptr;
    for (;;) {
      if (sent) await_readable(sql, deadline, keep);
      PGresult* r = libpq().PQgetResult(conn_);
      if (!r) break;
      // Keep the first error, else the last result.
      if (keep && failed(keep)) {
        libpq().PQclear(r);
      } else {
        libpq().PQclear(keep);
        keep = r;
      }
      if (libpq().PQstatus(conn_) != CONNECTION_OK) break;
    }
    return keep;
  }

  // Sends one statement (prepared as `name`, if it is) without awaiting it.
  void send(std::string_view sql, const std::string* name, const Params& params) {
    std::vector<std::string> text(params.size());
    std::vector<const char*> values(params.size());
    std::vector<int> lengths(params.size()), formats(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      const Value& v = params[i];
      if (std::holds_alternative<std::nullptr_t>(v)) {
        values[i] = nullptr;
        continue;
      }
      if (auto* n = std::get_if<int64_t>(&v)) {
        text[i] = std::to_string(*n);
      } else if (auto* s = std::get_if<std::string>(&v)) {
        // libpq reads a text parameter up to its first NUL: refused rather
        // than cut short (job input refuses NUL bytes before they get
        // here). The session goes, with whatever of a pipeline went out.
        if (s->find('\0') != std::string::npos) {
          drop();
          throw Error(ExitCode::internal, fmt::format("parameter ${} of a statement holds a NUL byte (in: {})", i + 1,
                                                      statement_summary(sql)));
        }
        values[i] = s->c_str();
        lengths[i] = static_cast<int>(s->size());
        continue;
      } else {
        const auto& b = std::get<Blob>(v).bytes;
        values[i] = b.data();
        lengths[i] = static_cast<int>(b.size());
        formats[i] = 1;
        continue;
      }
      values[i] = text[i].c_str();
      lengths[i] = static_cast<int>(text[i].size());
    }
    int sent;
    if (name) {
      sent = libpq().PQsendQueryPrepared(conn_, name->c_str(), static_cast<int>(params.size()), values.data(), lengths.data(),
                                 formats.data(), 0);
    } else {
      std::string statement = translate(sql, clock_offset_us_);
      sent = libpq().PQsendQueryParams(conn_, statement.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                               lengths.data(), formats.data(), 0);
    }
    if (!sent) fail_to_send(sql);
  }

  // The statement's result; throws its error, or the error of one sent
  // ahead of it.
  PGresult* run(std::string_view sql, const Params& params) {
    refuse_if_lost(sql);
    ensure_connected();
    const std::string* name = prepared_name(sql);
    forget_plans_first();
    if (anything_ahead()) return run_pipeline(Statement{std::string(sql), params}, name);
    send(sql, name, params);
    PGresult* res = await(sql);
    try {
      check(res, sql);
    } catch (...) {
      libpq().PQclear(res);
      throw;
    }
    return res;
  }

  // Sends a new session's settings and what waits in ahead_ into the
  // pipeline, without a sync: their answers are read with the next
  // statement's (run_pipeline). The settings have a sync of their own, so
  // they commit by themselves: in the same implicit transaction as what
  // follows (or in its BEGIN's), an error or a rollback there would undo
  // them, and they are not sent again.
  // Taken from settings_ and ahead_ before any is sent: one that fails to
  // go out drops the session, and none of them may go out on the next.
  // The settings' sync goes only before something else: without, the
  // pipeline's own sync follows at once (run_pipeline).
  void send_ahead() {
    std::vector<Statement> settings = std::exchange(settings_, {});
    std::vector<Statement> pending = std::exchange(ahead_, {});
    if (settings.empty() && pending.empty()) return;
    if (in_transaction_) begun_ = true;  // its BEGIN is among them, if not sent before: ROLLBACK from now on
    if (!libpq().PQenterPipelineMode(conn_)) fail_to_send(settings.empty() ? pending.front().sql : settings.front().sql);
    if (!settings.empty()) {  // a new session's: nothing went out on it before them
      for (auto& s : settings) send(s.sql, nullptr, s.params);
      if (!pending.empty() && !libpq().PQpipelineSync(conn_)) fail_to_send(settings.back().sql);
      sent_settings_ = settings.size();
      syncs_sent_ += pending.empty() ? 0 : 1;
      std::move(settings.begin(), settings.end(), std::back_inserter(sent_));
    }
    for (auto& s : pending) {
      send(s.sql, s.name.empty() ? nullptr : &s.name, s.params);
      s.params.clear();  // sent: only its text is kept, for its errors
      sent_.push_back(std::move(s));
    }
    flush(sent_.back().sql, answer_deadline());  // a failed connection is reported with the answers
  }

  // Sends what waits (send_ahead), then `last` (prepared as `name`, if it
  // is), and a sync, and reads every answer of what went out since the
  // last sync: the last one's result, or the first error, which ends the
  // pipeline (the server skips what follows, up to the next sync).
  //
  // A setting the server refuses (it takes both since 11) drops the
  // session, which ends whatever of the rest is still open; a statement
  // outside a transaction may have been applied, as after a lost answer.
  PGresult* run_pipeline(std::optional<Statement> last, const std::string* name = nullptr) {
    const bool has_last = last.has_value();
    if (last) {
      if (name) last->name = *name;
      ahead_.push_back(std::move(*last));
    }
    send_ahead();
    if (!libpq().PQpipelineSync(conn_)) fail_to_send(sent_.back().sql);
    std::vector<Statement> items = std::move(sent_);
    sent_.clear();
    const size_t settings = std::exchange(sent_settings_, 0);
    const int syncs = std::exchange(syncs_sent_, 0) + 1;

    auto deadline = answer_deadline();
    flush(items.back().sql, deadline);
    PGresult* keep = nullptr;
    size_t item = 0, kept = items.size() - 1;
    auto waited_on = [&] { return std::min(item, items.size() - 1); };  // the statement whose answer is next
    int synced = 0;
    bool after_sync = false;
    while (synced < syncs && item <= items.size() && libpq().PQstatus(conn_) == CONNECTION_OK) {
      await_readable(items[waited_on()].sql, deadline, keep);
      PGresult* r = libpq().PQgetResult(conn_);
      if (!r) {  // the end of one statement's results (a sync's ends no statement)
        if (!after_sync) ++item;
        after_sync = false;
        continue;
      }
      after_sync = false;
      ExecStatusType st = libpq().PQresultStatus(r);
      if (st == PGRES_PIPELINE_SYNC) {
        ++synced;
        after_sync = true;
      }
      if (!failed(r) && (item + 1 < items.size() || !has_last) && items[item].answered && !(keep && failed(keep)))
        items[item].answered(r);
      if (st == PGRES_PIPELINE_SYNC || st == PGRES_PIPELINE_ABORTED || (keep && failed(keep)) ||
          (!failed(r) && item + 1 != items.size())) {
        libpq().PQclear(r);
        continue;
      }
      libpq().PQclear(keep);  // an error, or the last statement's result
      keep = r;
      kept = waited_on();
    }
    if (synced < syncs || !libpq().PQexitPipelineMode(conn_)) {
      libpq().PQclear(keep);
      fail_to_send(items[keep ? kept : waited_on()].sql);
    }
    if (kept < settings && failed(keep)) {
      std::string msg = joined_lines(libpq().PQresultErrorMessage(keep));
      libpq().PQclear(keep);
      drop();
      throw Error(ExitCode::store, fmt::format("PostgreSQL at {} refused a session setting: {} (in: {})", where(), msg,
                                               statement_summary(items[kept].sql)));
    }
    try {
      check(keep, items[kept].sql);
    } catch (...) {
      libpq().PQclear(keep);
      throw;
    }
    return keep;
  }

  bool anything_ahead() const { return !settings_.empty() || !ahead_.empty() || !sent_.empty(); }

  // Once plan_once has found its table outgrown, DISCARD PLANS goes ahead
  // of each statement until one such is answered: then the plans are gone.
  void forget_plans_first() {
    if (forget_plans_)
      ahead_.push_back({std::string(kForgetPlans), {}, {}, true, [this](const PGresult*) { forget_plans_ = false; }});
  }

  // A result's rows, bytea decoded.
  static Rows rows_of(const PGresult* res) {
    Rows rows;
    int nrows = libpq().PQntuples(res), ncols = libpq().PQnfields(res);
    rows.reserve(static_cast<size_t>(nrows));
    for (int i = 0; i < nrows; ++i) {
      std::vector<std::optional<std::string>> cells;
      cells.reserve(static_cast<size_t>(ncols));
      for (int c = 0; c < ncols; ++c) {
        if (libpq().PQgetisnull(res, i, c)) {
          cells.emplace_back(std::nullopt);
        } else if (libpq().PQftype(res, c) == kByteaOid) {
          cells.emplace_back(decode_bytea(libpq().PQgetvalue(res, i, c), libpq().PQgetlength(res, i, c)));
        } else {
          cells.emplace_back(std::string(libpq().PQgetvalue(res, i, c), static_cast<size_t>(libpq().PQgetlength(res, i, c))));
        }
      }
      rows.emplace_back(std::move(cells));
    }
    return rows;
  }

  // Whether what waits to go out only sets the transaction up (its BEGIN,
  // plan_once's setting): a transaction of nothing else has nothing to send.
  bool only_setup_ahead() const {
    return !ahead_.empty() && std::all_of(ahead_.begin() + 1, ahead_.end(), [](const Statement& s) { return s.setup; });
  }

  // The size of plan_once's table, read: the plans are made for the first
  // one read, and made again (with the next statement) once it is twice or
  // half what they were made for.
  void planned_table_is(int64_t bytes) {
    if (!plans_for_) plans_for_ = bytes;
    if (!plans_outgrown(*plans_for_, bytes)) return;
    plans_for_ = bytes;
    forget_plans_ = true;
  }

  void end_transaction() {
    ahead_.clear();
    in_transaction_ = begun_ = false;
  }

  // A statement is prepared on its second use: a one-shot jobctl pays one
  // round trip per statement, a long-lived agent parses each only once
  // (unless it is to be planned at each use: kPlanEachTime).
  const std::string* prepared_name(std::string_view sql) {
    if (sql.starts_with(kPlanEachTime)) return nullptr;
    std::string key(sql);
    auto it = prepared_.find(key);
    if (it != prepared_.end()) return &it->second;
    if (seen_.insert(key).second) return nullptr;  // its first use on this session sent the session's settings
    if (!sent_.empty()) return nullptr;  // answers are due in the pipeline first: prepared at a later use
    std::string name = fmt::format("s{}", prepared_.size() + 1);
    std::string text = translate(sql, clock_offset_us_);
    if (!libpq().PQsendPrepare(conn_, name.c_str(), text.c_str(), 0, nullptr)) fail_to_send(sql);
    ResultGuard r{await(sql)};
    check(r.res, sql);
    return &prepared_.emplace(std::move(key), std::move(name)).first->second;
  }

  void check(PGresult* res, std::string_view sql) {
    ExecStatusType st = res ? libpq().PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return;
    std::string state = res && libpq().PQresultErrorField(res, PG_DIAG_SQLSTATE) ? libpq().PQresultErrorField(res, PG_DIAG_SQLSTATE) : "";
    std::string msg = joined_lines(res ? libpq().PQresultErrorMessage(res) : libpq().PQerrorMessage(conn_));
    if (state == "23505") throw UniqueViolation(msg);
    if (libpq().PQstatus(conn_) != CONNECTION_OK)
      throw Error(ExitCode::store, fmt::format("PostgreSQL: {}", msg));
    // A statement this session prepared before the schema changed under it
    // (`jobctl init` elsewhere: migration 16 changed the collation of
    // columns most statements return) fails at every use, "cached plan
    // must not change result type". A new session prepares it anew: the
    // agent's or serve's next try works.
    if (state == "0A000" && prepared_.contains(std::string(sql))) {
      drop();
      throw Error(ExitCode::store, fmt::format("PostgreSQL: {}", msg),
                  "the store's schema changed under this session (jobctl init): a new one prepares its statements "
                  "anew; retry");
    }
    if (auto hint = server_condition(state))
      throw Error(ExitCode::store, fmt::format("PostgreSQL: {}", msg), *hint);
    throw Error(ExitCode::internal, fmt::format("PostgreSQL: {} (in: {})", msg, statement_summary(sql)));
  }

  std::string conninfo_;
  std::chrono::milliseconds timeout_;
  std::optional<Clock::time_point> answer_by_;
  std::function<bool()> give_up_when_;
  Clock::time_point last_look_{};  // the last statement ensure_connected let out
  PGconn* conn_ = nullptr;
  // Statements to send with the next one (see the top of this file): a new
  // session's settings, then the transaction's.
  std::vector<Statement> settings_;
  std::vector<Statement> ahead_;
  // Sent into the pipeline without a sync (send_ahead), answers unread: a
  // new session's settings first, if any (with a sync of their own).
  std::vector<Statement> sent_;
  size_t sent_settings_ = 0;
  int syncs_sent_ = 0;
  bool in_transaction_ = false;
  bool begun_ = false;  // its BEGIN went out
  bool lost_ = false;   // and then its connection: see refuse_if_lost
  std::unordered_map<std::string, std::string> prepared_;
  std::unordered_set<std::string> seen_;  // used once, not prepared yet
  int64_t clock_offset_us_ = 0;
  std::optional<int64_t> plans_for_;  // the size of plan_once's table the session's plans were made for
  bool forget_plans_ = false;         // DISCARD PLANS goes out with the next statement
};

}  // namespace

std::unique_ptr<Connection> open_postgres(const std::string& conninfo) {
  return std::make_unique<PostgresConnection>(conninfo);
}

}  // namespace jobctl::store
