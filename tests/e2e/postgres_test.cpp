// PostgreSQL as people run it: jobctl in a schema of its own beside an
// application's tables, and the server's own refusals (read-only, a
// statement timeout, a missing privilege) reported as such, exit 5.
// PostgreSQL only; each test has a database of its own.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/store/sql.hpp"
#include "common/util/ulid.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using nlohmann::json;

namespace {

// A fresh database on the test server, dropped at the end.
class Database {
 public:
  Database() {
    std::string id = util::new_ulid();
    std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
    name_ = "d_" + id;
    admin()->exec_script("CREATE DATABASE " + name_);
  }
  ~Database() {
    try {
      admin()->exec_script("DROP DATABASE " + name_ + " WITH (FORCE)");
    } catch (...) {
    }
  }
  // The DSN, with `extra` key=value pairs after it.
  std::string dsn(const std::string& extra = "") const {
    return std::string(std::getenv("JOBCTL_TEST_PG_DSN")) + " dbname=" + name_ + (extra.empty() ? "" : " " + extra);
  }
  // SQL as the superuser, in this database's public schema.
  void sql(const std::string& script) const { store::open_postgres(dsn("schema="))->exec_script(script); }
  int64_t count(const std::string& query) const {
    return store::open_postgres(dsn("schema="))->query(query).at(0).i64(0);
  }

 private:
  static std::unique_ptr<store::Connection> admin() { return store::open_postgres(std::getenv("JOBCTL_TEST_PG_DSN")); }
  std::string name_;
};

test::Result run_on(const std::string& dsn, const test::TempDir& dir, std::vector<std::string> args,
                    const std::vector<std::string>& env = {}) {
  static int n = 0;
  args.insert(args.begin(), {JOBCTL_BIN, "--db", dsn});
  test::Process p(args, env, dir, "jobctl-" + std::to_string(++n));
  int code = p.wait(std::chrono::seconds(120));
  return {code, p.out(), p.err()};
}

}  // namespace

TEST_CASE("postgres: jobctl lives in schema jobctl beside an application's own jobs and schema_migrations") {
  if (test::test_backend() != config::Backend::postgres) return;
  test::TempDir dir;
  Database db;
  db.sql("CREATE TABLE jobs (id serial PRIMARY KEY, title text); INSERT INTO jobs (title) VALUES ('app');"
         "CREATE TABLE schema_migrations (version text PRIMARY KEY); INSERT INTO schema_migrations VALUES ('2024');");
  auto init = run_on(db.dsn(), dir, {"init"});
  REQUIRE_MESSAGE(init.code == 0, init.err);
  auto id = test::trim(run_on(db.dsn(), dir, {"submit", "--", "true"}).out);
  CHECK(json::parse(run_on(db.dsn(), dir, {"get", id, "-o", "json"}).out)["id"] == id);
  CHECK(db.count("SELECT count(*) FROM jobctl.jobs") == 1);
  CHECK(db.count("SELECT count(*) FROM public.jobs WHERE title = 'app'") == 1);  // the application's, untouched
  CHECK(db.count("SELECT count(*) FROM public.schema_migrations") == 1);

  // schema=NAME puts another store beside it; URI form too.
  REQUIRE(run_on(db.dsn("schema=staging"), dir, {"init"}).code == 0);
  CHECK(json::parse(run_on(db.dsn("schema=staging"), dir, {"ls", "-o", "json"}).out).empty());
  CHECK(db.count("SELECT count(*) FROM pg_tables WHERE schemaname = 'staging' AND tablename = 'runs'") == 1);
  auto bad = run_on(db.dsn("schema=Bad-Name"), dir, {"ls"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("schema 'Bad-Name' is not a lower-case name") != std::string::npos);
  // A schema nobody made yet: no store there (exit 5), nothing created.
  auto missing = run_on(db.dsn("schema=nowhere"), dir, {"ls"});
  CHECK(missing.code == 5);
  CHECK(missing.err.find("no jobctl schema") != std::string::npos);
  CHECK(db.count("SELECT count(*) FROM pg_namespace WHERE nspname = 'nowhere'") == 0);
}

TEST_CASE("postgres: a store made in public before jobctl had its own schema is moved there by init") {
  if (test::test_backend() != config::Backend::postgres) return;
  test::TempDir dir;
  Database db;
  REQUIRE(run_on(db.dsn("schema=public"), dir, {"init"}).code == 0);
  auto id = test::trim(run_on(db.dsn("schema=public"), dir, {"submit", "--", "true"}).out);
  auto before = run_on(db.dsn(), dir, {"ls"});
  CHECK(before.code == 5);
  CHECK(before.err.find("jobctl's tables are in schema public") != std::string::npos);
  CHECK(before.err.find("jobctl init") != std::string::npos);
  REQUIRE(run_on(db.dsn(), dir, {"init"}).code == 0);
  auto after = run_on(db.dsn(), dir, {"ls", "-o", "json"});
  REQUIRE(after.code == 0);
  REQUIRE(json::parse(after.out).size() == 1);
  CHECK(json::parse(after.out)[0]["id"] == id);
  CHECK(db.count("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == 0);
}

TEST_CASE("postgres: read-only, a statement timeout and permission denied are exit 5 with the server's reason") {
  if (test::test_backend() != config::Backend::postgres) return;
  test::TempDir dir;
  Database db;
  REQUIRE(run_on(db.dsn(), dir, {"init"}).code == 0);

  auto read_only = run_on(db.dsn("options=-cdefault_transaction_read_only=on"), dir, {"submit", "--", "true"});
  CHECK(read_only.code == 5);
  CHECK(read_only.err.find("read-only transaction") != std::string::npos);
  CHECK(read_only.err.find("target_session_attrs=read-write") != std::string::npos);

  // A statement that waits on a lock past the server's statement_timeout.
  auto holder = store::open_postgres(db.dsn());
  holder->exec_script("BEGIN; LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE");
  auto timed_out = run_on(db.dsn(), dir, {"ls"}, {"JOBCTL_STORE_TIMEOUT=3s"});
  holder->exec_script("ROLLBACK");
  CHECK(timed_out.code == 5);
  CHECK(timed_out.err.find("statement timeout") != std::string::npos);
  CHECK(timed_out.err.find("JOBCTL_STORE_TIMEOUT") != std::string::npos);

  // A role with no rights on jobctl's schema, nor to create one.
  const std::string role = "r_" + db.dsn().substr(db.dsn().rfind("d_") + 2, 10);
  db.sql("CREATE ROLE " + role + " LOGIN");
  auto denied = run_on(db.dsn("user=" + role), dir, {"ls"});
  CHECK(denied.code == 5);
  CHECK(denied.err.find("permission denied") != std::string::npos);
  CHECK(denied.err.find("GRANT USAGE ON SCHEMA jobctl") != std::string::npos);
  auto init = run_on(db.dsn("user=" + role + " schema=mine"), dir, {"init"});
  CHECK(init.code == 5);
  CHECK(init.err.find("permission denied") != std::string::npos);
  db.sql("DROP ROLE " + role);
}
