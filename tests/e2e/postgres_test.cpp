// PostgreSQL as people run it: jobctl in a schema of its own beside an
// application's tables, the server's own refusals (read-only, a statement
// timeout, a missing privilege) reported as such, exit 5, and TLS with
// the server's certificate verified.
// PostgreSQL only; each test has a database of its own.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/config/dsn.hpp"
#include "common/store/grants.hpp"
#include "common/store/migrations.hpp"
#include "common/store/sql.hpp"
#include "common/util/error.hpp"
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
  // An application's schema: init is not the fix there.
  db.sql("CREATE SCHEMA app; CREATE TABLE app.users (id int);");
  auto theirs = run_on(db.dsn("schema=app"), dir, {"ls"});
  CHECK(theirs.code == 5);
  CHECK_MESSAGE(theirs.err.find("holds 1 table of another program's") != std::string::npos, theirs.err);
  CHECK(theirs.err.find("check that --db names the jobctl store") != std::string::npos);
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

TEST_CASE("postgres: init upgrades a store with a submitter's row policy through schema 16, and names a view that stops it") {
  if (test::test_backend() != config::Backend::postgres) return;
  test::TempDir dir;
  // A store at schema 15, as the release before made it.
  auto at_15 = [](const Database& db) {
    auto conn = store::open_postgres(config::parse_dsn(db.dsn()).target);
    store::migrate_to(*conn, 15);
    return conn;
  };
  Database db;
  const std::string role = "s_" + db.dsn().substr(db.dsn().rfind("d_") + 2, 10);
  db.sql("CREATE ROLE " + role + " LOGIN");
  store::grant(*at_15(db), store::GrantKind::submitter, role);
  // The policies whole, as text.
  auto policies = [&] {
    std::string all;
    for (const auto& row : store::open_postgres(db.dsn("schema="))
                               ->query("SELECT policyname || ' ' || permissive || ' ' || roles::text || ' ' || cmd || "
                                       "' ' || COALESCE(qual, '-') || ' ' || COALESCE(with_check, '-') FROM pg_policies "
                                       "WHERE schemaname = 'jobctl' AND tablename = 'runs' ORDER BY policyname"))
      all += row.text(0) + "\n";
    return all;
  };
  const std::string before = policies();
  REQUIRE(before.find("RESTRICTIVE {" + role + "} INSERT") != std::string::npos);
  // Migration 16 changes the collation of runs.lease_owner, which the
  // policy names: PostgreSQL refuses that while the policy exists.
  auto init = run_on(db.dsn(), dir, {"init"});
  REQUIRE_MESSAGE(init.code == 0, init.err);
  CHECK(db.count("SELECT max(version) FROM jobctl.schema_migrations") == store::kSchemaVersion);
  CHECK(policies() == before);
  // The submitter submits, and still cannot add a finished run.
  CHECK(run_on(db.dsn("user=" + role), dir, {"submit", "--", "true"}).code == 0);
  CHECK_THROWS_WITH(store::open_postgres(config::parse_dsn(db.dsn("user=" + role)).target)
                        ->exec_script("INSERT INTO runs (id, job_id, queue, priority, status, available_at, created_at, "
                                      "finished_at) SELECT 'forged', id, queue, 1, 'succeeded', 0, 0, 0 FROM jobs LIMIT 1"),
                    doctest::Contains("row-level security policy"));

  // A view of the database's own on a column the migration changes: init
  // says what stopped it (exit 5, not a bug's 70), and changes nothing.
  Database other;
  at_15(other);
  other.sql("CREATE VIEW public.owners AS SELECT lease_owner FROM jobctl.runs");
  auto stopped = run_on(other.dsn(), dir, {"init"});
  CHECK(stopped.code == 5);
  CHECK(stopped.err.find("upgrading the schema to version 16 failed, and nothing was changed") != std::string::npos);
  CHECK(stopped.err.find("owners") != std::string::npos);
  CHECK(stopped.err.find("drop it, run `jobctl init`") != std::string::npos);
  CHECK(other.count("SELECT max(version) FROM jobctl.schema_migrations") == 15);
}

TEST_CASE("postgres: the client module opens LDAP for an ldap:// service line, and asks the LDAP server") {
  // libjobctl-postgres.so maps no LDAP library at start (agent_test.cpp);
  // libpq's LDAP calls open it then. An LDAP server on loopback sees the
  // bind request that the real library sends (a BER SEQUENCE, 0x30).
  if (test::test_backend() != config::Backend::postgres) return;
  test::TempDir dir;
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(listener >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(listen(listener, 1) == 0);
  REQUIRE(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  std::ofstream(dir.file("pg_service.conf")) << "[viaLdap]\nldap://127.0.0.1:" << ntohs(address.sin_port)
                                             << "/dc=jobctl,dc=test?pgconn?one?(cn=jobs)\n";
  std::string first_bytes;
  std::jthread ldap_server([&] {
    pollfd ready{listener, POLLIN, 0};
    if (poll(&ready, 1, 60'000) != 1) return;  // a hang guard: the CHECK below reports it
    const int peer = accept(listener, nullptr, nullptr);
    if (peer < 0) return;
    pollfd readable{peer, POLLIN, 0};
    char buffer[64];
    if (poll(&readable, 1, 60'000) == 1) {
      const ssize_t n = read(peer, buffer, sizeof buffer);
      if (n > 0) first_bytes.assign(buffer, static_cast<size_t>(n));
    }
    close(peer);  // no answer: libpq gives up on the line
  });
  auto r = run_on("service=viaLdap connect_timeout=5", dir, {"ls"}, {"PGSERVICEFILE=" + dir.file("pg_service.conf")});
  ldap_server.join();
  close(listener);
  CHECK(r.code == 5);
  REQUIRE_MESSAGE(!first_bytes.empty(), r.err);
  CHECK(static_cast<unsigned char>(first_bytes[0]) == 0x30);
}

TEST_CASE("postgres: a jobctl copied away from its lib/jobctl/ uses the system's libpq") {
  if (test::test_backend() != config::Backend::postgres) return;
  test::TempDir dir;
  Database db;
  std::filesystem::create_directories(dir.file("elsewhere/bin"));
  std::filesystem::copy_file(JOBCTL_BIN, dir.file("elsewhere/bin/jobctl"));
  test::Process copied({dir.file("elsewhere/bin/jobctl"), "--db", db.dsn(), "init"}, {}, dir, "copied");
  CHECK_MESSAGE(copied.wait() == 0, copied.err());
  CHECK(db.count("SELECT count(*) FROM jobctl.schema_migrations") > 0);
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

TEST_CASE("postgres: TLS with sslmode=verify-full and the server's CA works, and a wrong CA, a wrong host name or no TLS is refused") {
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
  // The module opened OpenSSL for it (on x86-64 only at the first call).
  CHECK(test::read_file("/proc/" + std::to_string(agent.pid()) + "/maps").find("libssl.so") != std::string::npos);
  agent.signal(SIGTERM);
  CHECK(agent.wait() == 0);

  // A password over TLS: SCRAM with channel binding (OpenSSL hashes the
  // password and the server's certificate). A wrong one is exit 5.
  store::open_postgres(dsn("127.0.0.1", "sslmode=require"))
      ->exec_script("CREATE ROLE jobctl_scram LOGIN SUPERUSER PASSWORD 'pass-7f3'");
  auto as_scram = [&](const std::string& password) {
    std::string target = dsn("localhost", "sslmode=verify-full sslrootcert=" + dir.file("ca.crt") +
                                              " channel_binding=require");
    target.replace(target.find("user=postgres"), 13, "user=jobctl_scram password=" + password);
    return run_on(target, dir, {"ls"});
  };
  CHECK(as_scram("pass-7f3").code == 0);
  auto wrong = as_scram("wrong");
  CHECK(wrong.code == 5);
  CHECK_MESSAGE(wrong.err.find("password authentication failed") != std::string::npos, wrong.err);

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

TEST_CASE("postgres: an agent the server has too few connections for exits 5 before it registers") {
  // An agent holds three connections (jobagent(8), --db); a role allowed
  // two gets its first two, and the third is refused.
  if (test::test_backend() != config::Backend::postgres) return;
  test::TempDir dir;
  Database db;
  REQUIRE(run_on(db.dsn(), dir, {"init"}).code == 0);
  const std::string role = "agent_" + db.dsn().substr(db.dsn().rfind("d_") + 2, 10);
  db.sql("CREATE ROLE " + role + " LOGIN CONNECTION LIMIT 2");
  REQUIRE(run_on(db.dsn(), dir, {"grant", "agent", role}).code == 0);
  test::Process agent({JOBAGENT_BIN, "--db", db.dsn("user=" + role)}, {"XDG_RUNTIME_DIR=" + dir.path()}, dir, "agent");
  CHECK(agent.wait() == 5);
  CHECK_MESSAGE(agent.err().find("too many connections") != std::string::npos, agent.err());
  CHECK(agent.err().find("CONNECTION LIMIT") != std::string::npos);  // the hint says what to raise
  CHECK(db.count("SELECT count(*) FROM jobctl.workers") == 0);
  db.sql("DROP OWNED BY " + role + "; DROP ROLE " + role);
}

TEST_CASE("postgres: jobctl grant makes reader, submitter, operator and agent roles that can do their commands only") {
  if (test::test_backend() != config::Backend::postgres) return;
  test::TempDir dir;
  Database db;
  REQUIRE(run_on(db.dsn(), dir, {"init"}).code == 0);
  const std::string suffix = db.dsn().substr(db.dsn().rfind("d_") + 2, 10);
  std::map<std::string, std::string> as;  // kind → DSN of a role granted it
  for (const char* kind : {"reader", "submitter", "operator", "agent"}) {
    const std::string role = std::string(kind) + "_" + suffix;
    db.sql("CREATE ROLE " + role + " LOGIN");
    auto granted = run_on(db.dsn(), dir, {"grant", kind, role});
    REQUIRE_MESSAGE(granted.code == 0, granted.err);
    as[kind] = db.dsn("user=" + role);
  }
  auto ok = [&](const std::string& kind, std::vector<std::string> args) {
    auto r = run_on(as[kind], dir, args);
    CHECK_MESSAGE(r.code == 0, kind << " " << args[0] << ": " << r.err);
    return test::trim(r.out);
  };
  auto refused = [&](const std::string& kind, std::vector<std::string> args) {
    auto r = run_on(as[kind], dir, args);
    CHECK_MESSAGE(r.code == 5, kind << " " << args[0] << " exited " << r.code);
    CHECK_MESSAGE(r.err.find("permission denied") != std::string::npos, r.err);
  };
  auto sql_refused = [&](const std::string& kind, const std::string& statement) {
    CAPTURE(kind);
    CAPTURE(statement);
    try {
      store::open_postgres(as[kind])->exec_script(statement);
      FAIL("the server allowed it");
    } catch (const Error& e) {
      const std::string why = e.what();
      CHECK_MESSAGE((why.find("permission denied") != std::string::npos || why.find("must be owner") != std::string::npos ||
                     why.find("row-level security policy") != std::string::npos),
                    why);
    }
  };

  // The submitter adds jobs, schedules, batches and DAGs, and reads them.
  const std::string job =
      ok("submitter", {"submit", "--", "sh", "-c", std::string(JOBCTL_BIN) + " progress 0.5 && echo done"});
  const std::string dead = ok("submitter", {"submit", "--retries", "0", "--", "false"});
  const std::string later = ok("submitter", {"submit", "--in", "1h", "--", "true"});
  const std::string schedule = ok("submitter", {"submit", "--cron", "@hourly", "--", "true"});
  std::ofstream(dir.file("batch.jsonl")) << R"({"command": "true", "idempotency_key": "k1"})" "\n";
  ok("submitter", {"submit", "--file", dir.file("batch.jsonl")});
  ok("submitter", {"submit", "--file", dir.file("batch.jsonl")});  // the key matches: the same job
  std::ofstream(dir.file("dag.json"))
      << R"({"name": "d", "jobs": {"a": {"command": "true"}, "b": {"command": "true", "depends_on": ["a"]}}})";
  const std::string dag = ok("submitter", {"dag", "submit", dir.file("dag.json")});
  ok("submitter", {"get", job});
  // … and changes nothing that exists.
  refused("submitter", {"cancel", later});
  sql_refused("submitter", "DELETE FROM runs");
  sql_refused("submitter", "UPDATE runs SET status = 'succeeded'");
  sql_refused("submitter", "DELETE FROM attempts");
  sql_refused("submitter", "DELETE FROM workers");
  sql_refused("submitter", "DROP TABLE jobs");
  // It adds runs, but only new ones: never a finished run to pass for a result.
  sql_refused("submitter",
              "INSERT INTO runs (id, job_id, queue, priority, status, available_at, created_at, finished_at) "
              "SELECT 'forged', id, queue, 1, 'succeeded', 0, 0, 0 FROM jobs LIMIT 1");
  // Nor a waiting one that carries an attempt's output to show once claimed.
  sql_refused("submitter",
              "INSERT INTO runs (id, job_id, queue, priority, status, available_at, created_at, live_stdout_tail) "
              "SELECT 'forged', id, queue, 1, 'pending', 0, 0, 'x' FROM jobs LIMIT 1");
  // Queue settings are the operator's.
  sql_refused("submitter", "INSERT INTO queues (name, paused) VALUES ('held', 1)");

  // The agent runs them: claims, progress from the job (on the agent's
  // store), completion, retries to dead, the DAG, the schedule's lead, gc.
  test::Process agent({JOBAGENT_BIN, "--db", as["agent"], "--poll-interval", "100ms", "--gc-older-than", "30d"},
                      {"XDG_RUNTIME_DIR=" + dir.path()}, dir, "agent");
  CHECK(run_on(as["reader"], dir, {"wait", job}).code == 0);
  CHECK(run_on(as["reader"], dir, {"wait", dead}).code == 1);
  CHECK(run_on(as["reader"], dir, {"dag", "wait", dag}).code == 0);
  CHECK(ok("reader", {"logs", job}) == "done");
  sql_refused("agent", "DROP TABLE runs");
  sql_refused("agent", "ALTER TABLE jobs ADD COLUMN x integer");
  sql_refused("agent", "DELETE FROM schema_migrations");

  // The operator changes what exists.
  ok("operator", {"dlq", "replay", dead});
  CHECK(run_on(as["reader"], dir, {"wait", dead}).code == 1);
  refused("reader", {"dlq", "dismiss", dead});
  ok("operator", {"dlq", "dismiss", dead});
  ok("operator", {"cancel", later});
  ok("operator", {"retry", later});
  ok("operator", {"pause", schedule});
  ok("operator", {"resume", schedule});
  ok("operator", {"update", schedule, "--name", "hourly"});
  ok("operator", {"schedule", "trigger", schedule});
  ok("operator", {"queue", "set", "default", "--max-concurrent", "8"});
  ok("operator", {"queue", "pause", "default"});
  ok("operator", {"queue", "resume", "default"});
  ok("operator", {"delete", job});
  ok("operator", {"restore", job});
  ok("operator", {"dlq", "purge", "--older-than", "30d"});
  ok("operator", {"gc", "--older-than", "30d"});
  sql_refused("operator", "DELETE FROM workers");
  sql_refused("operator", "DROP TABLE jobs");

  // The reader reads everything, and writes nothing.
  for (std::vector<std::string> args :
       {std::vector<std::string>{"ls"}, {"get", schedule}, {"runs", job}, {"history", schedule}, {"stats"},
        {"workers"}, {"queue", "ls"}, {"schedules", "ls"}, {"schedule", "runs", schedule}, {"dag", "ls"},
        {"dag", "status", dag}, {"dlq", "ls"}, {"check", "--max-dlq", "100"}})
    ok("reader", args);
  refused("reader", {"submit", "--", "true"});
  sql_refused("reader", "INSERT INTO queues (name) VALUES ('x')");
  agent.signal(SIGTERM);
  CHECK(agent.wait() == 0);

  // none takes it all away; grant is PostgreSQL's, for roles that exist.
  REQUIRE(run_on(db.dsn(), dir, {"grant", "none", "reader_" + suffix}).code == 0);
  CHECK(run_on(as["reader"], dir, {"ls"}).code == 5);
  auto missing = run_on(db.dsn(), dir, {"grant", "reader", "nobody_" + suffix});
  CHECK(missing.code == 2);
  CHECK(missing.err.find("no PostgreSQL role 'nobody_" + suffix + "'") != std::string::npos);
  auto owner = run_on(db.dsn(), dir, {"grant", "reader", "postgres"});
  CHECK(owner.code == 2);
  CHECK(owner.err.find("role 'postgres' owns jobctl's tables") != std::string::npos);
  auto kind = run_on(db.dsn(), dir, {"grant", "admin", "reader_" + suffix});
  CHECK(kind.code == 2);
  CHECK(kind.err.find("unknown kind 'admin'") != std::string::npos);
  auto sqlite = run_on("sqlite:" + dir.file("s.db"), dir, {"grant", "reader", "x"});
  CHECK(sqlite.code != 0);
}
