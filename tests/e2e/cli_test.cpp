// jobctl as a user runs it: the real binary against a real store.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/util/utf8.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using nlohmann::json;
using test::run_jobctl;

namespace {

// How many jobs the store holds, read through jobctl itself.
size_t job_count(const test::TestDb& db, const test::TempDir& dir) {
  auto r = run_jobctl(db, dir, {"ls", "-o", "json", "--limit", "100000"});
  REQUIRE(r.code == 0);
  return json::parse(r.out).size();
}

}  // namespace

TEST_CASE("cli: submit prints the id alone, get shows the job as documented JSON") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto r = run_jobctl(db, dir, {"submit", "--name", "build", "--queue", "ci", "--priority", "high", "--timeout", "1h30m",
                            "--env", "A=1=2", "--payload", R"({"n": 1})", "--", "make", "test"});
  REQUIRE(r.code == 0);
  std::string id = test::trim(r.out);
  CHECK(id.size() == 26);
  CHECK(r.out == id + "\n");
  auto g = run_jobctl(db, dir, {"get", id, "-o", "json"});
  REQUIRE(g.code == 0);
  auto j = json::parse(g.out);
  CHECK(j["id"] == id);
  CHECK(j["name"] == "build");
  CHECK(j["queue"] == "ci");
  CHECK(j["priority"] == "high");
  CHECK(j["timeout"] == "1h30m");
  CHECK(j["env"]["A"] == "1=2");
  CHECK(j["payload"]["n"] == 1);
  CHECK(j["command"] == json::array({"make", "test"}));
  CHECK(j["status"] == "pending");
  CHECK(j["run"]["attempts"] == 0);
  CHECK(j["version"] == 1);
}

TEST_CASE("cli: tables show what a job holds, escape sequences as text, never as commands to the terminal") {
  test::TempDir dir;
  test::TestDb db(dir);
  // Any submit token of the HTTP API could name a job so (a tester).
  const std::string id = submit(db, dir, {"--name", "nightly\x1B]0;owned\x07\x1B[2J\xC2\x9B" "2J", "--", "true"});
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"ls", "-o", "table"}, {"get", id, "-o", "table"}, {"top", "--once"}}) {
    auto r = run_jobctl(db, dir, args);
    CAPTURE(args[0]);
    CHECK(r.code == 0);
    CHECK(r.out.find('\x1B') == std::string::npos);
    CHECK(r.out.find('\x07') == std::string::npos);
    CHECK(r.out.find("\xC2\x9B") == std::string::npos);
  }
  CHECK(run_jobctl(db, dir, {"ls", "-o", "table"}).out.find("nightly\\x1B]0;owned\\x07\\x1B[2J\\u009B2J") !=
        std::string::npos);
}

TEST_CASE("cli: Tab completes the id of a job older than the newest 200 from what is typed, in either case") {
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string oldest = submit(db, dir, {"--name", "the-oldest", "--", "true"});
  std::string lines;
  for (int i = 0; i < 210; ++i) lines += "{\"command\": [\"true\"]}\n";
  REQUIRE(run_jobctl(db, dir, {"submit", "--file", "-"}, lines).code == 0);
  std::string typed = oldest.substr(0, 24);
  for (auto& c : typed) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto offered = run_jobctl(db, dir, {"__complete", "--", "get", typed}).out;
  CHECK_MESSAGE(offered.find(oldest + "\tthe-oldest") != std::string::npos, offered);
}

TEST_CASE("cli: one argument is a shell command line, several are an argv") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto one = test::trim(run_jobctl(db, dir, {"submit", "--", "echo a | wc -c"}).out);
  auto many = test::trim(run_jobctl(db, dir, {"submit", "--", "echo", "a b"}).out);
  CHECK(json::parse(run_jobctl(db, dir, {"get", one, "-o", "json"}).out)["command"] == "echo a | wc -c");
  CHECK(json::parse(run_jobctl(db, dir, {"get", many, "-o", "json"}).out)["command"] == json::array({"echo", "a b"}));
}

TEST_CASE("cli: a mistyped command is named with the one meant, and a group alone lists its commands") {
  test::TempDir dir;
  test::TestDb db(dir);
  struct Case {
    std::vector<std::string> args;
    std::string error, hint;
  };
  for (const auto& c : std::vector<Case>{
           {{"sumbit", "--", "true"}, "unknown command 'sumbit'; did you mean 'submit'?", "`jobctl --help`"},
           {{"dlq"}, "`jobctl dlq` needs a command: ls, show, replay, dismiss or purge", "`jobctl dlq --help`"},
           {{"dlq", "lss"}, "unknown command 'lss'; did you mean 'ls'?", "`jobctl dlq --help`"},
           {{"frobnicate"}, "unknown command 'frobnicate'\n", "`jobctl --help`"},
           {{"submit", "--bogus", "--", "true"}, "jobctl: error: ", "`jobctl submit --help` lists its options"},
       }) {
    CAPTURE(c.args);
    auto r = run_jobctl(db, dir, c.args);
    CHECK(r.code == 2);
    CHECK(r.err.rfind("jobctl: error: ", 0) == 0);  // the project's one format, not CLI11's
    CHECK(r.err.find(c.error) != std::string::npos);
    CHECK(r.err.find("hint: " + c.hint) != std::string::npos);
  }
}

TEST_CASE("cli: retry's help says what it does for a job submitted with --on-each, in words no flag reads like") {
  test::TempDir dir;
  test::TestDb db(dir);
  // "(--on-each: each agent's such run)" read as a flag of retry's, which
  // has none of that name.
  for (const auto& args : std::vector<std::vector<std::string>>{{"--help"}, {"retry", "--help"}}) {
    CAPTURE(args);
    auto help = run_jobctl(db, dir, args);
    CHECK(help.code == 0);
    CHECK(help.out.find("(a job submitted with --on-each: on each agent whose run ended so)") != std::string::npos);
    CHECK(help.out.find("(--on-each:") == std::string::npos);
  }
}

TEST_CASE("cli: priority words are taken in any case, and medium is normal") {
  test::TempDir dir;
  test::TestDb db(dir);
  for (const auto& [given, stored] : std::vector<std::pair<std::string, std::string>>{
           {"HIGH", "high"}, {"Low", "low"}, {"medium", "normal"}, {"MEDIUM", "normal"}}) {
    CAPTURE(given);
    auto id = test::trim(run_jobctl(db, dir, {"submit", "--priority", given, "--", "true"}).out);
    CHECK(json::parse(run_jobctl(db, dir, {"get", id, "-o", "json"}).out)["priority"] == stored);
  }
  auto help = run_jobctl(db, dir, {"submit", "--help"}).out;
  CHECK(help.find("{critical,high,normal,low}") != std::string::npos);  // the alias is not offered
}

TEST_CASE("cli: bad input gets a one-line error, exit 2, and writes nothing") {
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string deep = dir.file("deep.json");  // 100,000 levels crashed the CLI
  std::ofstream(deep) << std::string(100'000, '[') << std::string(100'000, ']');
  const std::string latin1 = dir.file("latin1.txt");
  std::ofstream(latin1) << "caf\xE9";
  const std::string huge = dir.file("huge.json");  // accepted, then "Argument list too long" at start, before
  std::ofstream(huge) << "\"" << std::string(1100 * 1024, 'x') << "\"";
  const std::string big(100 * 1024, 'x');  // one argument may be at most 128 KiB
  struct Case {
    std::vector<std::string> args;
    std::string mentions;
  };
  std::vector<Case> cases{
      {{"submit", "--payload", "@" + deep, "--", "true"}, "nested deeper than 64 levels"},
      {{"submit", "--in", "106751992d", "--", "true"}, "longer than 100 years"},  // wrapped: due at once
      {{"submit", "--timeout", "307445734562m", "--", "true"}, "longer than 100 years"},  // wrapped to 10 s
      {{"gc", "--older-than", "307445734562m"}, "longer than 100 years"},  // deleted all older than 10 s
      {{"dlq", "purge", "--older-than", "307445734562m"}, "longer than 100 years"},
      {{"submit", "--at", "2027-02-30 10:00", "--", "true"}, "2027-02 has 28 days"},  // was 2 March
      {{"cron", "next", "@daily", "--from", "2027-04-31T00:00:00Z"}, "2027-04 has 30 days"},
      // Not UTF-8: exit 70 from the JSON encoder, or the database, before.
      {{"submit", "--", "echo", "a\xFF" "b"}, "argument 'a\\xFFb' is not valid UTF-8"},
      {{"submit", "--name", "a\xFF" "b", "--", "true"}, "not valid UTF-8"},
      {{"submit", "--env", "A=\xC0\xAF", "--", "true"}, "not valid UTF-8"},
      {{"submit", "--webhook", "http://127.0.0.1/\xFF"}, "not valid UTF-8"},
      {{"submit", "--webhook", "http://127.0.0.1/", "--data", "@" + latin1}, "is not valid UTF-8 text"},
      {{"submit", "--timeout", "10", "--", "true"}, "'10'"},
      {{"submit", "--timeout", "5parsecs", "--", "true"}, "5parsecs"},
      {{"submit", "--priority", "urgent", "--", "true"}, "urgent"},
      {{"submit", "--payload", "{not json", "--", "true"}, "--payload"},
      {{"submit", "--payload", "@/nonexistent/file.json", "--", "true"}, "/nonexistent/file.json"},
      {{"submit", "--env", "NOEQUALS", "--", "true"}, "NOEQUALS"},
      {{"submit", "--queue", "has space", "--", "true"}, "has space"},
      {{"submit"}, "no command"},
      {{"get", "not-an-id"}, "not-an-id"},
      // Sizes: each field within its documented limit (jobctl(1), LIMITS).
      {{"submit", "--payload", "@" + huge, "--", "true"}, "the payload is 1126402 bytes, more than 1024 KiB"},
      {{"submit", "--", big}, "the command is 102401 bytes, more than 64 KiB"},
      {{"submit", "--env", "BIG=" + big, "--", "true"}, "the environment (--env) is"},
      {{"submit", "--name", std::string(1025, 'n'), "--", "true"}, "the name is 1025 bytes, more than 1 KiB"},
      {{"submit", "--cwd", "/" + std::string(5000, 'd'), "--", "true"}, "--cwd is 5001 bytes"},
      {{"submit", "--webhook", "http://127.0.0.1/" + std::string(9000, 'u')}, "the --webhook URL is"},
      {{"submit", "--webhook", "http://127.0.0.1/", "--data", "@" + huge}, "the body (--data) is"},
      {{"wait", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "--timeout", "soon"}, "soon"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    auto r = run_jobctl(db, dir, c.args);
    CHECK(r.code == 2);
    CHECK(r.err.find(c.mentions) != std::string::npos);
    CHECK(r.out.empty());
  }
  // A path that cannot be read is told how standard input is spelt there:
  // @- for a flag's @FILE (the hint said "-", which --payload reads as
  // JSON), - for --file.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"submit", "--payload", "@/nonexistent", "--", "true"},
           {"submit", "--webhook", "http://127.0.0.1/", "--data", "@/nonexistent"}}) {
    CAPTURE(args);
    auto r = run_jobctl(db, dir, args);
    CHECK(r.code == 2);
    CHECK(r.err.find("check the path; @- reads standard input") != std::string::npos);
  }
  CHECK(run_jobctl(db, dir, {"submit", "--file", "/nonexistent"}).err.find("check the path; - reads standard input") !=
        std::string::npos);
  // A batch line is held to the same limits, and nothing of the batch is written.
  auto batch = run_jobctl(db, dir, {"submit", "--file", "-"},
                          "{\"command\": \"true\"}\n{\"command\": \"true\", \"name\": \"" + std::string(2000, 'n') + "\"}\n");
  CHECK(batch.code == 2);
  CHECK(batch.err.find("line 2") != std::string::npos);
  CHECK(batch.err.find("the name is 2000 bytes") != std::string::npos);
  CHECK(job_count(db, dir) == 0);
}

TEST_CASE("cli: an unreachable or malformed store is exit 5 or 2 with the DSN's password hidden") {
  test::TempDir dir;
  auto bad = test::Process({JOBCTL_BIN, "--db", "postgres://u:hunter2@127.0.0.1:1/none", "ls"}, {}, dir, "bad");
  CHECK(bad.wait() == 5);
  CHECK(bad.err().find("hunter2") == std::string::npos);
  CHECK(bad.err().find("cannot connect") != std::string::npos);
  auto scheme = test::Process({JOBCTL_BIN, "--db", "mysql://h/db", "ls"}, {}, dir, "scheme");
  CHECK(scheme.wait() == 2);
  auto port = test::Process({JOBCTL_BIN, "--db", "postgres://u:hunter2@127.0.0.1:notaport/db", "ls"}, {}, dir, "port");
  CHECK(port.wait() == 2);  // was 5, as if the server were down
  CHECK(port.err().find("invalid PostgreSQL DSN") != std::string::npos);
  CHECK(port.err().find("hunter2") == std::string::npos);
}

TEST_CASE("cli: output that cannot be written (a full disk, a closed stdout) is exit 74, and what was done is done") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto shell = [&](const std::string& label, const std::string& args_and_redirect) {
    test::Process p({"/bin/sh", "-c", "exec " + std::string(JOBCTL_BIN) + " --db '" + db.dsn() + "' " + args_and_redirect},
                    {}, dir, label);
    const int code = p.wait();
    return test::Result{code, p.out(), p.err()};
  };
  // Each exited 0, its output lost: a CI step saved an empty file.
  auto full = shell("full", "submit -- true > /dev/full");
  CHECK(full.code == 74);
  CHECK_MESSAGE(full.err.find("jobctl: error: cannot write the output: No space left on device") == 0, full.err);
  CHECK(job_count(db, dir) == 1);  // submitted, its id lost
  auto listed = shell("ls-full", "ls -o json > /dev/full");
  CHECK(listed.code == 74);
  auto closed = shell("closed", "ls -o json >&-");
  CHECK(closed.code == 74);
  CHECK_MESSAGE(closed.err.find("standard output is closed") != std::string::npos, closed.err);
  CHECK(test::lines(closed.err).size() == 2);  // the error and its hint
  // A command that failed keeps its code; one that prints nothing is fine.
  CHECK(shell("missing", "get 01m839z2zw3txsmscrj9h9fvm3 > /dev/full").code == 3);
  CHECK(shell("quiet", "queue pause default >&-").code == 0);
  // logs prints the job's stderr on its own: lost there, it exited 0 (a tester).
  CHECK(shell("resume", "queue resume default").code == 0);
  auto agent = test::start_agent(db, dir, {});
  const std::string id = test::submit(db, dir, {"--", "echo out; echo err >&2"});
  REQUIRE(run_jobctl(db, dir, {"wait", id}).code == 0);
  CHECK(shell("logs-err-full", "logs " + id + " 2>/dev/full").code == 74);
  CHECK(shell("logs-err-null", "logs " + id + " 2>/dev/null").code == 0);
  CHECK(shell("logs-stdout-only", "logs --stream stdout " + id + " 2>/dev/full").code == 0);
  CHECK(shell("logs-follow-err-full", "logs -f " + id + " 2>/dev/full").code == 74);
}

TEST_CASE("cli: a SQLite path with no store is exit 5 and creates nothing, except for init") {
  test::TempDir dir;
  const std::string typo = dir.file("typo/jobs.db");
  auto in = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {JOBCTL_BIN, "--db", "sqlite:" + typo});
    return test::Process(args, {}, dir, "jobctl");
  };
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"ls"}, {"check", "--max-dlq", "0"}, {"submit", "--", "true"}, {"stats"}, {"doctor"}}) {
    CAPTURE(args);
    auto p = in(args);
    CHECK(p.wait() == 5);  // was 0: ls printed [], check printed ok
    CHECK(p.err().find("no store at '" + typo + "'") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("typo")));
  }
  auto agent = test::Process({JOBAGENT_BIN, "--db", "sqlite:" + typo}, {}, dir, "agent");
  CHECK(agent.wait() == 5);
  CHECK_FALSE(std::filesystem::exists(dir.file("typo")));
  auto init = in({"init", "-o", "table"});
  CHECK(init.wait() == 0);
  CHECK_MESSAGE(init.out().rfind("schema created (version ", 0) == 0, init.out());  // was "up to date"
  auto again = in({"init", "-o", "table"});
  CHECK(again.wait() == 0);
  CHECK_MESSAGE(test::lines(again.out()).back().rfind("schema is up to date (version ", 0) == 0, again.out());
  CHECK(in({"check", "--max-dlq", "0"}).wait() == 0);
}

TEST_CASE("cli: a --db naming another program's SQLite file or no file at all is refused, and left as it was") {
  test::TempDir dir;
  // Another program's database, in the default rollback journal mode.
  const std::string theirs = dir.file("theirs.db");
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(theirs.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "CREATE TABLE foo (x); INSERT INTO foo VALUES (1);", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  // The file format's read and write versions (bytes 18 and 19): 1 in
  // rollback mode, 2 once in WAL mode.
  auto journal_bytes = [&] { return test::read_file(theirs).substr(18, 2); };
  struct Ran {
    int code;
    std::string err;
  };
  auto run_jobctl_at = [&](const std::string& db, const test::TempDir& in, std::vector<std::string> args) {
    args.insert(args.begin(), {JOBCTL_BIN, "--db", db});
    test::Process p(args, {}, in, "jobctl");
    const int code = p.wait();
    return Ran{code, p.err()};
  };
  REQUIRE(journal_bytes() == std::string("\x01\x01"));
  auto ls = run_jobctl_at("sqlite:" + theirs, dir, {"ls"});
  CHECK(ls.code == 5);
  CHECK(ls.err.find("no jobctl schema") != std::string::npos);
  // Not "run `jobctl init`": that adds jobctl's tables to their file.
  CHECK_MESSAGE(ls.err.find("holds 1 table of another program's") != std::string::npos, ls.err);
  CHECK(ls.err.find("check that --db names the jobctl store") != std::string::npos);
  CHECK(ls.err.find("run `jobctl init`") == std::string::npos);
  test::Process doctor({JOBCTL_BIN, "--db", "sqlite:" + theirs, "doctor", "-o", "json"}, {}, dir, "doctor");
  CHECK(doctor.wait() == 1);
  CHECK_MESSAGE(doctor.out().find("check that --db names the jobctl store") != std::string::npos, doctor.out());
  auto agent = test::Process({JOBAGENT_BIN, "--db", "sqlite:" + theirs}, {}, dir, "agent");
  CHECK(agent.wait() == 5);
  CHECK(journal_bytes() == std::string("\x01\x01"));  // the refusal left it in WAL mode
  CHECK_FALSE(std::filesystem::exists(theirs + "-wal"));

  // Not a file: SQLite said "disk I/O error", and as root made /dev/null-journal.
  const bool had_journal = std::filesystem::exists("/dev/null-journal");
  for (const auto& [db, what] : std::vector<std::pair<std::string, std::string>>{
           {dir.path(), "is a directory, not an SQLite file"}, {"/dev/null", "is a device, not an SQLite file"}}) {
    for (const auto& args : std::vector<std::vector<std::string>>{{"ls"}, {"init"}}) {
      auto p = run_jobctl_at("sqlite:" + db, dir, args);
      CHECK(p.code == 2);
      CHECK_MESSAGE(p.err.find(what) != std::string::npos, p.err);
    }
  }
  CHECK(std::filesystem::exists("/dev/null-journal") == had_journal);
}

TEST_CASE("cli: unknown ids are exit 3, cancelling a finished job is exit 4") {
  test::TempDir dir;
  test::TestDb db(dir);
  CHECK(run_jobctl(db, dir, {"get", "01ARZ3NDEKTSV4RRFFQ69G5FAV"}).code == 3);
  CHECK(run_jobctl(db, dir, {"cancel", "01ARZ3NDEKTSV4RRFFQ69G5FAV"}).code == 3);
  auto id = test::trim(run_jobctl(db, dir, {"submit", "--", "true"}).out);
  CHECK(run_jobctl(db, dir, {"cancel", id}).code == 0);
  auto again = run_jobctl(db, dir, {"cancel", id});
  CHECK(again.code == 4);
  CHECK(again.err.find("already finished (cancelled)") != std::string::npos);
}

TEST_CASE("cli: batch submit writes every line or none") {
  test::TempDir dir;
  test::TestDb db(dir);
  std::string good = R"({"command": ["true"], "name": "a"}
{"command": "echo b", "queue": "q2", "env": {"X": "1"}}

{"command": ["true"], "priority": "low", "timeout": "5m", "payload": [1, 2]}
)";
  auto r = run_jobctl(db, dir, {"submit", "--file", "-"}, good);
  REQUIRE(r.code == 0);
  CHECK(test::lines(r.out).size() == 3);
  CHECK(job_count(db, dir) == 3);

  std::string bad = R"({"command": ["true"]}
{"command": ["true"], "retires": 3}
{"command": ["true"]}
)";
  auto b = run_jobctl(db, dir, {"submit", "--file", "-"}, bad);
  CHECK(b.code == 2);
  CHECK(b.err.find("line 2") != std::string::npos);
  CHECK(b.err.find("retires") != std::string::npos);
  CHECK(job_count(db, dir) == 3);

  auto notjson = run_jobctl(db, dir, {"submit", "--file", "-"}, "{\"command\": [\"true\"]}\n{oops\n");
  CHECK(notjson.code == 2);
  CHECK(notjson.err.find("line 2") != std::string::npos);
  auto huge = run_jobctl(db, dir, {"submit", "--file", "-"}, "{\"command\": \"true\", \"retries\": 1e400}\n");
  CHECK(huge.code == 2);  // was 70
  CHECK(huge.err.find("line 1: the job is not valid JSON") != std::string::npos);
  CHECK(run_jobctl(db, dir, {"submit", "--file", "-", "--queue", "x"}, good).code == 2);
  // Blank lines hold no job, and no room is made for them: room for 32
  // million jobs (32 GB) was asked for these 32 MB, and jobctl died (70).
  auto blank = run_jobctl(db, dir, {"submit", "--file", "-"}, std::string(32 << 20, '\n'));
  CHECK(blank.code == 2);
  CHECK(blank.err.find("holds no jobs") != std::string::npos);
  CHECK(job_count(db, dir) == 3);
}

TEST_CASE("cli: submit --file --wait refuses a batch holding a schedule, naming its line, and writes nothing") {
  test::TempDir dir;
  test::TestDb db(dir);
  // The batch was written and waited for (until the schedule's first
  // occurrence), where submit --cron --wait is refused.
  auto r = run_jobctl(db, dir, {"submit", "--file", "-", "--wait"},
                      "{\"command\": \"true\"}\n{\"command\": \"true\", \"cron\": \"0 3 * * *\"}\n");
  CHECK(r.code == 2);
  CHECK(r.err.find("line 2: --wait cannot wait for a schedule") != std::string::npos);
  CHECK(r.out.empty());
  CHECK(job_count(db, dir) == 0);
  // Without --wait the same batch is taken.
  CHECK(run_jobctl(db, dir, {"submit", "--file", "-"}, "{\"command\": \"true\", \"cron\": \"0 3 * * *\"}\n").code == 0);
}

TEST_CASE("cli: a batch read while it is written keeps its lines' order and reports its first bad line") {
  // 8,000 lines are read in parts (the first of 1,000 jobs, then 5,000
  // each: cli/job_file.cpp) on a thread of their own, while the store
  // writes the parts before: the jobs must still come in line order, a bad
  // line in a late part must leave nothing written, and the file's first
  // bad line is the one named, whatever else went wrong first.
  test::TempDir dir;
  test::TestDb db(dir);
  constexpr int kLines = 8000;
  auto file_with = [&](const std::map<int, std::string>& bad) {
    std::string text;
    for (int n = 1; n <= kLines; ++n) {
      if (auto it = bad.find(n); it != bad.end()) text += it->second;
      else if (n % 1000 != 0) text += R"({"command": ["true"], "name": "line-)" + std::to_string(n) + "\"}";
      text += '\n';  // every thousandth line blank: line numbers are not job numbers
    }
    return text;
  };
  auto b = run_jobctl(db, dir, {"submit", "--file", "-"},
                      file_with({{900, R"({"command": ["true"], "retires": 3})"}, {7990, "{oops"}}));
  CHECK(b.code == 2);
  CHECK(b.err.find("line 900: ") != std::string::npos);
  CHECK(b.err.find("line 7990") == std::string::npos);
  auto late = run_jobctl(db, dir, {"submit", "--file", "-"}, file_with({{7999, "[1]"}}));
  CHECK(late.code == 2);
  CHECK(late.err.find("line 7999: ") != std::string::npos);
  CHECK(late.err.find("nothing was submitted") != std::string::npos);
  // The store refuses a job of the first part (its retry delay is longer
  // than its queue's longest) before the last part is read: the bad line
  // is still what is reported, as when every line was read first.
  REQUIRE(run_jobctl(db, dir, {"queue", "set", "slow", "--max-retry-delay", "1m"}).code == 0);
  auto refused = run_jobctl(
      db, dir, {"submit", "--file", "-"},
      file_with({{5, R"({"command": ["true"], "queue": "slow", "retry_delay": "2m"})"}, {7999, "[1]"}}));
  CHECK(refused.code == 2);
  CHECK(refused.err.find("line 7999: ") != std::string::npos);
  // Alone, the refused job is named by its line, as a bad line is, and
  // the queue whose defaults made it wrong.
  auto alone = run_jobctl(db, dir, {"submit", "--file", "-"},
                          file_with({{6500, R"({"command": ["true"], "queue": "slow", "retry_delay": "2m"})"}}));
  CHECK(alone.code == 2);
  CHECK(alone.err.find("line 6500: ") != std::string::npos);
  CHECK(alone.err.find("queue slow") != std::string::npos);
  CHECK(alone.err.find("nothing was submitted") != std::string::npos);
  CHECK(job_count(db, dir) == 0);

  auto r = run_jobctl(db, dir, {"submit", "--file", "-"}, file_with({}));
  REQUIRE(r.code == 0);
  const auto ids = test::lines(r.out);
  REQUIRE(ids.size() == kLines - kLines / 1000);
  // Read from the store directly: listing 8,000 jobs as JSON is slow under
  // the sanitizers.
  std::map<std::string, std::string> name_of;
  for (const auto& row : db.connect()->query("SELECT id, name FROM jobs")) name_of[row.text(0)] = row.text(1);
  size_t out_of_order = 0;
  for (size_t i = 0, n = 1; i < ids.size(); ++i, ++n) {
    if (n % 1000 == 0) ++n;
    if (name_of[ids[i]] != "line-" + std::to_string(n) && out_of_order++ < 3)
      MESSAGE("job " << i << " is " << name_of[ids[i]] << ", expected line-" << n);
  }
  CHECK(out_of_order == 0);
}

TEST_CASE("cli: the same job given by flags and by a batch line is stored the same") {
  test::TempDir dir;
  test::TestDb db(dir);
  struct Case {
    std::vector<std::string> flags;
    std::string line;
  };
  std::vector<Case> cases{
      {{"--name", "n", "--queue", "q", "--priority", "low", "--timeout", "90s", "--env", "A=1", "--env", "B=x=y",
        "--cwd", "/tmp", "--on", "role=web", "--concurrency-key", "k", "--max-concurrent", "3", "--tenant", "t",
        "--payload", R"({"a": [1, 2]})", "--notify", "http://127.0.0.1/n", "--notify-on", "success,dead",
        "--retries", "7", "--backoff", "fixed", "--retry-delay", "3s", "--max-retry-delay", "1m", "--retry-for",
        "2h", "--no-retry-exit-codes", "2,64-78", "--max-deliveries", "4", "--delivery", "at-most-once", "--",
        "make", "test"},
       R"({"name": "n", "queue": "q", "priority": "low", "timeout": "90s", "env": {"A": "1", "B": "x=y"},
           "cwd": "/tmp", "on": "role=web", "concurrency_key": "k", "max_concurrent": 3, "tenant": "t",
           "payload": {"a": [1, 2]}, "notify": ["http://127.0.0.1/n"], "notify_on": "success,dead", "retries": 7,
           "backoff": "fixed", "retry_delay": "3s", "max_retry_delay": "1m", "retry_for": "2h",
           "no_retry_exit_codes": "2,64-78", "max_deliveries": 4, "delivery": "at-most-once",
           "command": ["make", "test"]})"},
      {{"--cron", "*/5 * * * *", "--tz", "Europe/Berlin", "--misfire", "all", "--catchup-window", "3h",
        "--overlap", "buffer-all", "--max-concurrent", "2", "--jitter", "10s", "--", "echo hi | wc -c"},
       R"({"cron": "*/5 * * * *", "tz": "Europe/Berlin", "misfire": "all", "catchup_window": "3h",
           "overlap": "buffer-all", "max_concurrent": 2, "jitter": "10s", "command": "echo hi | wc -c"})"},
      {{"--webhook", "http://127.0.0.1:9/hook", "--method", "PUT", "--header", "X-A: 1", "--data", R"({"n": 1})",
        "--sign-secret", "KEY"},
       R"({"webhook": {"url": "http://127.0.0.1:9/hook", "method": "PUT", "headers": ["X-A: 1"],
           "data": "{\"n\": 1}", "sign_secret": "KEY"}})"},
  };
  // What differs between any two jobs, however they were made.
  auto definition = [&](const std::string& id) {
    auto g = run_jobctl(db, dir, {"get", id, "-o", "json"});
    REQUIRE(g.code == 0);
    auto j = json::parse(g.out);
    for (const char* own : {"id", "created_at", "run", "status"}) j.erase(own);
    if (j["schedule"].is_object()) j["schedule"].erase("next_fire_at");  // from its own submit time
    return j;
  };
  for (const auto& c : cases) {
    CAPTURE(c.line);
    std::vector<std::string> args{"submit"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    auto by_flags = run_jobctl(db, dir, args);
    REQUIRE(by_flags.code == 0);
    std::string line = json::parse(c.line).dump() + "\n";
    auto by_line = run_jobctl(db, dir, {"submit", "--file", "-"}, line);
    REQUIRE(by_line.code == 0);
    auto a = definition(test::trim(by_flags.out)), b = definition(test::trim(by_line.out));
    CHECK(a == b);
    CHECK(a["name"] == json::parse(c.line).value("name", ""));
  }
}

TEST_CASE("cli: a second submit with the same idempotency key returns the first job") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto first = run_jobctl(db, dir, {"submit", "--idempotency-key", "release-1.2", "--", "deploy"});
  auto second = run_jobctl(db, dir, {"submit", "--idempotency-key", "release-1.2", "--", "deploy"});
  REQUIRE(first.code == 0);
  CHECK(second.code == 0);
  CHECK(second.out == first.out);
  CHECK(second.err.find("already exists") != std::string::npos);
  CHECK(job_count(db, dir) == 1);
  // The note quotes a key as an error does: a newline or an escape in it
  // shown, not obeyed (a tester).
  const std::string odd = "a\nb\x1B[31m";
  REQUIRE(run_jobctl(db, dir, {"submit", "--idempotency-key", odd, "--", "deploy"}).code == 0);
  auto again = run_jobctl(db, dir, {"submit", "--idempotency-key", odd, "--", "deploy"});
  CHECK(again.code == 0);
  CHECK(again.err.find("with idempotency key 'a\\nb\\x1B[31m'") != std::string::npos);
  CHECK(test::lines(again.err).size() == 1);
}

TEST_CASE("cli: wait gives up with exit 124 when nothing runs the job") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto id = test::trim(run_jobctl(db, dir, {"submit", "--", "true"}).out);
  auto r = run_jobctl(db, dir, {"wait", id, "--timeout", "200ms"});
  CHECK(r.code == 124);
  CHECK(r.err.find("pending") != std::string::npos);
  // With -o json the job as it stands, as get shows it (and as wait of
  // several ids shows each): it printed nothing.
  auto as_json = run_jobctl(db, dir, {"wait", id, "--timeout", "200ms", "-o", "json"});
  CHECK(as_json.code == 124);
  REQUIRE_MESSAGE(!as_json.out.empty(), as_json.err);
  auto shown = json::parse(as_json.out);
  CHECK(shown["id"] == id);
  CHECK(shown["status"] == "pending");
  CHECK(shown["waiting"].get<std::string>().find("no live agent serves queue default") != std::string::npos);
}

TEST_CASE("cli: wait reads the SQLite file its path names now, once the one it opened was deleted") {
  if (test::test_backend() != config::Backend::sqlite) return;  // a file of its own
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string job = test::submit(db, dir, {"--", "true"});  // no agent: it waits
  test::Process wait({JOBCTL_BIN, "--db", db.dsn(), "wait", job, "--timeout", "120s"}, {}, dir, "wait");
  const std::string file = db.dsn().substr(std::string("sqlite:").size());
  const auto has_open = [&] {  // the file, among wait's open descriptors
    std::error_code ec;
    for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(wait.pid()) + "/fd", ec))
      if (std::filesystem::read_symlink(fd.path(), ec) == std::filesystem::path(file)) return true;
    return false;
  };
  // Waiting, between two looks (the file deleted as it was opened is
  // another case: "no store at", exit 5).
  test::eventually([&] { return has_open() && wait.sleeping(); }, "jobctl wait to look at the store");
  for (const char* end : {"", "-wal", "-shm"}) std::filesystem::remove(file + end);
  REQUIRE(run_jobctl(db, dir, {"init"}).code == 0);
  // The new file has no such job: said at once, rather than waiting on the
  // deleted file until --timeout.
  CHECK(wait.wait(std::chrono::seconds(60)) == 3);
  CHECK(wait.err().find("no job") != std::string::npos);
}

TEST_CASE("cli: a SQLite file deleted as a command opens it is said to be missing, never a disk I/O error") {
  if (test::test_backend() != config::Backend::sqlite) return;  // a file of its own
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string job = test::submit(db, dir, {"--", "true"});
  const std::string file = db.dsn().substr(std::string("sqlite:").size()), kept = dir.file("kept");
  for (const char* end : {"", "-wal", "-shm"})
    std::filesystem::copy_file(file + end, kept + end, std::filesystem::copy_options::overwrite_existing);
  // The deletion lands from 0 to 2.5 ms after the command opened the
  // file: before its first read, during its reads or after its last. It
  // failed, about one time in six here, with SQLite's "disk I/O error".
  int missing = 0;
  for (int i = 0; i < 40; ++i) {
    for (const char* end : {"", "-wal", "-shm"})
      std::filesystem::copy_file(kept + end, file + end, std::filesystem::copy_options::overwrite_existing);
    test::Process get({JOBCTL_BIN, "--db", db.dsn(), "get", job, "-o", "json"}, {}, dir, fmt::format("get-{}", i));
    const auto opened = [&] {
      std::error_code ec;
      for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(get.pid()) + "/fd", ec))
        if (std::filesystem::read_symlink(fd.path(), ec) == std::filesystem::path(file)) return true;
      return !get.running();
    };
    // Looked for without a pause (test::eventually's 20 ms is longer than
    // the whole command).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!opened()) {
      if (std::chrono::steady_clock::now() > give_up) FAIL("jobctl get did not open the store in a minute");
      std::this_thread::yield();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500 * (i % 6)));
    for (const char* end : {"", "-wal", "-shm"}) std::filesystem::remove(file + end);
    const int code = get.wait();
    INFO("try ", i, ": ", get.err());
    CHECK((code == 0 || code == 5));
    CHECK(get.err().find("I/O error") == std::string::npos);
    if (code == 5) {
      CHECK(get.err().find("no store at '" + file + "'") != std::string::npos);
      ++missing;
    }
  }
  MESSAGE(missing, " of 40 found no store");
}

TEST_CASE("cli: ls filters by status and queue") {
  test::TempDir dir;
  test::TestDb db(dir);
  run_jobctl(db, dir, {"submit", "--queue", "a", "--", "true"});
  auto b = test::trim(run_jobctl(db, dir, {"submit", "--queue", "b", "--", "true"}).out);
  run_jobctl(db, dir, {"cancel", b});
  CHECK(json::parse(run_jobctl(db, dir, {"ls", "-o", "json", "--queue", "a"}).out).size() == 1);
  auto cancelled = json::parse(run_jobctl(db, dir, {"ls", "-o", "json", "--status", "cancelled"}).out);
  REQUIRE(cancelled.size() == 1);
  CHECK(cancelled[0]["id"] == b);
  auto table = run_jobctl(db, dir, {"ls", "-o", "table"});
  CHECK(table.out.rfind("ID", 0) == 0);
  CHECK(test::lines(table.out).size() == 3);
}

TEST_CASE("cli: a table lines up its columns under a CJK or emoji name") {
  test::TempDir dir;
  test::TestDb db(dir);
  for (const char* name : {"\xE6\x97\xA5\xE6\x9C\xAC", "\xF0\x9F\x9A\x80-deploy", "plain"})
    REQUIRE(run_jobctl(db, dir, {"submit", "--name", name, "--", "true"}).code == 0);
  auto lines = test::lines(run_jobctl(db, dir, {"ls", "-o", "table"}).out);
  REQUIRE(lines.size() == 4);
  // STATUS starts at one terminal column on every line: a wide character
  // was counted as one column, and the rows after it fell out of line.
  const size_t column = util::display_width(lines[0].substr(0, lines[0].find("STATUS")));
  for (size_t i = 1; i < lines.size(); ++i) {
    CAPTURE(lines[i]);
    CHECK(util::display_width(lines[i].substr(0, lines[i].find("pending"))) == column);
  }
}

TEST_CASE("cli: queue set and queue ls show and apply retry defaults") {
  test::TempDir dir;
  test::TestDb db(dir);
  CHECK(run_jobctl(db, dir, {"queue", "set", "reports", "--retries", "6", "--backoff", "fixed"}).code == 0);
  CHECK(run_jobctl(db, dir, {"queue", "set", "reports"}).code == 2);  // nothing to set
  CHECK(run_jobctl(db, dir, {"queue", "set", "bad queue", "--retries", "1"}).code == 2);
  CHECK(run_jobctl(db, dir, {"queue", "set", "reports", "--retry-delay", "10m"}).code == 2);  // above the 5m cap
  auto id = test::trim(run_jobctl(db, dir, {"submit", "--queue", "reports", "--", "true"}).out);
  auto job = json::parse(run_jobctl(db, dir, {"get", id, "-o", "json"}).out);
  CHECK(job["retry"]["retries"] == 6);
  CHECK(job["retry"]["backoff"] == "fixed");
  auto ls = json::parse(run_jobctl(db, dir, {"queue", "ls", "-o", "json"}).out);
  REQUIRE(ls.size() == 1);
  CHECK(ls[0]["name"] == "reports");
  CHECK(ls[0]["pending"] == 1);
  CHECK(ls[0]["defaults"]["retries"] == 6);
  CHECK_FALSE(ls[0]["defaults"].contains("delivery"));
  auto table = run_jobctl(db, dir, {"queue", "ls", "-o", "table"});
  CHECK(table.out.find("backoff=fixed retries=6") != std::string::npos);
}

TEST_CASE("cli: a retry delay past the longest is said in terms of what was given, the other named as the default") {
  test::TempDir dir;
  test::TestDb db(dir);
  struct Case {
    std::vector<std::string> args;
    std::string stdin_text, error, hint;
  };
  // "--max-retry-delay 5m is shorter than --retry-delay 1h" named a flag
  // never given.
  for (const auto& c : std::vector<Case>{
           {{"submit", "--retry-delay", "1h", "--", "true"}, "",
            "--retry-delay 1h is longer than the default --max-retry-delay 5m", "raise --max-retry-delay to at least 1h"},
           {{"submit", "--max-retry-delay", "500ms", "--", "true"}, "",
            "--max-retry-delay 500ms is shorter than the default --retry-delay 1s", "raise --max-retry-delay to at least 1s"},
           {{"queue", "set", "reports", "--retry-delay", "10m"}, "",
            "--retry-delay 10m is longer than the default --max-retry-delay 5m", "raise --max-retry-delay to at least 10m"},
           {{"submit", "--file", "-"}, "{\"command\": \"true\", \"retry_delay\": \"10m\"}\n",
            "line 1: field 'retry_delay' 10m is longer than the default field 'max_retry_delay' 5m",
            "raise field 'max_retry_delay' to at least 10m"},
           // Both given: as before.
           {{"submit", "--retry-delay", "1h", "--max-retry-delay", "30m", "--", "true"}, "",
            "--max-retry-delay 30m is shorter than --retry-delay 1h", "raise --max-retry-delay or lower --retry-delay"},
       }) {
    CAPTURE(c.args);
    auto r = run_jobctl(db, dir, c.args, c.stdin_text);
    CHECK(r.code == 2);
    CHECK(r.err.find(c.error) != std::string::npos);
    CHECK(r.err.find("hint: " + c.hint) != std::string::npos);
  }
  CHECK(job_count(db, dir) == 0);
  // An update: the delay it does not give is the job's ("--max-retry-delay
  // 5m is shorter than --retry-delay 10m" named a flag the update lacked).
  const std::string job = test::submit(db, dir, {"--", "true"});
  for (const auto& c : std::vector<Case>{
           {{"update", job, "--retry-delay", "10m"}, "",
            "--retry-delay 10m is longer than the job's --max-retry-delay 5m", "raise --max-retry-delay to at least 10m too"},
           {{"update", job, "--max-retry-delay", "500ms"}, "",
            "--max-retry-delay 500ms is shorter than the job's --retry-delay 1s", "lower --retry-delay to at most 500ms too"},
           {{"update", job, "--retry-delay", "1h", "--max-retry-delay", "30m"}, "",
            "--max-retry-delay 30m is shorter than --retry-delay 1h", "raise --max-retry-delay or lower --retry-delay"},
       }) {
    CAPTURE(c.args);
    auto r = run_jobctl(db, dir, c.args);
    CHECK(r.code == 2);
    CHECK(r.err.find(c.error) != std::string::npos);
    CHECK(r.err.find("hint: " + c.hint) != std::string::npos);
  }
  CHECK(test::get(db, dir, job)["version"] == 1);
  REQUIRE(run_jobctl(db, dir, {"delete", job}).code == 0);  // ls lists it no more
  // A queue's longest delay holds for its jobs: --retry-delay 10m was
  // refused against the built-in 5m all the same (a reviewer).
  REQUIRE(run_jobctl(db, dir, {"queue", "set", "etl", "--max-retry-delay", "30m"}).code == 0);
  auto under_queue = run_jobctl(db, dir, {"submit", "--queue", "etl", "--retry-delay", "10m", "--", "true"});
  CHECK_MESSAGE(under_queue.code == 0, under_queue.err);
  CHECK(job_count(db, dir) == 1);
}

TEST_CASE("cli: --in and --at delay a job, and bad combinations are refused") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto at = test::trim(run_jobctl(db, dir, {"submit", "--at", "2031-05-01 12:00", "--tz", "America/New_York", "--",
                                            "true"}).out);
  auto j = json::parse(run_jobctl(db, dir, {"get", at, "-o", "json"}).out);
  CHECK(j["run"]["available_at"] == "2031-05-01T16:00:00.000Z");  // EDT, -4
  CHECK(run_jobctl(db, dir, {"submit", "--at", "2030-01-01T00:00:00Z", "--in", "5m", "--", "true"}).code == 2);
  CHECK(run_jobctl(db, dir, {"submit", "--tz", "Europe/Berlin", "--", "true"}).code == 2);
  auto gap = run_jobctl(db, dir, {"submit", "--at", "2030-03-31 02:30", "--tz", "Europe/Berlin", "--", "true"});
  CHECK(gap.code == 2);
  CHECK(gap.err.find("does not exist") != std::string::npos);
  auto batch = run_jobctl(db, dir, {"submit", "--file", "-"},
                          "{\"command\": [\"true\"], \"in\": \"1h\"}\n"
                          "{\"command\": [\"true\"], \"at\": \"2031-01-01 00:00\", \"tz\": \"UTC\"}\n");
  REQUIRE(batch.code == 0);
  auto ids = test::lines(batch.out);
  REQUIRE(ids.size() == 2);
  CHECK(json::parse(run_jobctl(db, dir, {"get", ids[1], "-o", "json"}).out)["run"]["available_at"] ==
        "2031-01-01T00:00:00.000Z");
  CHECK(job_count(db, dir) == 3);
}

TEST_CASE("cli: a unique prefix of 6 or more characters names a job, a run or a DAG run, and an ambiguous one is exit 2") {
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string a = test::submit(db, dir, {"--name", "first", "--", "true"});
  const std::string b = test::submit(db, dir, {"--name", "second", "--", "true"});
  const std::string run = test::get(db, dir, a)["run"]["id"];
  // Job and run ids begin with their time: the first 6 characters of two
  // made together are the same (they change every 4 minutes and a half).
  REQUIRE(a.substr(0, 6) == b.substr(0, 6));
  auto both = run_jobctl(db, dir, {"get", a.substr(0, 6)});
  CHECK(both.code == 2);
  CHECK(both.err.find("is ambiguous") != std::string::npos);
  CHECK(both.err.find(a) != std::string::npos);
  CHECK(both.err.find(b) != std::string::npos);
  CHECK(test::lines(both.err).size() == 2);  // the error and its hint

  // Enough of it to be unique, in either case: the job, or the run's job. A
  // job's first run, made in the same millisecond, has the job's id plus
  // one: a prefix of both names the job.
  std::string lower = a.substr(0, 20);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  CHECK(test::get(db, dir, lower)["name"] == "first");
  CHECK(test::get(db, dir, run.substr(0, 20))["name"] == "first");
  CHECK(test::get(db, dir, run.substr(0, 25))["run"]["id"] == run);
  auto cancelled = run_jobctl(db, dir, {"cancel", b.substr(0, 22)});
  CHECK(cancelled.code == 0);
  CHECK(test::get(db, dir, b)["status"] == "cancelled");

  // A DAG run by a prefix of its id.
  json dag{{"name", "pair"}, {"jobs", {{"x", {{"command", "true"}}}}}};
  const std::string dag_run = test::trim(run_jobctl(db, dir, {"dag", "submit", "-"}, dag.dump()).out);
  auto status = run_jobctl(db, dir, {"dag", "status", dag_run.substr(0, 20), "-o", "json"});
  CHECK(status.code == 0);
  CHECK(json::parse(status.out)["id"] == dag_run);

  // Tables show each id as far as it takes to name it, and that names it.
  auto table = test::lines(run_jobctl(db, dir, {"ls", "-o", "table"}).out);
  REQUIRE(table.size() == 3);
  for (size_t i = 1; i < table.size(); ++i) {
    const std::string shown = table[i].substr(0, table[i].find(' '));
    CAPTURE(shown);
    CHECK(shown.size() >= 6);
    const std::string full = test::get(db, dir, shown)["id"];
    CHECK(full.rfind(shown, 0) == 0);
  }
  // Past 200 rows, whole ids (each shortened one costs index reads).
  std::string batch;
  for (int i = 0; i < 200; ++i) batch += "{\"command\": \"true\"}\n";
  REQUIRE(run_jobctl(db, dir, {"submit", "--file", "-"}, batch).code == 0);
  auto long_table = test::lines(run_jobctl(db, dir, {"ls", "-o", "table", "--limit", "300"}).out);
  REQUIRE(long_table.size() == 203);
  CHECK(long_table[1].find(' ') == 26);
  auto dags = test::lines(run_jobctl(db, dir, {"dag", "ls", "-o", "table"}).out);
  REQUIRE(dags.size() == 2);
  const std::string dag_shown = dags[1].substr(0, dags[1].find(' '));
  CHECK(dag_shown.size() < 26);  // the only DAG run: 6 characters name it
  CHECK(json::parse(run_jobctl(db, dir, {"dag", "status", dag_shown, "-o", "json"}).out)["id"] == dag_run);
  // wait takes jobs too: the jobs submitted above begin with those 6 as
  // well, so it is ambiguous there (it waited for the DAG run, a false
  // green for a failed job); more of it names the DAG run, though its node
  // runs (made right after it) begin with it too.
  auto either = run_jobctl(db, dir, {"wait", dag_shown, "--timeout", "100ms"});
  CHECK(either.code == 2);
  CHECK(either.err.find("is ambiguous") != std::string::npos);
  auto waited = run_jobctl(db, dir, {"wait", dag_run.substr(0, 20), "--timeout", "100ms"});
  CHECK(waited.code == 124);
  CHECK(waited.err.find("DAG run " + dag_run) != std::string::npos);

  // Too short, not an id at all, or no id begins with it.
  CHECK(run_jobctl(db, dir, {"get", a.substr(0, 5)}).code == 2);
  CHECK(run_jobctl(db, dir, {"get", "nope!!"}).code == 2);
  auto none = run_jobctl(db, dir, {"get", "ZZZZZZZ"});
  CHECK(none.code == 3);
  CHECK(none.err.find("no job or run with id 'ZZZZZZZ'") != std::string::npos);
  CHECK(run_jobctl(db, dir, {"dag", "status", "ZZZZZZZ"}).err.find("no id begins with 'ZZZZZZZ'") != std::string::npos);
}

TEST_CASE("cli: on SQLite commands with no agent keep the write-ahead log short") {
  if (test::test_backend() != config::Backend::sqlite) return;  // SQLite's files only
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string path = db.dsn().substr(std::string("sqlite:").size());
  // The commands name the file itself, or a symbolic link to it (SQLite
  // keeps the WAL beside the file the link points to).
  std::string named = path;
  SUBCASE("by its path") {}
  SUBCASE("through a symbolic link") {
    named = dir.file("link.db");
    std::filesystem::create_symlink(path, named);
  }
  int runs = 0;
  auto jobctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {JOBCTL_BIN, "--db", named});
    test::Process p(args, {}, dir, fmt::format("wal-{}", ++runs));
    REQUIRE(p.wait() == 0);
  };
  // A batch: megabytes of WAL.
  std::string lines;
  for (int i = 0; i < 5000; ++i) lines += "{\"command\": [\"true\"]}\n";
  std::ofstream(dir.file("jobs.jsonl")) << lines;
  jobctl({"submit", "--file", dir.file("jobs.jsonl")});
  // Left in place, every command after it would read all of it back
  // (the first to open the file rebuilds the WAL's index), and past the
  // 1,000 pages where a commit checkpoints, none could start it over.
  for (int i = 0; i < 3; ++i) jobctl({"submit", "--", "true"});
  CHECK(std::filesystem::file_size(path + "-wal") < 1024 * 1024);
  CHECK(job_count(db, dir) == 5003);
}

TEST_CASE("cli: on SQLite a command leaves the write-ahead log in place for the next, which reads what it wrote") {
  if (test::test_backend() != config::Backend::sqlite) return;  // SQLite's files only
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string path = db.dsn().substr(std::string("sqlite:").size());
  const std::string id = test::submit(db, dir, {"--", "true"});
  // Neither checkpointed nor deleted on closing: the next command does not
  // create it again (its creation and deletion cost four disk flushes).
  REQUIRE(std::filesystem::exists(path + "-wal"));
  CHECK(std::filesystem::file_size(path + "-wal") > 0);
  CHECK(std::filesystem::exists(path + "-shm"));
  CHECK(run_jobctl(db, dir, {"get", id}).code == 0);
  CHECK(job_count(db, dir) == 1);
}
