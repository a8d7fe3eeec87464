#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/config/dsn.hpp"
#include "common/util/error.hpp"

using jobctl::config::Backend;
using jobctl::config::parse_dsn;
using jobctl::config::redacted;
using jobctl::config::resolve_dsn;

namespace {

// The usage error refusing `dsn`: its message (fails the test if accepted).
std::string dsn_refusal(const std::string& dsn) {
  try {
    parse_dsn(dsn);
  } catch (const jobctl::Error& e) {
    CHECK(e.code() == jobctl::ExitCode::usage);
    return e.what();
  }
  FAIL("accepted: " << dsn);
  return "";
}

}  // namespace

TEST_CASE("dsn: the forms DESIGN.md names select the right backend") {
  CHECK(parse_dsn("postgres://u:p@h/db").backend == Backend::postgres);
  CHECK(parse_dsn("postgresql://h/db").backend == Backend::postgres);
  CHECK(parse_dsn("host=localhost dbname=jobs").backend == Backend::postgres);
  auto s = parse_dsn("sqlite:/var/lib/jobs.db");
  CHECK(s.backend == Backend::sqlite);
  CHECK(s.target == "/var/lib/jobs.db");
  CHECK(parse_dsn("sqlite:///abs.db").target == "/abs.db");
  CHECK(parse_dsn("./jobs.db").backend == Backend::sqlite);
}

TEST_CASE("dsn: malformed DSNs are usage errors") {
  for (const char* bad : {"", "sqlite:", "mysql://h/db"}) dsn_refusal(bad);
}

TEST_CASE("dsn: sqlite://HOST/x.db is refused, not opened as the relative path HOST/x.db") {
  CHECK(dsn_refusal("sqlite://db1/jobs.db").find("names a host") != std::string::npos);
  dsn_refusal("sqlite://");
  CHECK(parse_dsn("sqlite://localhost/var/jobs.db").target == "/var/jobs.db");
  CHECK(parse_dsn("sqlite:db1/jobs.db").target == "db1/jobs.db");
}

TEST_CASE("dsn: a PostgreSQL DSN libpq cannot read is a usage error, not an unreachable server") {
  for (const char* bad : {"postgres://u@h:notaport/db", "postgresql://%zz@127.0.0.1/x", "host=127.0.0.1 port=abc",
                          "postgres://[::1/db", "postgres://h/db?bogus=1", "host=h connect_timeout=soon",
                          "postgres://h:70000/db", "host=a,b port=5432,x", "host=h nosuchkey=1"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_dsn(bad), doctest::Contains("invalid PostgreSQL DSN"), jobctl::Error);
  }
  for (const char* good : {"postgres://h1:5432,h2:5433/db?target_session_attrs=read-write", "host=a,b port=5432,5433",
                           "postgresql:///jobs?host=/var/run/postgresql", "host=h port='' dbname=x"}) {
    CAPTURE(good);
    CHECK(parse_dsn(good).backend == Backend::postgres);
  }
  // libpq's message quotes the DSN; its password does not come along.
  const std::string shown = dsn_refusal("postgres://bob:hunter2@[::1/db");
  CHECK(shown.find("hunter2") == std::string::npos);
  CHECK(shown.find("***") != std::string::npos);
}

TEST_CASE("dsn: a URI's password libpq would not read as one is still hidden in the error") {
  // Found by a reviewing helper: redaction follows libpq's grammar, and
  // these passwords are in none of its parameters, yet plainly meant.
  // libpq ends a URI's user info at its first @ before any /, so ?, # and
  // quotes may be in the password. (A blank may too, but after a key=value
  // pair libpq splits the URI into words there and quotes the first alone,
  // in which no @ says where a password ends.)
  for (const std::string password : {"hunter22", "hunter?22", "hunter#22", "hunter'22"}) {
    for (const std::string& bad : {"schema=a postgres://u:" + password + "@h/db", "POSTGRES://u:" + password + "@h/db",
                                   "host=h nosuchkey=postgresql://u:" + password + "@h/db",
                                   "mysql://u:" + password + "@h/db"}) {
      CAPTURE(bad);
      const std::string shown = dsn_refusal(bad);
      CHECK(shown.find("hunter") == std::string::npos);
      CHECK(shown.find("22") == std::string::npos);
    }
  }
}

TEST_CASE("dsn: a password of stars in a DSN libpq refuses is hidden once, not for ever") {
  // Found by tests/fuzz/dsn_fuzz: "*" was replaced by "***", found again
  // in it, and so on until memory ran out.
  for (const char* bad : {"postgres://u:*@h/db?*=1", "postgres://u:**@h/db?x**=1", "postgres://u:***@h/db?***=1"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_dsn(bad), doctest::Contains("invalid URI query parameter"), jobctl::Error);
  }
}

TEST_CASE("dsn: many passwords of stars in a DSN libpq refuses are hidden in one pass") {
  // Found by tests/fuzz/dsn_fuzz: each password was replaced in turn, and
  // each "*" made every star of the message three, so 40 of them would
  // have made 3^40 (a 4 KB DSN of them took 20 s to refuse).
  std::string bad = "host=h";
  for (int i = 0; i < 40; ++i) bad += " password=*";
  bad += " *=1";
  CHECK_THROWS_WITH_AS(parse_dsn(bad), doctest::Contains("invalid connection option \"***\""), jobctl::Error);
}

TEST_CASE("dsn: a DSN longer than kMaxDsnLength is a usage error, not a stack overflow") {
  // Found by feeding long DSNs to tests/fuzz/dsn_fuzz (which fuzzes up to
  // 4096 bytes): the patterns recursed once per character, and about 30,000
  // of them crashed jobctl with SIGSEGV.
  const size_t n = jobctl::config::kMaxDsnLength;
  for (const std::string& bad : {std::string(30000, 'a'), "host=h password='" + std::string(30000, 'a') + "'",
                                 "postgres://u:" + std::string(30000, 'a') + "@h/db", std::string(n + 1, 'a')}) {
    CAPTURE(bad.size());
    CHECK_THROWS_WITH_AS(parse_dsn(bad), doctest::Contains("more than 4096"), jobctl::Error);
  }
  CHECK(parse_dsn("sqlite:" + std::string(n - 7, 'a')).target.size() == n - 7);
  CHECK(redacted(parse_dsn("host=h password='" + std::string(n - 18, 'a') + "'")) == "host=h password=***");
}

TEST_CASE("dsn: a TLS key's passphrase, and a password with an @ not written %40, are hidden too") {
  // Found by a reviewing helper: sslpassword was shown as it was given.
  for (const std::string dsn : {"host=127.0.0.1 port=1 user=u sslpassword=TopSecretKey",
                                 "postgres://u@127.0.0.1:1/x?sslpassword=TopSecretKey"}) {
    CAPTURE(dsn);
    CHECK(redacted(parse_dsn(dsn)).find("TopSecret") == std::string::npos);
    CHECK(dsn_refusal(dsn + (dsn.find('?') == std::string::npos ? " bogus=1" : "&bogus=1")).find("TopSecret") ==
          std::string::npos);
  }
  // libpq reads the password to the first @, and the rest as the host.
  const std::string at = "postgres://u:pa@ss3cretB@127.0.0.1:1/x";
  CHECK(redacted(parse_dsn(at)) == "postgres://u:***@127.0.0.1:1/x");
  CHECK(dsn_refusal(at + "?bogus=1").find("ss3cret") == std::string::npos);
  CHECK(jobctl::config::without_secrets(at, "could not translate host name \"ss3cretB@127.0.0.1\"") ==
        "could not translate host name \"***@127.0.0.1\"");
}

TEST_CASE("dsn: passwords never appear in redacted text") {
  CHECK(redacted(parse_dsn("postgres://bob:s3cret@db/jobs")) == "postgres://bob:***@db/jobs");
  CHECK(redacted(parse_dsn("host=db password=s3cret dbname=x")).find("s3cret") == std::string::npos);
  CHECK(redacted(parse_dsn("host=db password='s3 cret' dbname=x")).find("s3") == std::string::npos);
  CHECK(redacted(parse_dsn("postgres://db/jobs?password=s3cret")).find("s3cret") == std::string::npos);
}

TEST_CASE("dsn: a URI whose user info would hold a / has none, and its query password is hidden") {
  // Found by tests/fuzz/dsn_fuzz: the user-info pattern ran past the / (as
  // libpq does not) to the @ inside the query's password, hid the port and
  // showed the end of the password.
  CHECK(redacted(parse_dsn("postgres://bob:5432/db?password=s3cret@db")) == "postgres://bob:5432/db?password=***");
  CHECK(redacted(parse_dsn("postgres://bob:pw?x@db/jobs")) == "postgres://bob:***@db/jobs");
}

TEST_CASE("dsn: a password with backslash escapes is hidden whole, in redacted text and in errors") {
  // Found by tests/fuzz/dsn_fuzz: the pattern stopped at the escaped quote
  // or space and showed the rest of the password.
  CHECK(redacted(parse_dsn(R"(host=db password='it\'s a secret' dbname=x)")) == "host=db password=*** dbname=x");
  CHECK(redacted(parse_dsn(R"(host=db password=top\ secret dbname=x)")) == "host=db password=*** dbname=x");
  CHECK(redacted(parse_dsn(R"(host=db password='a\\' dbname=x)")) == "host=db password=*** dbname=x");
  for (const char* bad : {R"(host=h password='it\'s a secret' port=x)", R"(host=h password=top\ secret port=x)"}) {
    CAPTURE(bad);
    CHECK(dsn_refusal(bad).find("secret") == std::string::npos);
  }
}

TEST_CASE("dsn: passwords are found by libpq's grammar, not fooled by a password= inside another value") {
  // Found by tests/fuzz/dsn_fuzz: a pattern took "password='" inside the
  // host's value for a password and ran on to the real one's opening
  // quote, so the real password showed.
  const std::string fooled = "host=h(password='x\377host=h password='it is a secret' port=x";
  const std::string shown = dsn_refusal(fooled);
  CHECK(shown.find("secret") == std::string::npos);
  CHECK(shown.find("host=h(password='x") != std::string::npos);  // not a password: it stays
  CHECK(redacted({Backend::postgres, "application_name=a'password='b password=secret"}) ==
        "application_name=a'password='b password=***");
  // A keyword libpq refuses (no "=") does not hide a password after it.
  CHECK(redacted({Backend::postgres, "junk password=secret"}) == "junk password=***");
  // A URI's query keyword is percent-decoded by libpq, so pass%77ord is a password.
  CHECK(redacted(parse_dsn("postgres://db/jobs?pass%77ord=secret&sslmode=disable")) ==
        "postgres://db/jobs?pass%77ord=***&sslmode=disable");
  // Found by tests/fuzz/dsn_fuzz: libpq splits a URI's query at "&" alone,
  // so a "?" is part of the password, not the start of another parameter.
  CHECK(redacted(parse_dsn("postgres://db/x?password=?//db/jobs?pa&sslmode=disable")) ==
        "postgres://db/x?password=***&sslmode=disable");
  CHECK(redacted(parse_dsn("postgres://[::1]:5432/x?password=a?b")) == "postgres://[::1]:5432/x?password=***");
  // The marker itself may spell the password; the DSN still shows none of it.
  CHECK(redacted({Backend::postgres, "host=h password=assword=*** port=1"}) == "host=h password=*** port=1");
}

TEST_CASE("dsn: schema= inside a quoted password is part of the password, not jobctl's option") {
  auto t = jobctl::config::postgres_target("host=db password='a schema=b' dbname=app");
  CHECK(t.conninfo == "host=db password='a schema=b' dbname=app");
  CHECK(t.options == "-csearch_path=jobctl");
  // Found by tests/fuzz/dsn_fuzz: a query word without "=" is no schema
  // option; libpq refuses it, and so must parse_dsn.
  CHECK_THROWS_AS(parse_dsn("postgres://h/db?schema"), jobctl::Error);
  // A quoted schema= value may be followed at once by the next keyword:
  // taking it out kept the blank before it, so the words either side were
  // not joined ("host=dbpassword=secret" was a host name, its password
  // shown in the connection error, and no password sent).
  CHECK(jobctl::config::postgres_target("host=db schema='ops'password=secret").conninfo == "host=db password=secret");
  CHECK(jobctl::config::postgres_target("host=db  schema='ops'port=5433").conninfo == "host=db  port=5433");
  CHECK(jobctl::config::postgres_target("host=db schema='ops' port=5433").conninfo == "host=db port=5433");
  CHECK(jobctl::config::postgres_target("schema='ops'port=5433").conninfo == "port=5433");
  // Found by tests/fuzz/dsn_fuzz: with schema= taken out, what followed it
  // began the string, and libpq read it as a URI with a password in it
  // that redaction, reading key=value pairs, did not hide.
  CHECK_THROWS_WITH_AS(parse_dsn("schema=a postgres://u=:secret@h"), doctest::Contains("invalid connection option"),
                       jobctl::Error);
}

TEST_CASE("dsn: flag, then JOBCTL_DB, then the XDG default") {
  setenv("JOBCTL_DB", "sqlite:/from/env.db", 1);
  CHECK(resolve_dsn(std::string("sqlite:/from/flag.db")).target == "/from/flag.db");
  CHECK(resolve_dsn(std::nullopt).target == "/from/env.db");
  unsetenv("JOBCTL_DB");
  setenv("XDG_DATA_HOME", "/xdg", 1);
  CHECK(resolve_dsn(std::nullopt).target == "/xdg/jobctl/jobs.db");
  unsetenv("XDG_DATA_HOME");
  setenv("HOME", "/home/u", 1);
  CHECK(resolve_dsn(std::nullopt).target == "/home/u/.local/share/jobctl/jobs.db");
}

TEST_CASE("dsn: jobctl's schema is jobctl unless schema= or the DSN's own search_path says otherwise") {
  using jobctl::config::postgres_target;
  auto t = postgres_target("host=db dbname=app");
  CHECK(t.conninfo == "host=db dbname=app");
  CHECK(t.options == "-csearch_path=jobctl");
  t = postgres_target("host=db schema=ops dbname=app");
  CHECK(t.conninfo == "host=db dbname=app");
  CHECK(t.options == "-csearch_path=ops");
  t = postgres_target("host=db dbname=app schema=''");
  CHECK(t.options.empty());  // the role's search_path, for a pooler that refuses startup options
  t = postgres_target("host=db options='-cwork_mem=64MB' dbname=app");
  CHECK(t.options == "-cwork_mem=64MB -csearch_path=jobctl");
  t = postgres_target("host=db options='-csearch_path=mine' dbname=app");
  CHECK(t.options.empty());  // the DSN's own search_path stands
  t = postgres_target("postgres://u@db/app?schema=ops&sslmode=disable");
  CHECK(t.conninfo == "postgres://u@db/app?sslmode=disable");
  CHECK(t.options == "-csearch_path=ops");
  CHECK(postgres_target("postgres://u@db/app?sslmode=disable&schema=ops").conninfo ==
        "postgres://u@db/app?sslmode=disable");
  CHECK(postgres_target("postgres://u@db/app?schema=ops").conninfo == "postgres://u@db/app");
  // libpq would refuse schema=, so parse_dsn must not pass it on to it.
  CHECK(parse_dsn("host=db schema=ops").backend == Backend::postgres);
  CHECK(parse_dsn("postgres://db/app?schema=ops").backend == Backend::postgres);
  CHECK_THROWS_WITH_AS(parse_dsn("host=db schema=Ops"), doctest::Contains("not a lower-case name"), jobctl::Error);
  CHECK_THROWS_AS(parse_dsn("host=db schema='a b'"), jobctl::Error);
  // A lower-case SQL identifier of at most 63 bytes, as the server folds one.
  for (const std::string& good : std::vector<std::string>{"_", "a", "ops_2", std::string(63, 'x')}) {
    CAPTURE(good);
    CHECK(jobctl::config::postgres_target("host=db schema=" + good).options == "-csearch_path=" + good);
  }
  for (const std::string& bad : std::vector<std::string>{"2ops", "o-ps", "ops\xc3\xa9", std::string(64, 'x')}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_dsn("host=db schema=" + bad), doctest::Contains("not a lower-case name"), jobctl::Error);
  }
}

TEST_CASE("dsn: a keyword, blanks and '=' at the start make a libpq key=value string, anything else a file") {
  auto backend = [](const char* dsn) {  // refused as libpq's, it was taken for one
    try {
      return parse_dsn(dsn).backend;
    } catch (const jobctl::Error& e) {
      REQUIRE_MESSAGE(std::string(e.what()).find("invalid PostgreSQL DSN") != std::string::npos, e.what());
      return Backend::postgres;
    }
  };
  for (const char* kv : {"host=h", "  host = h", "\thost\t=h", "HOST=h", "_x=1 host=h"}) {
    CAPTURE(kv);
    CHECK(backend(kv) == Backend::postgres);
  }
  for (const char* file : {"=host", "ho-st=h", "./host=h", "h9=x", "host", "jobs.db"}) {
    CAPTURE(file);
    CHECK(backend(file) == Backend::sqlite);
  }
}

TEST_CASE("config::hide_dsn_passwords overwrites --db's password in place, and leaves the rest as given") {
  std::string url = "postgres://app:s3cret@db.example.com/jobs", kv = "host=db password=hunter2 dbname=jobs";
  std::string path = "/var/lib/jobs.db", after = "postgres://app:other@db/x";
  std::string prog = "jobagent", flag = "--db", eq = "--db=" + kv, dashes = "--", flag2 = "--db";
  std::vector<char*> argv{prog.data(), flag.data(), url.data(), eq.data(), flag2.data(), path.data(),
                          dashes.data(), after.data()};
  jobctl::config::hide_dsn_passwords(static_cast<int>(argv.size()), argv.data());
  CHECK(std::string(argv[2]) == "postgres://app:***@db.example.com/jobs   ");
  CHECK(std::string(argv[3]) == "--db=host=db password=*** dbname=jobs    ");
  CHECK(std::string(argv[5]) == "/var/lib/jobs.db");
  CHECK(std::string(argv[7]) == "postgres://app:other@db/x");  // a job's command, after --
}
