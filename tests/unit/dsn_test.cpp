#include <doctest/doctest.h>

#include <cstdlib>

#include "common/config/dsn.hpp"
#include "common/util/error.hpp"

using jobctl::config::Backend;
using jobctl::config::parse_dsn;
using jobctl::config::redacted;
using jobctl::config::resolve_dsn;

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
  for (const char* bad : {"", "sqlite:", "mysql://h/db"}) {
    CAPTURE(bad);
    try {
      parse_dsn(bad);
      FAIL("accepted");
    } catch (const jobctl::Error& e) {
      CHECK(e.code() == jobctl::ExitCode::usage);
    }
  }
}

TEST_CASE("dsn: passwords never appear in redacted text") {
  CHECK(redacted(parse_dsn("postgres://bob:s3cret@db/jobs")) == "postgres://bob:***@db/jobs");
  CHECK(redacted(parse_dsn("host=db password=s3cret dbname=x")).find("s3cret") == std::string::npos);
  CHECK(redacted(parse_dsn("host=db password='s3 cret' dbname=x")).find("s3") == std::string::npos);
  CHECK(redacted(parse_dsn("postgres://db/jobs?password=s3cret")).find("s3cret") == std::string::npos);
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
