// The agent's webhook pieces that need no server: secrets (resolution,
// redaction, the secrets file's checks), the signature, idempotency keys.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <fstream>

#include <fmt/format.h>

#include "agent/job_env.hpp"
#include "agent/secrets.hpp"
#include "agent/signature.hpp"
#include "common/util/error.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using agent::Secrets;

namespace {

Secrets from_env(const Secrets::Values& environment) { return Secrets::load(environment, std::nullopt); }

void write_file(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
}

// The standard base64 of `text`, padded.
std::string base64(const std::string& text) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < text.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(text[i])) << 16;
    if (i + 1 < text.size()) n |= static_cast<uint32_t>(static_cast<unsigned char>(text[i + 1])) << 8;
    if (i + 2 < text.size()) n |= static_cast<unsigned char>(text[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < text.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < text.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

}  // namespace

TEST_CASE("secrets: taken out of the environment, which no longer holds them") {
  setenv("JOBAGENT_SECRET_TOKEN", "t0k", 1);
  setenv("JOBAGENT_SECRET_bad-name", "x", 1);
  auto taken = Secrets::take_from_environment();
  CHECK(taken == Secrets::Values{{"TOKEN", "t0k"}});
  CHECK(getenv("JOBAGENT_SECRET_TOKEN") == nullptr);
  CHECK(getenv("JOBAGENT_SECRET_bad-name") == nullptr);  // not a usable name, and still not left behind
  CHECK(getenv("PATH") != nullptr);
}

TEST_CASE("secrets: references resolve, a missing one is named") {
  auto s = from_env({{"TOKEN", "t0k"}});
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
  // Whatever form the longer one takes: the shorter, as sent, went first
  // and left the rest of the longer one's JSON form (\/ for /) readable.
  CHECK(Secrets::redact(R"({"url": "https:\/\/bob:s3cr3t@api\/"})",
                        {{"PW", "s3cr3t"}, {"URL", "https://bob:s3cr3t@api/"}}) == R"({"url": "[secret:URL]"})");
  // A tail that starts inside a value: "er2 …" could be the end of a form
  // of one. Up to the longest form less one byte goes (user:hunter2 with
  // every byte percent-encoded, 36 bytes, here), never past the first full
  // value.
  CHECK(Secrets::redact("er2 then all the rest of a text is long enough to keep this end", v, Secrets::Cut::yes) ==
        "long enough to keep this end");
  CHECK(Secrets::redact("er2 x hunter2", {{"PW", "hunter2"}}, Secrets::Cut::yes) == "[secret:PW]");
  CHECK(Secrets::redact("nothing here", {}, Secrets::Cut::yes) == "nothing here");
}

TEST_CASE("secrets: redaction finds a value URL-encoded, JSON-escaped, in base64 at any offset, and in hex") {
  const std::string pw = "p@ss w/rd+\"q\"";
  Secrets::Values v{{"PW", pw}};
  // As a receiver might echo it back.
  const std::vector<std::string> echoes = {
      "password=p%40ss%20w%2Frd%2B%22q%22",                           // percent-encoded, upper case
      "password=p%40ss+w%2frd%2b%22q%22",                             // a form's encoding, lower case
      "password=p%40ss%20w/rd%2B%22q%22",                             // Python's quote: / left as it is
      "password=p@ss%20w/rd+%22q%22",                                 // JavaScript's encodeURI
      "password=%70%40%73%73%20%77%2F%72%64%2B%22%71%22",            // every byte encoded
      R"({"got": "p@ss w\/rd+\"q\""})",                                  // JSON, / escaped too
      R"({"got": "p@ss w/rd+\"q\""})",                                   // JSON
      "Authorization: Basic " + base64("user:" + pw),                  // inside a longer base64 text
      "x " + base64(pw) + " y", "x " + base64("a" + pw) + " y", "x " + base64("ab" + pw + "c") + " y",
      "p@ss w/rd and q, but not the password",                          // not the value: left alone
  };
  for (size_t i = 0; i + 1 < echoes.size(); ++i) {
    CAPTURE(echoes[i]);
    auto out = Secrets::redact(echoes[i], v);
    CHECK(out.find("[secret:PW]") != std::string::npos);
    CHECK(out.find("w/rd") == std::string::npos);
    CHECK(out.find("%2") == std::string::npos);
  }
  std::string hex, upper_hex;
  for (unsigned char c : pw) {
    hex += fmt::format("{:02x}", c);
    upper_hex += fmt::format("{:02X}", c);
  }
  CHECK(Secrets::redact("hex " + hex, v) == "hex [secret:PW]");
  CHECK(Secrets::redact("HEX " + upper_hex, v) == "HEX [secret:PW]");
  CHECK(Secrets::redact(echoes.back(), v) == echoes.back());
  // Beyond ASCII, as Python's json writes it.
  CHECK(Secrets::redact(R"({"pw": "p\u00e4ssw\u00f6rd-1"})", {{"PW", "pässwörd-1"}}) == R"({"pw": "[secret:PW]"})");
  // A short value is redacted as sent only: its encodings are too short to tell from chance.
  CHECK(Secrets::redact("abc YWJj 616263 %61bc", {{"S", "abc"}}) == "[secret:S] YWJj 616263 %61bc");
  // A '%' of the value, as itself or encoded.
  for (const char* echo : {"50%off-now", "50%25off-now", "50%25off%2Dnow"})
    CHECK(Secrets::redact(std::string("a=") + echo + "&b", {{"S", "50%off-now"}}) == "a=[secret:S]&b");
  // A tail cut may go through a form as long as every byte encoded.
  CHECK(Secrets::longest({{"S", "abcdefgh"}}) == 24);
}

TEST_CASE("secrets: the file is read with comments, and refused when another user may read it") {
  test::TempDir dir;
  std::string path = dir.file("secrets");
  write_file(path, "# comment\n\nDB_PASSWORD=p=w\nTOKEN = spaced\n", 0600);
  auto s = Secrets::load({}, path);
  CHECK(s.get("DB_PASSWORD") == "p=w");
  CHECK(s.get("TOKEN") == " spaced");
  chmod(path.c_str(), 0604);
  CHECK_THROWS_WITH_AS(Secrets::load({}, path), doctest::Contains("is readable or writable by others (mode 604): refused"),
                       Error);
  chmod(path.c_str(), 0660);
  CHECK_THROWS_WITH_AS(Secrets::load({}, path), doctest::Contains("is writable by its group (mode 660): refused"), Error);
  // root:jobagent 0640: its group may read it when that group is the agent's own.
  chmod(path.c_str(), 0640);
  REQUIRE(chown(path.c_str(), static_cast<uid_t>(-1), getegid()) == 0);
  CHECK(Secrets::load({}, path).get("DB_PASSWORD") == "p=w");
  if (geteuid() == 0) {  // only root may give the file to another group
    REQUIRE(chown(path.c_str(), static_cast<uid_t>(-1), getegid() + 1) == 0);
    CHECK_THROWS_WITH_AS(Secrets::load({}, path), doctest::Contains("which is not the agent's"), Error);
    // The agent's group, but another user's file: that user may loosen it.
    REQUIRE(chown(path.c_str(), 1, getegid()) == 0);
    CHECK_THROWS_WITH_AS(Secrets::load({}, path), doctest::Contains("owned by user 1, neither the agent's nor root"),
                         Error);
    // Unreadable by its group too: its owner (a --run-as user, say) and
    // their jobs still read it.
    chmod(path.c_str(), 0600);
    CHECK_THROWS_WITH_AS(Secrets::load({}, path), doctest::Contains("owned by user 1, neither the agent's nor root"),
                         Error);
    REQUIRE(chown(path.c_str(), 0, getegid()) == 0);
  }
  write_file(path, "not a line with a name\n", 0600);
  CHECK_THROWS_WITH_AS(Secrets::load({}, path), doctest::Contains("line 1: expected NAME=value"), Error);
}

TEST_CASE("secrets: systemd's credentials, under the environment, over the file") {
  test::TempDir dir;
  std::string creds = dir.file("credentials");
  REQUIRE(mkdir(creds.c_str(), 0700) == 0);
  write_file(creds + "/API_TOKEN", "from-credential\n", 0400);
  write_file(creds + "/secrets", "DB_PASSWORD=from-lines\nSHARED=from-lines\n", 0400);
  write_file(creds + "/not-a-name", "ignored", 0400);
  std::string file = dir.file("secrets");
  write_file(file, "SHARED=from-file\nONLY_FILE=f\n", 0600);
  auto s = Secrets::load({{"API_TOKEN", "from-env"}}, file, creds);
  CHECK(s.get("API_TOKEN") == "from-env");
  CHECK(s.get("DB_PASSWORD") == "from-lines");
  CHECK(s.get("SHARED") == "from-lines");
  CHECK(s.get("ONLY_FILE") == "f");
  CHECK(s.size() == 4);
  CHECK(Secrets::load({}, std::nullopt, creds).get("API_TOKEN") == "from-credential");
  chmod((creds + "/API_TOKEN").c_str(), 0404);
  const std::string refused = "the credential '" + creds + "/API_TOKEN' is readable or writable by others";
  CHECK_THROWS_WITH_AS(Secrets::load({}, std::nullopt, creds), doctest::Contains(refused.c_str()), Error);
  CHECK_THROWS_WITH_AS(Secrets::load({}, std::nullopt, dir.file("none")), doctest::Contains("$CREDENTIALS_DIRECTORY"),
                       Error);
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
