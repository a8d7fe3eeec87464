// PostgreSQL as people run it: jobctl in a schema of its own beside an
// application's tables, the server's own refusals (read-only, a statement
// timeout, a missing privilege) reported as such, exit 5, and TLS with
// the server's certificate verified.
// PostgreSQL only; each test has a database of its own.
#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <regex>
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

namespace {

// A certificate authority of the test's own, a server certificate it
// signed for "localhost" alone, and a second authority that signed nothing.
void make_certificates(const test::TempDir& dir) {
  const std::string script = R"(set -e
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key ca.key; key other-ca.key; key server.key
openssl req -x509 -new -key ca.key -out ca.crt -days 2 -subj "/CN=jobctl test CA"
openssl req -x509 -new -key other-ca.key -out other-ca.crt -days 2 -subj "/CN=another CA"
openssl req -new -key server.key -out server.csr -subj "/CN=localhost"
printf 'subjectAltName=DNS:localhost\n' > san
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile san 2>/dev/null
)";
  test::Process p({"/bin/sh", "-c", "cd '" + dir.path() + "' && " + script}, {}, dir, "openssl");
  REQUIRE_MESSAGE(p.wait() == 0, p.err());
}

}  // namespace

TEST_CASE("postgres: TLS with sslmode=verify-full and the server's CA; a wrong CA, a wrong host name and no TLS are refused") {
  if (test::test_backend() != config::Backend::postgres) return;  // PostgreSQL's own
  test::TempDir dir;
  make_certificates(dir);
  test::Process start({std::string(JOBCTL_SOURCE_DIR) + "/scripts/pg-throwaway", "start", "--tls", dir.path()}, {},
                      dir, "pg-tls");
  REQUIRE(start.wait(std::chrono::seconds(120)) == 0);
  std::smatch m;
  const std::string printed = start.out();
  REQUIRE(std::regex_search(printed, m, std::regex(R"(PG_THROWAWAY_DIR=(\S+)[\s\S]*port=(\d+))")));
  const std::string data = m[1], port = m[2];
  struct Stop {
    std::string data;
    const test::TempDir& dir;
    ~Stop() { test::Process({std::string(JOBCTL_SOURCE_DIR) + "/scripts/pg-throwaway", "stop", data}, {}, dir, "pg-stop").wait(); }
  } stop{data, dir};
  auto dsn = [&](const std::string& host, const std::string& tls) {
    return "host=" + host + " port=" + port + " user=postgres dbname=postgres " + tls;
  };
  const std::string verified = dsn("localhost", "sslmode=verify-full sslrootcert=" + dir.file("ca.crt"));

  // Verified: every command and the agent work over it.
  REQUIRE(run_on(verified, dir, {"init"}).code == 0);
  auto submitted = run_on(verified, dir, {"submit", "--", "echo", "over TLS"});
  REQUIRE(submitted.code == 0);
  const std::string id = test::trim(submitted.out);
  test::Process agent({JOBAGENT_BIN, "--db", verified, "--poll-interval", "100ms"}, {"XDG_RUNTIME_DIR=" + dir.path()},
                      dir, "agent");
  CHECK(run_on(verified, dir, {"wait", id}).code == 0);
  CHECK(run_on(verified, dir, {"logs", id}).out == "over TLS\n");
  agent.signal(SIGTERM);
  CHECK(agent.wait() == 0);

  // Each refusal is exit 5 with libpq's reason, and never reaches the server.
  auto refused = [&](const std::string& target, const std::string& reason) {
    auto r = run_on(target, dir, {"ls"}, {"JOBCTL_STORE_TIMEOUT=5s"});
    CHECK(r.code == 5);
    CHECK_MESSAGE(r.err.find(reason) != std::string::npos, r.err);
  };
  refused(dsn("localhost", "sslmode=verify-full sslrootcert=" + dir.file("other-ca.crt")), "certificate verify failed");
  refused(dsn("127.0.0.1", "sslmode=verify-full sslrootcert=" + dir.file("ca.crt")),
          "does not match host name \"127.0.0.1\"");
  refused(dsn("localhost", "sslmode=disable"), "no encryption");
}
