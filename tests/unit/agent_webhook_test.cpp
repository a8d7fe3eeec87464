// The agent's webhook pieces that need no server: secrets (resolution,
// redaction, the secrets file's checks), the signature, idempotency keys.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>

#include "agent/job_env.hpp"
#include "agent/secrets.hpp"
#include "agent/signature.hpp"
#include "common/util/error.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using agent::Secrets;

namespace {

Secrets from_env(std::vector<std::string> vars) {
  std::vector<char*> env;
  for (auto& v : vars) env.push_back(v.data());
  env.push_back(nullptr);
  return Secrets::load(env.data(), std::nullopt);
}

}  // namespace

TEST_CASE("secrets: references resolve from the environment, a missing one is named") {
  auto s = from_env({"JOBAGENT_SECRET_TOKEN=t0k", "JOBAGENT_SECRET_bad-name=x", "PATH=/bin"});
  CHECK(s.size() == 1);
  Secrets::Values used;
  auto r = s.resolve("Bearer {{secret:TOKEN}} and {{secret:TOKEN}}", used);
  CHECK(r.text == "Bearer t0k and t0k");
  CHECK(r.missing.empty());
  CHECK(used == Secrets::Values{{"TOKEN", "t0k"}});
  auto m = s.resolve("{{secret:OTHER}}", used);
  CHECK(m.missing == "OTHER");
}

TEST_CASE("secrets: redaction replaces the longest value first and drops what a cut may have left") {
  Secrets::Values v{{"PW", "hunter2"}, {"PW_FULL", "user:hunter2"}};
  CHECK(Secrets::redact("login user:hunter2 then hunter2", v) == "login [secret:PW_FULL] then [secret:PW]");
  // A tail that starts inside a value: "er2 …" could be the end of hunter2.
  // Up to the longest value less one byte goes (11 here), never past the first full value.
  CHECK(Secrets::redact("er2 then the rest", v, Secrets::Cut::yes) == "e rest");
  CHECK(Secrets::redact("er2 x hunter2", {{"PW", "hunter2"}}, Secrets::Cut::yes) == "[secret:PW]");
  CHECK(Secrets::redact("nothing here", {}, Secrets::Cut::yes) == "nothing here");
}

TEST_CASE("secrets: the file is read with comments, and refused when others may read it") {
  test::TempDir dir;
  std::string path = dir.file("secrets");
  {
    std::ofstream f(path);
    f << "# comment\n\nDB_PASSWORD=p=w\nTOKEN = spaced\n";
  }
  chmod(path.c_str(), 0600);
  std::vector<char*> env{nullptr};
  auto s = Secrets::load(env.data(), path);
  CHECK(s.get("DB_PASSWORD") == "p=w");
  CHECK(s.get("TOKEN") == " spaced");
  chmod(path.c_str(), 0604);
  CHECK_THROWS_WITH_AS(Secrets::load(env.data(), path),
                       doctest::Contains("is readable or writable by others (mode 604): refused"), Error);
  {
    std::ofstream f(path);
    f << "not a line with a name\n";
  }
  chmod(path.c_str(), 0600);
  CHECK_THROWS_WITH_AS(Secrets::load(env.data(), path), doctest::Contains("line 1: expected NAME=value"), Error);
}

TEST_CASE("signature: HMAC-SHA256 matches RFC 4231, and the header signs t.body") {
  CHECK(agent::hmac_sha256_hex("Jefe", "what do ya want for nothing?") ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(agent::signature_value("Jefe", 1700000000, "what do ya want for nothing?") ==
        "t=1700000000,v1=" + agent::hmac_sha256_hex("Jefe", "1700000000.what do ya want for nothing?"));
}

TEST_CASE("idempotency key: one per run, per schedule occurrence, or the job's own for a one-off job") {
  store::ClaimedRun run;
  run.job_id = "J";
  run.run_id = "R";
  CHECK(agent::idempotency_key(run) == "J:R");
  run.spec.idempotency_key = "order-7";
  CHECK(agent::idempotency_key(run) == "order-7");
  run.occurrence = 1'800'000'000'000'000;
  CHECK(agent::idempotency_key(run) == "order-7:2027-01-15T08:00:00.000Z");
  run.spec.idempotency_key.clear();
  CHECK(agent::idempotency_key(run) == "J:2027-01-15T08:00:00.000Z");
}
