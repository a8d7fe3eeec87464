// A Connection's transactions: on PostgreSQL, BEGIN, NOTIFYs and batches
// sent with the next statement wait to go out with the transaction's next
// statement (one pipeline); what fails in that pipeline fails the
// transaction, and nothing of it stays written. A new session's settings
// go out with its first statement, and stay.
#include <doctest/doctest.h>

#include <thread>
#include <fmt/format.h>
#include <unistd.h>

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <variant>

#include "common/store/sql.hpp"
#include "common/store/store.hpp"
#include "common/store/wakeups.hpp"
#include "common/util/error.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;

namespace {

struct TransactionFixture {
  test::TempDir dir;
  test::TestDb db{dir};
  std::unique_ptr<store::Store> s = db.open();
  std::unique_ptr<store::Connection> check = db.connect();
  store::Connection& c = s->connection();

  bool tenant(const std::string& name) {
    return !check->query("SELECT 1 FROM tenants WHERE name = $1", {name}).empty();
  }
};

}  // namespace

TEST_CASE("transaction: what was written commits with it, and a transaction that ran nothing commits") {
  TransactionFixture f;
  {
    store::Transaction tx(f.c, store::TxMode::write);
    tx.commit();
  }
  {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec("INSERT INTO tenants (name) VALUES ($1)", {std::string("kept")});
    store::wake_queue(f.c, "default");
    tx.commit();
  }
  {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec("INSERT INTO tenants (name) VALUES ($1)", {std::string("dropped")});
    store::wake_queue(f.c, "default");
  }  // rolled back
  CHECK(f.tenant("kept"));
  CHECK_FALSE(f.tenant("dropped"));
  // The connection goes on as before.
  CHECK(f.c.query("SELECT count(*) FROM tenants WHERE name = $1", {std::string("kept")}).at(0).i64(0) == 1);
}

TEST_CASE("transaction: a NOTIFY that fails where it was sent ahead fails the commit, and nothing is written") {
  TransactionFixture f;
  if (f.c.dialect() == store::Dialect::sqlite) return;  // no NOTIFY: its agents watch the file
  {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec("INSERT INTO tenants (name) VALUES ($1)", {std::string("t1")});
    f.c.notify(store::kWakeChannel, std::string(9000, 'q'));  // over PostgreSQL's 8000-byte payload limit
    CHECK_THROWS_AS(tx.commit(), Error);
  }
  CHECK_FALSE(f.tenant("t1"));
  // The next transaction on the same connection is a clean one.
  store::Transaction again(f.c, store::TxMode::write);
  f.c.exec("INSERT INTO tenants (name) VALUES ($1)", {std::string("t2")});
  again.commit();
  CHECK(f.tenant("t2"));
}

TEST_CASE("transaction: after its connection is lost, the rest of a transaction fails, and none of it runs outside it") {
  TransactionFixture f;
  if (f.c.dialect() == store::Dialect::sqlite) return;  // an embedded file: no connection to lose
  {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec("INSERT INTO tenants (name) VALUES ($1)", {std::string("before")});
    const auto pid = f.c.query("SELECT pg_backend_pid()").at(0).i64(0);
    f.check->query("SELECT pg_terminate_backend($1::int)", {pid});
    CHECK_THROWS_AS(f.c.exec("INSERT INTO tenants (name) VALUES ($1)", {std::string("lost")}), Error);
    // A caller that went on anyway: the driver must not reconnect and run it on its own.
    try {
      f.c.exec("INSERT INTO tenants (name) VALUES ($1)", {std::string("after")});
      FAIL("a statement ran after its transaction was lost");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::store);
    }
    // Nor its wake-ups, nor its COMMIT (which on a new connection would say yes).
    CHECK_THROWS_AS(store::wake_queue(f.c, "default"), Error);
    CHECK_THROWS_AS(f.c.exec("INSERT INTO tenants (name) VALUES ($1)", {std::string("later")}), Error);
    CHECK_THROWS_AS(tx.commit(), Error);
  }  // rolled back: the connection is opened anew for what follows
  CHECK_FALSE(f.tenant("before"));
  CHECK_FALSE(f.tenant("after"));
  CHECK_FALSE(f.tenant("later"));
  store::Transaction again(f.c, store::TxMode::write);
  f.c.exec("INSERT INTO tenants (name) VALUES ($1)", {std::string("next")});
  again.commit();
  CHECK(f.tenant("next"));
}

TEST_CASE("transaction: a batch that fails in a later part writes none of it, and the connection goes on") {
  // PostgreSQL sends a batch in parts of a few thousand rows, each while the
  // next is being made: what fails in any part, or in making one, fails the
  // whole, with no answer left unread on the connection.
  TransactionFixture f;
  const std::vector<store::BatchColumn> columns{{"name", store::ColumnType::text}};
  const std::string sql = "INSERT INTO tenants (name) SELECT name FROM " + f.c.batch(columns, 1, "u");
  constexpr size_t kRows = 12000;
  SUBCASE("a row the table refuses, in the last part") {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec("INSERT INTO tenants (name) VALUES ('before')");
    auto fill = [](size_t i, std::span<store::Value> cells) {
      cells[0] = i == kRows - 1 ? std::string("b3") : "b" + std::to_string(i);
    };
    CHECK_THROWS_AS(f.c.exec_batch(sql, {}, columns, kRows, fill), store::UniqueViolation);
  }
  SUBCASE("a row that cannot be made, while a part is on its way") {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec("INSERT INTO tenants (name) VALUES ('before')");
    auto fill = [](size_t i, std::span<store::Value> cells) {
      if (i == 7000) throw Error(ExitCode::usage, "row 7000 cannot be made");
      cells[0] = "b" + std::to_string(i);
    };
    CHECK_THROWS_WITH(f.c.exec_batch(sql, {}, columns, kRows, fill), "row 7000 cannot be made");
  }
  CHECK_FALSE(f.tenant("before"));
  CHECK_FALSE(f.tenant("b3"));
  CHECK(f.c.query("SELECT count(*) FROM tenants WHERE name LIKE 'b%'").at(0).i64(0) == 0);
  // The same connection writes a whole batch next.
  f.c.exec_batch(sql, {}, columns, kRows, [](size_t i, std::span<store::Value> cells) { cells[0] = "c" + std::to_string(i); });
  CHECK(f.c.query("SELECT count(*) FROM tenants WHERE name LIKE 'c%'").at(0).i64(0) == static_cast<int64_t>(kRows));
}

TEST_CASE("transaction: PostgreSQL refuses a text parameter holding a NUL byte, never cutting it short") {
  // libpq reads a text parameter up to its first NUL. A batch column with
  // one value in every row goes as such a parameter: a job's name "a\0b"
  // was stored as "a". Job input refuses NUL bytes; this is the driver's
  // own guard, and nothing of the transaction is written.
  TransactionFixture f;
  if (f.c.dialect() != store::Dialect::postgres) return;  // SQLite keeps the bytes as given
  const std::string nul("a\0b", 3);
  const std::vector<store::BatchColumn> columns{{"name", store::ColumnType::text}};
  auto code_of = [](const std::function<void()>& write) {
    try {
      write();
    } catch (const Error& e) {
      return e.code();
    }
    return ExitCode::ok;
  };
  SUBCASE("a statement's parameter") {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec("INSERT INTO tenants (name) VALUES ('before')");
    CHECK(code_of([&] { f.c.exec("INSERT INTO tenants (name) VALUES ($1)", {nul}); }) == ExitCode::internal);
  }
  SUBCASE("a batch column with that one value in every row") {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec("INSERT INTO tenants (name) VALUES ('before')");
    CHECK(code_of([&] {
            f.c.exec_batch("INSERT INTO tenants (name) SELECT u.name FROM " + f.c.batch(columns, 1, "u") +
                               " WHERE u.name IS NOT NULL",
                           {}, columns, 3, [&](size_t, std::span<store::Value> cells) { cells[0] = nul; });
          }) == ExitCode::internal);
  }
  SUBCASE("a statement outside a transaction, the first of a new session") {
    // The refusal drops the session: the next statement opens one, and
    // goes out behind its settings. Refused there too, it must not stay
    // queued to go out on the session after.
    CHECK(code_of([&] { f.c.exec("INSERT INTO tenants (name) VALUES ($1)", {nul}); }) == ExitCode::internal);
    CHECK(code_of([&] { f.c.exec("INSERT INTO tenants (name) VALUES ($1)", {nul}); }) == ExitCode::internal);
  }
  CHECK_FALSE(f.tenant("before"));
  CHECK_FALSE(f.tenant("a"));
  // The connection goes on.
  f.c.exec("INSERT INTO tenants (name) VALUES ('after')");
  CHECK(f.tenant("after"));
}

TEST_CASE("transaction: a new PostgreSQL session's settings go out with its first statement, whichever it is") {
  // jit off and the store timeout as statement_timeout are set once per
  // session, sent ahead with the first statement rather than in a round
  // trip of their own: every way a session can begin must carry them.
  test::TempDir dir;
  test::TestDb db(dir);
  if (db.connect()->dialect() != store::Dialect::postgres) return;
  auto set = [](store::Connection& c) {
    auto row = c.query("SELECT current_setting('jit'), current_setting('statement_timeout')").at(0);
    return row.text(0) == "off" && row.text(1) != "0";
  };
  SUBCASE("a statement") {
    auto c = db.connect();
    CHECK(set(*c));
  }
  SUBCASE("a transaction") {
    auto c = db.connect();
    store::Transaction tx(*c, store::TxMode::write);
    CHECK(set(*c));
    tx.commit();
  }
  SUBCASE("a script") {
    auto c = db.connect();
    CHECK_NOTHROW(c->exec_script(
        "DO $$ BEGIN IF current_setting('jit') <> 'off' OR current_setting('statement_timeout') = '0' THEN "
        "RAISE EXCEPTION 'session settings missing'; END IF; END $$"));
  }
  SUBCASE("a statement that must run by itself, outside any transaction") {
    auto c = db.connect();
    const std::string name = "jobctl_settings_" + std::to_string(getpid());
    CHECK_NOTHROW(c->exec("CREATE DATABASE " + name));
    CHECK(set(*c));
    c->exec("DROP DATABASE " + name);
  }
  // Sent with what fails or is rolled back, they stay: they are not sent
  // again on the same session.
  SUBCASE("a statement that fails") {
    auto c = db.connect();
    CHECK_THROWS_AS(c->query("SELECT 1 / 0"), Error);
    CHECK(set(*c));
  }
  SUBCASE("a transaction rolled back") {
    auto c = db.connect();
    {
      store::Transaction tx(*c, store::TxMode::write);
      c->query("SELECT 1");
    }
    CHECK(set(*c));
  }
  SUBCASE("a transaction that fails") {
    auto c = db.connect();
    {
      store::Transaction tx(*c, store::TxMode::write);
      CHECK_THROWS_AS(c->query("SELECT 1 / 0"), Error);
    }
    CHECK(set(*c));
  }
  SUBCASE("a session opened again after the server ended the first") {
    auto c = db.connect();
    auto other = db.connect();
    REQUIRE(set(*c));
    const auto pid = c->query("SELECT pg_backend_pid()").at(0).i64(0);
    other->query("SELECT pg_terminate_backend($1::int)", {pid});
    try {
      c->query("SELECT 1");  // may be the one that finds the connection gone
    } catch (const Error&) {
    }
    CHECK(set(*c));
    CHECK(c->query("SELECT pg_backend_pid()").at(0).i64(0) != pid);
  }
}

TEST_CASE("transaction: an idle connection the server ended is opened anew before a statement, which then succeeds") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto c = db.connect();
  if (c->dialect() != store::Dialect::postgres) return;  // a server that ends sessions is PostgreSQL's
  auto other = db.connect();
  const auto pid = c->query("SELECT pg_backend_pid()").at(0).i64(0);
  // A restart, pg_terminate_backend or idle_session_timeout: jobctl serve
  // answered 503 on each thread's first request after one (a tester).
  other->query("SELECT pg_terminate_backend($1::int)", {pid});
  test::eventually([&] { return other->query("SELECT count(*) FROM pg_stat_activity WHERE pid = $1::int", {pid}).at(0).i64(0) == 0; },
                   "the backend to end");
  // Its goodbye on the socket, and idle long enough to be looked at.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  CHECK(c->query("SELECT pg_backend_pid()").at(0).i64(0) != pid);
}

TEST_CASE("transaction: plan_once holds to the end of its transaction, committed or rolled back, and no further") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto c = db.connect();
  if (c->dialect() != store::Dialect::postgres) return;  // SQLite prepares each statement once anyway
  auto mode = [&] { return c->query("SELECT current_setting('plan_cache_mode')").at(0).text(0); };
  c->plan_once("runs");  // outside a transaction: nothing
  CHECK(mode() == "auto");
  {
    store::Transaction tx(*c, store::TxMode::write);
    c->plan_once("runs");
    CHECK(mode() == "force_generic_plan");
    tx.commit();
  }
  CHECK(mode() == "auto");
  {
    store::Transaction tx(*c, store::TxMode::write);
    c->plan_once("runs");
    CHECK(mode() == "force_generic_plan");
  }  // rolled back
  CHECK(mode() == "auto");
  {
    store::Transaction tx(*c, store::TxMode::write);
    c->plan_once("runs");
    tx.commit();  // ran nothing
  }
  CHECK(mode() == "auto");
}

TEST_CASE("transaction: a batch sent with the next statement is seen by it, and its error fails that one, writing nothing") {
  TransactionFixture f;
  using Send = store::Connection::Send;
  const std::vector<store::BatchColumn> columns{{"name", store::ColumnType::text}};
  const std::string sql = "INSERT INTO tenants (name) SELECT name FROM " + f.c.batch(columns, 1, "u");
  auto names = [](std::vector<std::string> list) {
    return [list](size_t i, std::span<store::Value> cells) { cells[0] = list[i]; };
  };
  {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec_batch(sql, {}, columns, 2, names({"w1", "w2"}), Send::with_next);
    // The next statement sees it: it went out first, in the same pipeline.
    CHECK(f.c.query("SELECT count(*) FROM tenants WHERE name LIKE 'w%'").at(0).i64(0) == 2);
    f.c.exec_batch(sql, {}, columns, 1, names({"w3"}), Send::with_next);
    tx.commit();  // with the COMMIT
  }
  CHECK(f.tenant("w2"));
  CHECK(f.tenant("w3"));
  {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec_batch(sql, {}, columns, 1, names({"x1"}), Send::with_next);
    if (f.c.dialect() == store::Dialect::postgres) {
      // A duplicate the server has not seen yet: the COMMIT it went out
      // with fails with its error.
      CHECK_NOTHROW(f.c.exec_batch(sql, {}, columns, 1, names({"w1"}), Send::with_next));
      CHECK_THROWS_AS(tx.commit(), store::UniqueViolation);
    } else {
      CHECK_THROWS_AS(f.c.exec_batch(sql, {}, columns, 1, names({"w1"}), Send::with_next), store::UniqueViolation);
    }
  }
  CHECK_FALSE(f.tenant("x1"));
  // Outside a transaction it runs at once, and the connection goes on.
  CHECK(f.c.exec_batch(sql, {}, columns, 1, names({"y1"}), Send::with_next) == 1);
  CHECK(f.tenant("y1"));

  // A column with one value in every row goes as that value when it waits
  // for the next statement too (PostgreSQL; SQLite binds every row as it is
  // and runs at once).
  const std::vector<store::BatchColumn> two{{"name", store::ColumnType::text}, {"served_at", store::ColumnType::integer}};
  {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec_batch("INSERT INTO tenants (name, served_at) SELECT u.name, u.served_at FROM " + f.c.batch(two, 1, "u"), {},
                   two, 3, [](size_t i, std::span<store::Value> cells) {
                     cells[0] = "z" + std::to_string(i);
                     cells[1] = int64_t{424242};
                   },
                   Send::with_next);
    tx.commit();
  }
  CHECK(f.c.query("SELECT count(*) FROM tenants WHERE name LIKE 'z%' AND served_at = 424242").at(0).i64(0) == 3);
}

TEST_CASE("transaction: a large batch sent with the next statement goes out at once, its answer read with that one's") {
  // The server writes it while the caller makes what follows (a submit
  // --file's next part): it has begun the transaction and inserted before
  // the next statement is sent. Its error, or the caller's, still leaves
  // nothing written, and the connection goes on.
  TransactionFixture f;
  using Send = store::Connection::Send;
  const bool postgres = f.c.dialect() == store::Dialect::postgres;
  const std::vector<store::BatchColumn> columns{{"name", store::ColumnType::text}};
  const std::string sql = "INSERT INTO tenants (name) SELECT name FROM " + f.c.batch(columns, 1, "u");
  auto named = [](std::string prefix) {
    return [prefix](size_t i, std::span<store::Value> cells) { cells[0] = prefix + std::to_string(i); };
  };
  constexpr size_t kRows = 12000;
  const std::string pid = postgres ? f.c.query("SELECT pg_backend_pid()").at(0).text(0) : "";
  // The session has a transaction id once its first write ran: never
  // before its BEGIN is sent.
  auto wrote = [&] {
    return !f.check->query("SELECT 1 FROM pg_stat_activity WHERE pid = $1::int AND backend_xid IS NOT NULL", {pid})
                .empty();
  };
  constexpr size_t kOneStatement = 3000;  // fewer than a statement's rows, enough to go at once
  {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec_batch(sql, {}, columns, kOneStatement, named("s"), Send::with_next);
    if (postgres) {
      bool seen = false;
      for (int i = 0; i < 500 && !seen; ++i) {
        seen = wrote();
        if (!seen) usleep(10'000);
      }
      CHECK(seen);
    }
    f.c.exec_batch(sql, {}, columns, 2, named("t"), Send::with_next);  // small: waits for the COMMIT
    tx.commit();
  }
  CHECK(f.c.query("SELECT count(*) FROM tenants WHERE name LIKE 's%'").at(0).i64(0) == static_cast<int64_t>(kOneStatement));
  CHECK(f.tenant("t1"));
  // Rows u0, u1, … but for row `at`, s5, which the table holds already.
  auto refused_at = [](size_t at) {
    return [at](size_t i, std::span<store::Value> cells) { cells[0] = i == at ? std::string("s5") : "u" + std::to_string(i); };
  };
  SUBCASE("a row the table refuses fails the next statement") {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec("INSERT INTO tenants (name) VALUES ('before')");
    auto fill = refused_at(6000);
    if (postgres) {
      f.c.exec_batch(sql, {}, columns, kRows, fill, Send::with_next);
      CHECK_THROWS_AS(f.c.query("SELECT 1"), store::UniqueViolation);
    } else {
      CHECK_THROWS_AS(f.c.exec_batch(sql, {}, columns, kRows, fill, Send::with_next), store::UniqueViolation);
    }
  }
  SUBCASE("the caller fails after a part went out: rolled back, its answer read") {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec("INSERT INTO tenants (name) VALUES ('before')");
    f.c.exec_batch(sql, {}, columns, kRows, named("u"), Send::with_next);
    auto fill = [](size_t i, std::span<store::Value> cells) {
      if (i == 7000) throw Error(ExitCode::usage, "row 7000 cannot be made");
      cells[0] = "v" + std::to_string(i);
    };
    CHECK_THROWS_WITH(f.c.exec_batch(sql, {}, columns, kRows, fill, Send::with_next), "row 7000 cannot be made");
  }
  SUBCASE("the caller fails after a part the table refuses went out") {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec("INSERT INTO tenants (name) VALUES ('before')");
    if (postgres) {
      f.c.exec_batch(sql, {}, columns, kOneStatement, refused_at(10), Send::with_next);
      auto fill = [](size_t, std::span<store::Value>) { throw Error(ExitCode::usage, "no row can be made"); };
      CHECK_THROWS_WITH(f.c.exec_batch(sql, {}, columns, kRows, fill, Send::with_next), "no row can be made");
    }
  }
  CHECK_FALSE(f.tenant("before"));
  CHECK(f.c.query("SELECT count(*) FROM tenants WHERE name LIKE 'u%' OR name LIKE 'v%'").at(0).i64(0) == 0);
  // The same connection goes on, and prepares what it runs again.
  for (int i = 0; i < 3; ++i) {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec_batch(sql, {}, columns, kRows, named(fmt::format("w{}-", i)), Send::with_next);
    CHECK(f.c.query("SELECT count(*) FROM tenants WHERE name LIKE $1", {fmt::format("w{}-%", i)}).at(0).i64(0) ==
          static_cast<int64_t>(kRows));
    tx.commit();
  }
}

TEST_CASE("transaction: a query sent with the next statement gives its rows once that one is answered, its error fails it") {
  TransactionFixture f;
  const bool postgres = f.c.dialect() == store::Dialect::postgres;
  const std::string add = "INSERT INTO tenants (name) VALUES ($1) RETURNING name";
  std::optional<store::Rows> got;
  auto keep = [&](store::Rows&& rows) { got = std::move(rows); };
  {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.query_with_next(add, {std::string("q1")}, keep);
    // On PostgreSQL it waits for the next statement; SQLite ran it at once.
    CHECK(got.has_value() == !postgres);
    tx.commit();  // with the COMMIT
  }
  REQUIRE(got);
  REQUIRE(got->size() == 1);
  CHECK(got->at(0).text(0) == "q1");
  CHECK(f.tenant("q1"));
  // Followed by a statement, it goes out first and that one sees it.
  got.reset();
  {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.query_with_next(add, {std::string("q2")}, keep);
    CHECK(f.c.query("SELECT count(*) FROM tenants WHERE name = 'q2'").at(0).i64(0) == 1);
    REQUIRE(got);
    CHECK(got->at(0).text(0) == "q2");
    tx.commit();
  }
  CHECK(f.tenant("q2"));
  // Its error fails the statement it went out with, and nothing is written.
  got.reset();
  {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.exec("INSERT INTO tenants (name) VALUES ('q3')");
    if (postgres) {
      f.c.query_with_next(add, {std::string("q1")}, keep);
      CHECK_THROWS_AS(tx.commit(), store::UniqueViolation);
    } else {
      CHECK_THROWS_AS(f.c.query_with_next(add, {std::string("q1")}, keep), store::UniqueViolation);
    }
  }
  CHECK_FALSE(got);
  CHECK_FALSE(f.tenant("q3"));
  // Rolled back before it went out: never run, never read.
  {
    store::Transaction tx(f.c, store::TxMode::write);
    f.c.query_with_next(add, {std::string("q4")}, keep);
  }
  CHECK(got.has_value() == !postgres);
  CHECK_FALSE(f.tenant("q4"));
  // Outside a transaction it runs at once, and the connection goes on.
  got.reset();
  f.c.query_with_next(add, {std::string("q5")}, keep);
  REQUIRE(got);
  CHECK(got->at(0).text(0) == "q5");
  CHECK(f.tenant("q5"));
}

TEST_CASE("transaction: a batch writes every value as given, NULLs and columns with one value in every row too") {
  // PostgreSQL binds each column as one array in the binary form, and a
  // column with one value in every row of a part (NULL too) as a NULL
  // array and that value; the rows come back as they were made, over
  // several parts.
  TransactionFixture f;
  f.c.exec(
      "CREATE TEMP TABLE probe (k BIGINT, t TEXT, n BIGINT, z TEXT, y BIGINT, c TEXT, e TEXT, m BIGINT, w BIGINT, s BIGINT, "
      "v TEXT)");
  const std::vector<store::BatchColumn> columns{
      {"k", store::ColumnType::integer}, {"t", store::ColumnType::text},    {"n", store::ColumnType::integer},
      {"z", store::ColumnType::text},    {"y", store::ColumnType::integer}, {"c", store::ColumnType::text},
      {"e", store::ColumnType::text},    {"m", store::ColumnType::integer}, {"w", store::ColumnType::integer},
      {"s", store::ColumnType::integer}, {"v", store::ColumnType::text}};
  const std::vector<std::string> texts{"",          "plain",      "quote\" back\\slash", "comma, {brace}",
                                       "NULL",      "ünïcødé ✓", "  spaces  ",          "two\nlines"};
  const std::vector<int64_t> numbers{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), -1, 0};
  constexpr size_t kRows = 12000;
  auto text_of = [&](size_t i) -> store::Value {
    if (i % 7 == 3) return nullptr;
    return texts[i % texts.size()];
  };
  auto number_of = [&](size_t i) -> store::Value {
    if (i % 5 == 2) return nullptr;
    if (i % 3 == 0) return numbers[i % numbers.size()];
    return static_cast<int64_t>(i) * 1000003;
  };
  // y: NULL in every row of the first part only. c: one text in every row;
  // e: the empty text in every row (not NULL). m: INT64_MIN in every row of
  // the first part, then varying; w: one value per part, another in each.
  // s: NULL in some rows (the first of each part among them) and one number
  // in all the others; v: one text in every row but the last of each part
  // (and of the batch), which is NULL. Neither is one value in any part:
  // each goes as its array.
  auto y_of = [](size_t i) -> store::Value { return i < 6000 ? store::Value(nullptr) : static_cast<int64_t>(i); };
  const std::string same = "the same \"text\", ✓";
  auto m_of = [](size_t i) -> int64_t { return i < 5000 ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(i % 3); };
  auto w_of = [](size_t i) -> int64_t { return static_cast<int64_t>(i / 5000) * 11 + 7; };
  auto s_of = [](size_t i) -> store::Value { return i % 4 == 0 ? store::Value(nullptr) : int64_t{99}; };
  auto v_of = [&](size_t i) -> store::Value {
    return i % 5000 == 4999 || i == kRows - 1 ? store::Value(nullptr) : std::string("v");
  };
  f.c.exec_batch("INSERT INTO probe (k, t, n, z, y, c, e, m, w, s, v) "
                 "SELECT u.k, u.t, u.n, u.z, u.y, u.c, u.e, u.m, u.w, u.s, u.v FROM " +
                     f.c.batch(columns, 1, "u"),
                 {}, columns, kRows, [&](size_t i, std::span<store::Value> cells) {
                   cells[0] = static_cast<int64_t>(i);
                   cells[1] = text_of(i);
                   cells[2] = number_of(i);
                   cells[3] = nullptr;
                   cells[4] = y_of(i);
                   cells[5] = same;
                   cells[6] = std::string();
                   cells[7] = m_of(i);
                   cells[8] = w_of(i);
                   cells[9] = s_of(i);
                   cells[10] = v_of(i);
                 });
  auto rows = f.c.query("SELECT k, t, n, z, y, c, e, m, w, s, v FROM probe ORDER BY k");
  REQUIRE(rows.size() == kRows);
  size_t wrong = 0;
  for (size_t i = 0; i < kRows; ++i) {
    const auto& r = rows[i];
    const auto t = text_of(i), n = number_of(i), y = y_of(i), sv = s_of(i), vv = v_of(i);
    const bool right =
        r.i64(0) == static_cast<int64_t>(i) &&
        (std::holds_alternative<std::nullptr_t>(t) ? r.is_null(1) : !r.is_null(1) && r.text(1) == std::get<std::string>(t)) &&
        (std::holds_alternative<std::nullptr_t>(n) ? r.is_null(2) : r.opt_i64(2) == std::get<int64_t>(n)) && r.is_null(3) &&
        (std::holds_alternative<std::nullptr_t>(y) ? r.is_null(4) : r.opt_i64(4) == std::get<int64_t>(y)) &&
        !r.is_null(5) && r.text(5) == same && !r.is_null(6) && r.text(6).empty() && r.opt_i64(7) == m_of(i) &&
        r.opt_i64(8) == w_of(i) &&
        (std::holds_alternative<std::nullptr_t>(sv) ? r.is_null(9) : r.opt_i64(9) == std::get<int64_t>(sv)) &&
        (std::holds_alternative<std::nullptr_t>(vv) ? r.is_null(10) : !r.is_null(10) && r.text(10) == "v");
    if (!right && wrong++ < 3) {
      std::string cells;
      for (size_t c = 0; c < columns.size(); ++c)
        cells += std::string(columns[c].name) + "=" + (r.is_null(c) ? "NULL" : r.text(c)) + " ";
      MESSAGE("row " << i << " came back wrong: " << cells);
    }
  }
  CHECK(wrong == 0);

  // One row, and rows alike in every column, the first too: each is written.
  f.c.exec("CREATE TEMP TABLE alike (k BIGINT, t TEXT)");
  const std::vector<store::BatchColumn> two{{"k", store::ColumnType::integer}, {"t", store::ColumnType::text}};
  for (size_t n : {size_t{1}, size_t{3}})
    f.c.exec_batch("INSERT INTO alike (k, t) SELECT u.k, u.t FROM " + f.c.batch(two, 1, "u"), {}, two, n,
                   [&](size_t, std::span<store::Value> cells) {
                     cells[0] = int64_t{42};
                     cells[1] = std::string("x");
                   });
  auto alike = f.c.query("SELECT count(*), min(k), max(k), min(t), max(t) FROM alike");
  CHECK(alike.at(0).i64(0) == 4);
  CHECK(alike.at(0).i64(1) == 42);
  CHECK(alike.at(0).i64(2) == 42);
  CHECK(alike.at(0).text(3) == "x");
  CHECK(alike.at(0).text(4) == "x");
}
