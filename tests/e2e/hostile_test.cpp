// Hostile input (issue 17): what a careless or malicious user types, run
// through the real jobctl against a store with content. Every case must end
// with the code jobctl(1), EXIT STATUS, documents (2 for a bad value, 3 for
// an id that is well-formed but unknown, 4 for the wrong state, 5 for a
// store problem, 6 for a stale --if-version), never 70; one error line,
// “jobctl: error: …”, and at most a “hint: …” line after it; nothing on
// standard output; and nothing written: the store is dumped after every
// case and compared with the dump before it.
//
// The cases come from tables: each flag of a kind (durations, times, words,
// ids, JSON, …) crossed with values of that kind that must be refused. A
// list too long to cross with every flag gives each flag one fixed value
// and one of the others in turn, so that every value is tried somewhere
// and the test stays within a minute.
//
// An empty value is refused by every option that takes a value (jobctl(1),
// GLOBAL OPTIONS): each table gives it to each of its flags, and empties()
// to the free-text ones.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/store/sql.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using nlohmann::json;

namespace {

struct Case {
  std::vector<std::string> args;  // after `jobctl --db DSN`
  int code = 2;                   // the exit status jobctl(1) documents
  std::string mentions;           // the message contains this ("" for anything)
  std::string stdin_text;
  std::vector<std::string> env;   // NAME=VALUE added to jobctl's environment
  std::optional<std::string> db;  // a DSN given instead of the test's store

  Case& with_stdin(std::string text) {
    stdin_text = std::move(text);
    return *this;
  }
  Case& with_env(std::vector<std::string> vars) {
    env = std::move(vars);
    return *this;
  }
  Case& with_db(std::string dsn) {
    db = std::move(dsn);
    return *this;
  }
};

using Cases = std::vector<Case>;

Case& add(Cases& cases, std::vector<std::string> args, int code = 2, std::string mentions = "") {
  cases.push_back(Case{std::move(args), code, std::move(mentions), "", {}, std::nullopt});
  return cases.back();
}

// What an option given "" says.
const std::string kEmpty = "the value is empty";

// Where a table's value goes in a command line.
const std::string kSlot = "{}";

std::vector<std::string> fill(std::vector<std::string> args, const std::string& value) {
  for (auto& a : args)
    if (a == kSlot) a = value;
  return args;
}

// The i-th value of a list, going round it.
const std::string& in_turn(const std::vector<std::string>& values, size_t i) { return values[i % values.size()]; }

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// What the cases act on: jobs in every state a command may refuse, and
// files for @FILE, --file and dag submit.
struct Fixture {
  std::string plain, plain_run;  // a job with a pending run
  std::string cron;              // a schedule
  std::string gone;              // a deleted job (its run cancelled)
  std::string dag, dag_run, node;  // a DAG, its running DAG run, and a node's job
  std::string dag_file;            // a valid DAG document
  std::string tmp;                 // the test's directory
  std::string a_dir, no_file, empty, latin1, deeper, huge_json, huge_text, big_checkpoint, big_dag;
};

const std::string kMissing = "01ARZ3NDEKTSV4RRFFQ69G5FAV";  // well-formed, in no store
const std::vector<std::string> kTrue{"--", "true"};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The environment of a job's attempt, for jobctl progress: a run that is
// pending, not running.
std::vector<std::string> in_job(const Fixture& f) { return {"JOB_RUN_ID=" + f.plain_run, "JOB_FENCE_TOKEN=1"}; }

void durations(const Fixture& f, Cases& cases) {
  const std::vector<std::vector<std::string>> flags{
      {"submit", "--timeout", kSlot, "--", "true"},
      {"submit", "--in", kSlot, "--", "true"},
      {"submit", "--retry-delay", kSlot, "--", "true"},
      {"submit", "--max-retry-delay", kSlot, "--", "true"},
      {"submit", "--retry-for", kSlot, "--", "true"},
      {"submit", "--cron", "@daily", "--catchup-window", kSlot, "--", "true"},
      {"submit", "--cron", "@daily", "--jitter", kSlot, "--", "true"},
      {"submit", "--on-each", "*", "--stagger", kSlot, "--", "true"},
      {"update", f.plain, "--timeout", kSlot},
      {"update", f.plain, "--retry-delay", kSlot},
      {"update", f.plain, "--max-retry-delay", kSlot},
      {"update", f.plain, "--retry-for", kSlot},
      {"update", f.cron, "--catchup-window", kSlot},
      {"update", f.cron, "--jitter", kSlot},
      {"queue", "set", "q", "--retry-delay", kSlot},
      {"queue", "set", "q", "--max-retry-delay", kSlot},
      {"queue", "set", "q", "--retry-for", kSlot},
      {"wait", f.gone, "--timeout", kSlot},  // a finished job: a timeout taken by mistake cannot hang the test
      {"ls", "--stuck", "--stuck-after", kSlot},
      {"stats", "--since", kSlot},
      {"check", "--max-lag", kSlot},
      {"check", "--max-oldest", kSlot},
      {"check", "--max-dlq", "0", "--since", kSlot},
      {"top", "--once", "--interval", kSlot},
      {"top", "--once", "--since", kSlot},
      {"gc", "--older-than", kSlot},
      {"dlq", "purge", "--older-than", kSlot},
  };
  // A bare number everywhere; then one of the others in turn.
  const std::vector<std::string> others{"36501d", "-1s", "5parsecs", "1h30", "307445734562m",
                                        "99999999999999999999s", " 1s", "1e3s", "1.5h", "h",
                                        "1h 30m", "PT1H", "-0s", "1s\t"};
  for (size_t i = 0; i < flags.size(); ++i) {
    add(cases, fill(flags[i], "10"), 2, "'10'");
    add(cases, fill(flags[i], in_turn(others, i)));
    add(cases, fill(flags[i], ""), 2, kEmpty);
  }
  // Zero where a flag needs more, and @every's interval.
  add(cases, {"stats", "--since", "0s"});
  add(cases, {"check", "--max-dlq", "0", "--since", "0s"});
  add(cases, {"top", "--once", "--since", "0s"});
  add(cases, {"gc", "--older-than", "0s"});
  add(cases, {"dlq", "purge", "--older-than", "0s"}, 2, "--older-than must be longer than 0s");  // purged every dead run
  add(cases, {"top", "--once", "--interval", "99ms"});
  add(cases, {"submit", "--cron", "@daily", "--catchup-window", "0s", "--", "true"});
  add(cases, {"cron", "next", "@every 0s"});
  add(cases, {"cron", "next", "@every 10"});
  add(cases, {"cron", "next", "@every 36501d"});
}

void times(const Fixture& f, Cases& cases) {
  const std::vector<std::vector<std::string>> flags{
      {"submit", "--at", kSlot, "--", "true"},
      {"cron", "next", "@daily", "--from", kSlot},
      {"schedule", "backfill", f.cron, "--from", kSlot, "--to", "2026-01-02T00:00:00Z"},
      {"schedule", "backfill", f.cron, "--from", "2026-01-01T00:00:00Z", "--to", kSlot},
      {"submit", "--cron", "@daily", "--starts-at", kSlot, "--", "true"},
      {"submit", "--cron", "@daily", "--ends-at", kSlot, "--", "true"},
      {"dlq", "ls", "--since", kSlot},
      {"dlq", "ls", "--until", kSlot},
      {"dlq", "replay", "--all", "--since", kSlot},
      {"dlq", "replay", "--all", "--until", kSlot},
  };
  // Dates that do not exist are never moved into the next month.
  const std::vector<std::string> others{"yesterday", "2100-02-29T00:00:00Z",     "2027-04-31",
                                        "2027-13-01T00:00:00Z",     "2027-01-01T24:61:00Z",
                                        "2027-01-01T00:00:00+99:99", "2027-01-01T00:00:60Z",
                                        "99999-01-01T00:00:00Z",    "2027-01-01T00:00:00.5.5Z"};
  for (size_t i = 0; i < flags.size(); ++i) {
    add(cases, fill(flags[i], "2027-02-30 10:00"), 2, "2027-02 has 28 days");
    add(cases, fill(flags[i], in_turn(others, i)));
    add(cases, fill(flags[i], ""), 2, kEmpty);
  }
  add(cases, {"submit", "--at", "2027-01-01T00:00:00+99:99", "--", "true"});  // an offset no zone has
  add(cases, {"submit", "--at", "2026-03-08 02:30", "--tz", "America/New_York", "--", "true"});  // skipped by DST
  add(cases, {"schedule", "backfill", f.cron, "--from", "2026-01-02T00:00:00Z", "--to", "2026-01-01T00:00:00Z"});
  // update's "" removes a bound; a bad time is refused as submit's is.
  add(cases, {"update", f.cron, "--starts-at", "2027-02-30 10:00"}, 2, "2027-02 has 28 days");
  add(cases, {"update", f.cron, "--ends-at", "yesterday"});
  add(cases, {"update", f.cron, "--ends-at", "2026-03-08 02:30", "--tz", "America/New_York"});  // skipped by DST
  add(cases, {"schedule", "backfill", f.cron, "--from", "1990-01-01T00:00:00Z", "--to", "2026-01-01T00:00:00Z"}, 2,
      "10000");
  add(cases, {"schedule", "backfill", f.cron, "--from", "2025-01-01T00:00:00Z", "--to", "2035-01-01T00:00:00Z"}, 2,
      "--to 2035-01-01T00:00:00.000Z is in the future");
}

// Flags that take one word of a list.
void words(const Fixture& f, Cases& cases) {
  const std::vector<std::vector<std::string>> flags{
      {"submit", "--priority", kSlot, "--", "true"},
      {"submit", "--backoff", kSlot, "--", "true"},
      {"submit", "--delivery", kSlot, "--", "true"},
      {"submit", "--cron", "@daily", "--misfire", kSlot, "--", "true"},
      {"submit", "--cron", "@daily", "--overlap", kSlot, "--", "true"},
      {"submit", "--notify", "http://127.0.0.1/n", "--notify-on", kSlot, "--", "true"},
      {"update", f.plain, "--priority", kSlot},
      {"update", f.plain, "--backoff", kSlot},
      {"update", f.plain, "--delivery", kSlot},
      {"update", f.cron, "--misfire", kSlot},
      {"update", f.cron, "--overlap", kSlot},
      {"queue", "set", "q", "--backoff", kSlot},
      {"queue", "set", "q", "--delivery", kSlot},
      {"ls", "--status", kSlot},
      {"logs", f.plain, "--stream", kSlot},
      {"dag", "submit", f.dag_file, "--on-failure", kSlot},
      {"ls", "-o", kSlot},
  };
  const std::vector<std::string> others{"high ", "BOGUS", "normal,low", "-1"};
  for (size_t i = 0; i < flags.size(); ++i) {
    add(cases, fill(flags[i], "bogus"), 2, "bogus");
    add(cases, fill(flags[i], in_turn(others, i)));
    add(cases, fill(flags[i], ""), 2, kEmpty);
  }
}

void ids(const Fixture& f, Cases& cases) {
  const std::vector<std::vector<std::string>> commands{
      {"get", kSlot},
      {"runs", kSlot},
      {"logs", kSlot},
      {"cancel", kSlot},
      {"wait", kSlot},
      {"retry", kSlot},
      {"pause", kSlot},
      {"resume", kSlot},
      {"schedule", "runs", kSlot},
      {"schedule", "trigger", kSlot},
      {"schedule", "backfill", kSlot, "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T01:00:00Z"},
      {"update", kSlot, "--name", "x"},
      {"delete", kSlot},
      {"restore", kSlot},
      {"history", kSlot},
      {"dlq", "show", kSlot},
      {"dlq", "replay", kSlot},
      {"dag", "status", kSlot},
      {"dag", "cancel", kSlot},
      {"dag", "pause", kSlot},
      {"dag", "resume", kSlot},
      {"dag", "retry", kSlot},
  };
  const std::vector<std::string> others{
      "",
      kMissing.substr(0, 5),  // a prefix is at least 6 characters
      kMissing + "0",
      "01ARZ3NDEKTSV4RRFFQ69G5FAI",  // I is not in Crockford's base 32
      "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",  // past the largest ULID
      "../../../etc/passwd",
      " " + kMissing,
  };
  for (size_t i = 0; i < commands.size(); ++i) {
    add(cases, fill(commands[i], "not-an-id"), 2, "not-an-id");
    add(cases, fill(commands[i], in_turn(others, i)));
    add(cases, fill(commands[i], i % 4 ? kMissing : lower(kMissing)), 3);
    if (i % 4 == 1) add(cases, fill(commands[i], kMissing.substr(0, 6 + i % 19)), 3);  // a prefix no id begins with
  }
  add(cases, {"dag", "graph", kMissing}, 3);
  add(cases, {"dlq", "replay", "not-an-id", f.plain});
  add(cases, {"dlq", "replay", kMissing, f.plain}, 3);
}

// Commands refused for the state of what they name (4), and a stale
// --if-version (6).
void states(const Fixture& f, Cases& cases) {
  add(cases, {"logs", f.plain}, 4);
  add(cases, {"logs", f.plain, "--attempt", "1"}, 4);
  add(cases, {"retry", f.plain}, 4);
  add(cases, {"restore", f.plain}, 4);
  add(cases, {"delete", f.gone}, 4);
  add(cases, {"update", f.gone, "--name", "x"}, 4);
  add(cases, {"pause", f.gone}, 4);
  add(cases, {"resume", f.gone}, 4);
  add(cases, {"retry", f.gone}, 4);
  add(cases, {"schedule", "runs", f.plain}, 4);
  add(cases, {"schedule", "trigger", f.plain}, 4);
  add(cases, {"schedule", "backfill", f.plain, "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T01:00:00Z"}, 4);
  add(cases, {"update", f.plain, "--cron", "@daily"}, 4);
  add(cases, {"update", f.plain, "--misfire", "skip"}, 4);
  add(cases, {"update", f.plain, "--jitter", "1s"}, 4);
  add(cases, {"dlq", "show", f.plain}, 4);
  add(cases, {"dlq", "replay", f.plain}, 4);
  add(cases, {"retry", f.node}, 4);
  add(cases, {"delete", f.node}, 4);
  add(cases, {"dag", "retry", f.dag_run}, 4);
  add(cases, {"dag", "retry", f.dag}, 4);
  add(cases, {"submit", "--on-each", "*", "--", "true"}, 4, "no live agent");
  add(cases, {"progress", "0.5"}, 4).with_env(in_job(f));
  add(cases, {"update", f.plain, "--if-version", "7", "--name", "x"}, 6);
}

void progress(const Fixture& f, Cases& cases) {
  add(cases, {"progress", "0.5"});  // outside a job
  add(cases, {"progress", "0.5"}, 3).with_env({"JOB_RUN_ID=" + kMissing, "JOB_FENCE_TOKEN=1"});
  add(cases, {"progress", "0.5"}).with_env({"JOB_RUN_ID=" + f.plain_run, "JOB_FENCE_TOKEN=x"});
  add(cases, {"progress", "0.5"}, 2, "is not a run id").with_env({"JOB_RUN_ID=not-a-run", "JOB_FENCE_TOKEN=1"});
  add(cases, {"progress", "0.5"}).with_env({"JOB_RUN_ID=" + f.plain_run, "JOB_FENCE_TOKEN=99999999999999999999999"});
  for (const char* fraction : {"1.5", "-0.1", "101%", "nan", "", "1e400", "0x0.8", "0x10%", " 0.5"})
    add(cases, {"progress", fraction}).with_env(in_job(f));
}

// Every JSON input: --payload (and @FILE), a batch line, a DAG document
// (dag submit, dag graph) and a checkpoint.
void bad_json(const Fixture& f, Cases& cases) {
  const std::vector<std::string> texts{
      " ", "{", "{not json", "[1,]", "nul", "\"unterminated", "1e400", std::string(65, '[') + std::string(65, ']'),
      "{\"a\": 1}{", "NaN", "'single'", "\"\\ud800\"", "{\"a\": 1, }", "\"tab\there\"", "0x10",
      "{\"a\": 1, \"a\": 2}",
  };
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string& j = texts[i];
    add(cases, {"submit", "--payload", j, "--", "true"}, 2, "--payload");
    if (i % 2 == 0) add(cases, {"dag", "submit", "-"}).with_stdin(j);
    if (i % 2 == 1)  // (not the blank line, which a batch skips)
      add(cases, {"submit", "--file", "-"}, 2, "line 2").with_stdin("{\"command\": \"true\"}\n" + j + "\n");
    if (i % 3 == 0) {
      const std::string file = f.tmp + "/bad-" + std::to_string(i) + ".json";
      std::ofstream(file) << j;
      add(cases, {"submit", "--payload", "@" + file, "--", "true"}, 2, "--payload");
      add(cases, {"progress", "0.5", "--checkpoint", j}).with_env(in_job(f));
      add(cases, {"dag", "graph", "-"}).with_stdin(j);
    }
  }
  add(cases, {"submit", "--payload", "@" + f.deeper, "--", "true"}, 2, "64 levels");
  add(cases, {"submit", "--file", f.deeper});
  add(cases, {"dag", "submit", f.deeper});
  add(cases, {"progress", "0.5", "--checkpoint", "@" + f.deeper}).with_env(in_job(f));
}

// A batch line that is JSON but not a valid job; the line before it is, and
// is not written either.
void batch_lines(Cases& cases) {
  const std::vector<std::string> lines{
      "[]",
      "\"true\"",
      "5",
      "null",
      "{}",
      R"({"command": 5})",
      R"({"command": []})",
      R"({"command": [1]})",
      R"({"command": "true", "bogus": 1})",
      R"({"command": "true", "retries": 1, "retries": 5})",
      R"({"command": "true", "env": {"A": "1", "A": "2"}})",
      R"({"command": "true", "retries": 1e400})",
      R"({"command": "true", "retries": -1})",
      R"({"command": "true", "retries": 1.5})",
      R"({"command": "true", "retries": "3"})",
      R"({"command": "true", "priority": "urgent"})",
      R"({"command": "true", "timeout": "10"})",
      R"({"command": "true", "cwd": "relative/dir"})",
      R"({"command": "true", "at": "2027-02-30 10:00"})",
      R"({"command": "true", "cron": "61 * * * *"})",
      R"({"command": "true", "env": {"A": 1}})",
      R"({"command": "true", "env": ["A=1"]})",
      R"({"command": "true", "on_each": "*", "on": "a=b"})",
      R"({"command": "true", "stagger": "1s"})",
      R"({"command": "true", "misfire": "skip"})",
      R"({"command": "true", "at": "2027-01-01T00:00:00Z", "in": "1h"})",
      R"({"command": "true", "webhook": "http://127.0.0.1/"})",
      R"({"webhook": "ftp://127.0.0.1/"})",
      R"({"webhook": {"url": "http://127.0.0.1/", "bogus": 1}})",
      R"({"webhook": "http://127.0.0.1/", "payload": 1})",
      R"({"command": "true", "max_concurrent": 0})",
      R"({"command": "true", "queue": ""})",
      R"({"command": "true", "payload": )" + std::string(64, '[') + std::string(64, ']') + "}",
      // A NUL byte, which no text column keeps whole (PostgreSQL cut a
      // name short at it) and no process can take as an argument.
      R"({"command": "true", "name": "a\u0000b"})",
      R"({"command": "true", "cwd": "/tmp\u0000x"})",
      R"({"command": "true", "idempotency_key": "k\u0000"})",
      R"({"command": ["echo", "a\u0000b"]})",
  };
  for (const auto& line : lines)
    add(cases, {"submit", "--file", "-"}, 2, "line 2").with_stdin("{\"command\": \"true\"}\n" + line + "\n");
  // A NUL in a value the message quotes: shown as \x00, the message whole
  // (what() is a C string, and the quote and all after it were cut off).
  const std::vector<std::pair<std::string, std::string>> quoted{
      {R"("queue": "a\u0000b")", "invalid queue name 'a\\x00b'"},
      {R"("tenant": "a\u0000b")", "invalid tenant 'a\\x00b'"},
      {R"("on": "a\u0000b")", "invalid label 'a\\x00b' in field 'on'"},
      {R"("user": "a\u0000b")", "invalid user name 'a\\x00b'"},
      {R"("cron": "@daily", "tz": "UTC\u0000x")", "unknown time zone 'UTC\\x00x'"},
      {R"("cron": "6\u00001 * * * *")", "cron expression '6\\x001 * * * *': minute field '6\\x001'"},
      {R"("notify": "http://a\u0000b")", "URL 'http://a\\x00b': it must be"},
      {R"("webhook": "http://a\u0000b/")", "URL 'http://a\\x00b/': it holds"},
      {R"("webhook": {"url": "http://127.0.0.1/", "method": "P\u0000T"})", "'webhook.method' 'P\\x00T'"},
      {R"("webhook": {"url": "http://127.0.0.1/", "sign_secret": "a\u0000b"})", "'webhook.sign_secret' 'a\\x00b'"},
  };
  for (const auto& [field, message] : quoted) {
    const bool webhook = field.find("\"webhook\"") != std::string::npos;
    add(cases, {"submit", "--file", "-"}, 2, message)
        .with_stdin("{" + std::string(webhook ? "" : R"("command": ["echo", "ab"], )") + field + "}\n");
  }
}

// DAG documents that are JSON but not a valid DAG.
void dag_documents(const Fixture& f, Cases& cases) {
  const std::string a = R"("a": {"command": "true"})";
  const std::vector<std::string> docs{
      "{}",
      "[]",
      R"({"name": "d"})",
      R"({"jobs": {)" + a + "}}",
      R"({"name": "", "jobs": {)" + a + "}}",
      R"({"name": 5, "jobs": {)" + a + "}}",
      R"({"name": "d", "jobs": {}})",
      R"({"name": "d", "jobs": []})",
      R"({"name": "d", "jobs": {"a": {}}})",
      R"({"name": "d", "jobs": {"a": {"command": "true", "depends_on": ["a"]}}})",
      R"({"name": "d", "jobs": {"a": {"command": "true", "depends_on": ["b"]}}})",
      R"({"name": "d", "jobs": {"a": {"command": "true", "depends_on": "b"}}})",
      R"({"name": "d", "jobs": {"a": {"command": "true", "depends_on": ["b"]},
                                "b": {"command": "true", "depends_on": ["a"]}}})",
      R"({"name": "d", "jobs": {"a b": {"command": "true"}}})",
      R"({"name": "d", "jobs": {")" + std::string(65, 'n') + R"(": {"command": "true"}}})",
      R"({"name": "d", "jobs": {)" + a + ", " + a + "}}",
      R"({"name": "d", "jobs": {"a": {"command": "true", "cron": "@daily"}}})",
      R"({"name": "d", "jobs": {"a": {"command": "true", "idempotency_key": "k"}}})",
      R"({"name": "d", "jobs": {)" + a + R"(}, "extra": 1})",
      R"({"name": "d", "name": "e", "jobs": {)" + a + "}}",
      R"({"name": "d", "jobs": {"a": {"command": "true", "command": "false"}}})",
  };
  for (size_t i = 0; i < docs.size(); ++i) {
    const std::string file = f.tmp + "/dag-" + std::to_string(i) + ".json";
    std::ofstream(file) << docs[i];
    add(cases, {"dag", "submit", file});
    if (i % 3 == 0) add(cases, {"dag", "graph", "-"}).with_stdin(docs[i]);
  }
  add(cases, {"dag", "submit", f.big_dag}, 2, "10001");
}

// Bad stores: --db and the environment.
void stores(const Fixture& f, Cases& cases) {
  const std::vector<std::pair<std::string, int>> dsns{
      {"", 2},
      {"mysql://h/db", 2},
      {"http://127.0.0.1/", 2},
      {"file:///tmp/x.db", 2},
      {"sqlite:", 2},
      {"postgres://u:hunter2@127.0.0.1:notaport/db", 2},
      {"postgres://[::1/db", 2},
      {"host=127.0.0.1 port=abc", 2},
      {"bogus_keyword=1", 2},
      {"host=127.0.0.1 schema=Bad-Name", 2},
      {"postgres://u@127.0.0.1/db?schema=a;drop", 2},
      {"host=127.0.0.1 schema=" + std::string(64, 's'), 2},
      {"host=" + std::string(5000, 'h'), 2},  // past 4096 bytes (30,000 crashed jobctl)
      {"postgres://u:****@127.0.0.1:x/db", 2},  // a password of stars hung jobctl
      {"postgres://u:hunter2@127.0.0.1:1/none", 5},  // nothing listens on port 1
      {"sqlite:" + f.tmp + "/typo/jobs.db", 5},
      {f.tmp + "/typo.db", 5},
      {"sqlite:" + f.a_dir, 2},  // a directory is no SQLite file: the path is the mistake
      {"sqlite:" + f.latin1, 5},  // a file that is not a database
  };
  for (size_t i = 0; i < dsns.size(); ++i) {
    const auto& [dsn, code] = dsns[i];
    add(cases, {"ls"}, code).with_db(dsn);
    if (i % 6 == 1) add(cases, {"submit", "--", "true"}, code).with_db(dsn);
  }
  for (const char* timeout : {"bogus", "0s", "2h"})
    add(cases, {"ls"}, 2, "JOBCTL_STORE_TIMEOUT").with_env({std::string("JOBCTL_STORE_TIMEOUT=") + timeout});
  add(cases, {"submit", "--name", "x", "--", "true"}, 2, "JOBCTL_STORE_TIMEOUT")
      .with_env({"JOBCTL_STORE_TIMEOUT=bogus"});
  add(cases, {"pause", f.plain}, 2, "JOBCTL_ACTOR").with_env({"JOBCTL_ACTOR=a\xFF" "b"});
}

// Text that is not UTF-8, in every text a command takes.
void not_utf8(const Fixture& f, Cases& cases) {
  const std::string x = "a\xFF" "b";
  const std::string hook = "http://127.0.0.1/";
  const std::vector<std::vector<std::string>> commands{
      {"submit", "--name", x, "--", "true"},
      {"submit", "--queue", x, "--", "true"},
      {"submit", "--env", "A=" + x, "--", "true"},
      {"submit", "--env", x + "=1", "--", "true"},
      {"submit", "--cwd", "/" + x, "--", "true"},
      {"submit", "--on", "k=" + x, "--", "true"},
      {"submit", "--concurrency-key", x, "--", "true"},
      {"submit", "--tenant", x, "--", "true"},
      {"submit", "--on-each", "k=" + x, "--", "true"},
      {"submit", "--webhook", hook + x},
      {"submit", "--webhook", hook, "--method", x},
      {"submit", "--webhook", hook, "--header", "X-A: " + x},
      {"submit", "--webhook", hook, "--data", x},
      {"submit", "--webhook", hook, "--sign-secret", x},
      {"submit", "--notify", hook + x, "--", "true"},
      {"submit", "--payload", "\"" + x + "\"", "--", "true"},
      {"submit", "--idempotency-key", x, "--", "true"},
      {"submit", "--at", x, "--", "true"},
      {"submit", "--cron", "@daily", "--tz", x, "--", "true"},
      {"submit", "--cron", x, "--", "true"},
      {"submit", "--", x},
      {"submit", "--", "echo", x},
      {"update", f.plain, "--name", x},
      {"update", f.plain, "--queue", x},
      {"update", f.plain, "--env", "A=" + x},
      {"update", f.plain, "--unset-env", x},
      {"update", f.plain, "--tenant", x},
      {"update", f.plain, "--on", "k=" + x},
      {"update", f.plain, "--concurrency-key", x},
      {"update", f.plain, "--", "echo", x},
      {"update", f.cron, "--cron", x},
      {"update", f.cron, "--tz", x},
      {"queue", "set", x, "--max-concurrent", "1"},
      {"queue", "pause", x},
      {"queue", "resume", x},
      {"ls", "--queue", x},
      {"dlq", "ls", "--queue", x},
      {"stats", "--queue", x},
      {"check", "--max-dlq", "0", "--queue", x},
      {"cron", "next", x},
      {"cron", "next", "@daily", "--key", x},
      {"pause", f.plain, "--actor", x},
      {"get", x},
      {"dag", "submit", f.tmp + "/" + x},
      {"submit", "--file", f.tmp + "/" + x},
  };
  for (const auto& args : commands) add(cases, args, 2, "UTF-8");
  add(cases, {"progress", "0.5", "--message", x}, 2, "UTF-8").with_env(in_job(f));
  add(cases, {"submit", "--file", "-"}, 2, "UTF-8").with_stdin("{\"command\": \"true\", \"name\": \"" + x + "\"}\n");
  // Overlong, a surrogate, past U+10FFFF.
  for (const char* bytes : {"\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80"})
    add(cases, {"submit", "--name", bytes, "--", "true"}, 2, "UTF-8");
  // Files read with @FILE, --file and dag submit.
  add(cases, {"submit", "--webhook", hook, "--data", "@" + f.latin1}, 2, "UTF-8");
  add(cases, {"submit", "--payload", "@" + f.latin1, "--", "true"}, 2, "UTF-8");
  add(cases, {"progress", "0.5", "--checkpoint", "@" + f.latin1}, 2, "UTF-8").with_env(in_job(f));
  add(cases, {"submit", "--file", f.latin1});
  add(cases, {"dag", "submit", f.latin1});
}

// Sizes above the limits of jobctl(1), DESCRIPTION.
void sizes(const Fixture& f, Cases& cases) {
  const std::string big(64 * 1024 + 1, 'x');
  const std::string hook = "http://127.0.0.1/";
  add(cases, {"submit", "--name", std::string(1025, 'n'), "--", "true"}, 2, "the name is 1025 bytes");
  add(cases, {"submit", "--", big}, 2, "the command is");
  add(cases, {"submit", "--", "echo", std::string(40000, 'x'), std::string(30000, 'y')}, 2, "the command is");
  add(cases, {"submit", "--env", "A=" + std::string(40000, 'x'), "--env", "B=" + std::string(30000, 'y'), "--", "true"},
      2, "--env");
  add(cases, {"submit", "--cwd", "/" + std::string(4096, 'd'), "--", "true"}, 2, "--cwd");
  add(cases, {"submit", "--payload", "@" + f.huge_json, "--", "true"}, 2, "the payload is");
  add(cases, {"submit", "--webhook", hook + std::string(8192, 'u')}, 2, "--webhook URL");
  add(cases, {"submit", "--notify", hook + std::string(8192, 'u'), "--", "true"});
  add(cases, {"submit", "--webhook", hook, "--header", "X-A: " + std::string(40000, 'h'), "--header",
              "X-B: " + std::string(30000, 'h')});
  add(cases, {"submit", "--webhook", hook, "--data", "@" + f.huge_text}, 2, "--data");
  // A file without end is read only up to the size jobctl(1), DESCRIPTION,
  // gives it: before, jobctl read /dev/zero until memory ran out.
  add(cases, {"submit", "--payload", "@/dev/zero", "--", "true"}, 2, "more than 16 MiB");
  add(cases, {"submit", "--webhook", hook, "--data", "@/dev/zero"}, 2, "more than 16 MiB");
  add(cases, {"progress", "0.5", "--checkpoint", "@/dev/zero"}, 2, "more than 16 MiB").with_env(in_job(f));
  add(cases, {"submit", "--file", "/dev/zero"}, 2, "more than 256 MiB");
  add(cases, {"dag", "submit", "/dev/zero"}, 2, "more than 64 MiB");
  add(cases, {"dag", "graph", "/dev/zero"}, 2, "more than 64 MiB");
  add(cases, {"crontab", "import", "/dev/zero"}, 2, "more than 64 MiB");
  add(cases, {"submit", "--queue", std::string(65, 'q'), "--", "true"});
  add(cases, {"submit", "--tenant", std::string(65, 't'), "--", "true"});
  add(cases, {"submit", "--concurrency-key", std::string(201, 'k'), "--", "true"});
  add(cases, {"submit", "--idempotency-key", std::string(256, 'k'), "--", "true"});
  std::vector<std::string> eleven{"submit"};
  for (int i = 0; i < 11; ++i) eleven = eleven + std::vector<std::string>{"--notify", hook + std::to_string(i)};
  add(cases, eleven + kTrue);
  add(cases, {"update", f.plain, "--name", std::string(1025, 'n')}, 2, "the name is 1025 bytes");
  add(cases, {"update", f.plain, "--", big}, 2, "the command is");
  add(cases, {"update", f.plain, "--env", "A=" + big}, 2, "--env");
  add(cases, {"update", f.plain, "--queue", std::string(65, 'q')});
  add(cases, {"update", f.plain, "--tenant", std::string(65, 't')});
  add(cases, {"update", f.plain, "--concurrency-key", std::string(201, 'k')});
  add(cases, {"queue", "set", std::string(65, 'q'), "--max-concurrent", "1"});
  add(cases, {"progress", "0.5", "--checkpoint", "@" + f.big_checkpoint}, 2, "64 KiB").with_env(in_job(f));
  add(cases, {"submit", "--file", "-"}, 2, "line 2")
      .with_stdin("{\"command\": \"true\"}\n{\"command\": \"true\", \"name\": \"" + std::string(2000, 'n') + "\"}\n");
  add(cases, {"dag", "submit", "-"}, 2, "the command is")
      .with_stdin(R"({"name": "d", "jobs": {"a": {"command": ")" + big + "\"}}}");
  add(cases, {"dag", "submit", "-"})
      .with_stdin(R"({"name": "d", "jobs": {"a": {"command": "true", "name": ")" + std::string(1025, 'n') + "\"}}}");
}

// Numbers: integer flags out of their range or not integers, rates, exit
// code lists.
void numbers(const Fixture& f, Cases& cases) {
  const std::vector<std::vector<std::string>> flags{
      {"ls", "--limit", kSlot},
      {"dag", "ls", "--limit", kSlot},
      {"history", f.plain, "--limit", kSlot},
      {"schedule", "runs", f.cron, "--limit", kSlot},
      {"dlq", "ls", "--limit", kSlot},
      {"gc", "--older-than", "1d", "--batch", kSlot},
      {"cron", "next", "@daily", "-n", kSlot},
      {"submit", "--retries", kSlot, "--", "true"},
      {"submit", "--max-deliveries", kSlot, "--", "true"},
      {"submit", "--max-concurrent", kSlot, "--", "true"},
      {"submit", "--cron", "@daily", "--max-runs", kSlot, "--", "true"},
      {"update", f.cron, "--max-runs", kSlot},
      {"update", f.plain, "--retries", kSlot},
      {"update", f.plain, "--max-concurrent", kSlot},
      {"update", f.plain, "--if-version", kSlot, "--name", "x"},
      {"queue", "set", "q", "--max-concurrent", kSlot},
      {"queue", "set", "q", "--tenant-max-concurrent", kSlot},
      {"queue", "set", "q", "--max-deliveries", kSlot},
      {"check", "--max-dlq", kSlot},
      {"check", "--min-workers", kSlot},
      {"logs", f.plain, "--attempt", kSlot},
  };
  const std::vector<std::string> others{"99999999999999999999", "ten", "1.5", "", "1e3", "--"};
  // Decimal digits only: CLI11 alone reads 010 as 8 and 0x10 as 16.
  const std::vector<std::string> not_decimal{"010", "0x10", "+5", "1_0", "0b1"};
  // Each says its range in one short line (CLI11's own checks spelled a
  // double's range in 300 digits, or "Could not convert" past an int).
  const std::string range = "must be a whole number from ";
  for (size_t i = 0; i < flags.size(); ++i) {
    add(cases, fill(flags[i], "-1"), 2, range);
    add(cases, fill(flags[i], in_turn(others, i)));
    add(cases, fill(flags[i], in_turn(not_decimal, i)), 2, "decimal");
  }
  add(cases, {"check", "--max-dlq", "99999999999999999999"}, 2, range);
  // Just past each end of a range.
  add(cases, {"ls", "--limit", "0"}, 2, "--limit: must be a whole number from 1 to 100000, not '0'");
  add(cases, {"ls", "--limit", "100001"}, 2, range);
  add(cases, {"cron", "next", "@daily", "-n", "10001"}, 2, range);
  add(cases, {"submit", "--retries", "1001", "--", "true"}, 2, range);
  add(cases, {"submit", "--max-deliveries", "0", "--", "true"}, 2, range);
  add(cases, {"submit", "--max-concurrent", "0", "--", "true"}, 2, range);
  add(cases, {"submit", "--max-concurrent", "100001", "--", "true"}, 2, range);
  add(cases, {"submit", "--cron", "@daily", "--max-runs", "0", "--", "true"}, 2,
      "--max-runs: must be a whole number from 1 to 1000000, not '0'");
  add(cases, {"submit", "--cron", "@daily", "--max-runs", "1000001", "--", "true"}, 2, range);
  add(cases, {"gc", "--older-than", "1d", "--batch", "0"}, 2, range);
  add(cases, {"queue", "set", "q", "--max-concurrent", "1000001"}, 2, range);
  add(cases, {"update", f.plain, "--if-version", "0", "--name", "x"}, 2,
      "--if-version: must be a whole number from 1 to 2147483647, not '0'");
  add(cases, {"update", f.plain, "--if-version", "9223372036854775807", "--name", "x"}, 2,
      "--if-version: must be a whole number from 1 to 2147483647, not '9223372036854775807'");
  add(cases, {"logs", f.plain, "--attempt", "0"}, 2, "--attempt: must be a whole number from 1 to 2147483647, not '0'");
  add(cases, {"check", "--max-dlq", "-1"}, 2, "--max-dlq: must be a whole number from 0 to 2147483647, not '-1'");
  add(cases, {"check", "--min-workers", "99999999999999"}, 2,
      "--min-workers: must be a whole number from 0 to 2147483647, not '99999999999999'");
  add(cases, {"check", "--max-failure-rate", "101"}, 2, "--max-failure-rate: must be a number from 0 to 100, not '101'");
  add(cases, {"check", "--max-failure-rate", "-0.5"}, 2, "must be a number from 0 to 100");
  add(cases, {"check", "--max-failure-rate", "0x10"}, 2, "must be a number from 0 to 100");
  add(cases, {"serve", "--max-body", "1023"}, 2, "--max-body: must be a whole number from 1024 to 1073741824, not '1023'");
  add(cases, {"serve", "--threads", "257"}, 2, range);
  // C's hexadecimal floats, and blanks, were numbers too (a tester: 0x10 as 16).
  for (const char* rate : {"abc", "-1/s", "1000001/s", "1/fortnight", "nan/s", "1e400/s", "0x10/s", "0X1P-2/m", " 5/s"})
    add(cases, {"queue", "set", "q", "--rate", rate});
  // Slower than 1 a day: a next token years away.
  for (const char* rate : {"1e-300/s", "0.04/h", "1e-30/h", "0.00001"})
    add(cases, {"queue", "set", "q", "--rate", rate}, 2, "slower than 1 run a day");
  for (const char* codes : {"256", "5-2", "1,,2", "99999999999"})
    add(cases, {"submit", "--no-retry-exit-codes", codes, "--", "true"});
  add(cases, {"queue", "set", "q", "--no-retry-exit-codes", "256"});
  add(cases, {"update", f.plain, "--no-retry-exit-codes", "5-2"});
}

// Values with a form of their own: labels, --env, queue names, URLs,
// headers, methods.
void forms(const Fixture& f, Cases& cases) {
  const std::vector<std::string> labels{"role", "=x", "a=b,a=c", "a b=c", "a=b,", "a=b c"};
  for (size_t i = 0; i < labels.size(); ++i)
    add(cases, {"submit", i % 2 ? "--on-each" : "--on", labels[i], "--", "true"});
  add(cases, {"update", f.plain, "--on", "a=b,a=c"});
  for (const char* env : {"NOEQUALS", "=value", ""}) {
    add(cases, {"submit", "--env", env, "--", "true"});
    add(cases, {"update", f.plain, "--env", env});
  }
  // A queue name is 1 to 64 characters of A-Z a-z 0-9 _ - . wherever it is given.
  for (const char* name : {"", "has space", "a/b", "../x", "\t"}) {
    if (*name) add(cases, {"submit", "--queue", name, "--", "true"});
    add(cases, {"queue", "set", name, "--max-concurrent", "1"});
    add(cases, {"queue", "pause", name});
    add(cases, {"queue", "resume", name});
  }
  const std::vector<std::string> urls{"",          "ftp://127.0.0.1/", "http://",
                                      "not a url", "http:///path",     "javascript:alert(1)"};
  for (size_t i = 0; i < urls.size(); ++i) {
    if (i % 2)
      add(cases, {"submit", "--webhook", urls[i]});
    else
      add(cases, {"submit", "--notify", urls[i], "--", "true"});
  }
  for (const char* header : {"NoColon", "Idempotency-Key: x", "X-Job-Id: 1", ": value", "Bad Name: v"})
    add(cases, {"submit", "--webhook", "http://127.0.0.1/", "--header", header});
  add(cases, {"submit", "--webhook", "http://127.0.0.1/", "--method", "GE T"});
}

void zones_and_cron(const Fixture& f, Cases& cases) {
  const std::vector<std::vector<std::string>> places{
      {"cron", "next", "@daily", "--tz", kSlot},
      {"submit", "--cron", "@daily", "--tz", kSlot, "--", "true"},
      {"update", f.cron, "--tz", kSlot},
      {"submit", "--at", "2027-01-01 00:00", "--tz", kSlot, "--", "true"},
      {"schedule", "backfill", f.cron, "--from", "2026-01-01 00:00", "--to", "2026-01-02 00:00", "--tz", kSlot},
      {"dag", "submit", f.dag_file, "--cron", "@daily", "--tz", kSlot},
  };
  // An empty --tz is refused everywhere a zone is taken (jobctl(1), cron next --tz).
  const std::vector<std::string> zones{"Mars/Olympus", "../../../etc/passwd", "/etc/localtime", "UTC+25", " UTC"};
  for (size_t i = 0; i < places.size(); ++i) {
    add(cases, fill(places[i], ""));
    add(cases, fill(places[i], in_turn(zones, i)));
  }
  const std::vector<std::string> exprs{"* * * *",        "* * * * * * *",          "61 * * * *",
                                       "0 0 30 2 *",     "CRON_TZ=UTC 0 3 * * *",  "@bogus",
                                       "1- * * * *",     "*/0 * * * *",            "H(5-1) * * * *",
                                       "0 0 * * 8#1",    "@every",                 "/5 * * * *"};
  add(cases, {"cron", "next", ""});
  add(cases, {"update", f.cron, "--cron", ""});
  for (size_t i = 0; i < exprs.size(); ++i) {
    add(cases, {"cron", "next", exprs[i]}, 2, "cron expression");
    if (i % 3 == 0) add(cases, {"submit", "--cron", exprs[i], "--", "true"});
    if (i % 3 == 1) add(cases, {"update", f.cron, "--cron", exprs[i]});
    if (i % 3 == 2) add(cases, {"dag", "submit", f.dag_file, "--cron", exprs[i]});
  }
}

// Free-text options given "": refused rather than taken as not given, where
// `--cron ''` would run the job now and `wait --timeout ''` wait for ever
// (update's --name, --on, --concurrency-key and --tenant "" remove the value:
// lifecycle_test).
void empties(const Fixture& f, Cases& cases) {
  for (const char* flag : {"--name", "--queue", "--cwd", "--env", "--on", "--concurrency-key", "--tenant",
                           "--idempotency-key", "--cron", "--payload", "--no-retry-exit-codes", "--file"})
    add(cases, {"submit", flag, "", "--", "true"}, 2, std::string(flag) + ": " + kEmpty);
  for (const char* flag : {"--method", "--header", "--data", "--sign-secret"})
    add(cases, {"submit", "--webhook", "http://127.0.0.1:9/", flag, ""}, 2, kEmpty);
  add(cases, {"submit", "--webhook", "", "--", "true"}, 2, kEmpty);
  add(cases, {"submit", "--notify", "", "--", "true"}, 2, kEmpty);
  add(cases, {"submit", "--on-each", "", "--", "true"}, 2, kEmpty);
  add(cases, {"update", f.plain, "--queue", ""}, 2, kEmpty);
  add(cases, {"--db", "", "ls"}, 2, "--db: " + kEmpty);
  add(cases, {"ls", "--actor", ""}, 2, "--actor: " + kEmpty);
  add(cases, {"ls", "--queue", ""}, 2, kEmpty);
}

// Flags in combinations jobctl(1) refuses, and what is missing.
void combinations(const Fixture& f, Cases& cases) {
  const std::string hook = "http://127.0.0.1/";
  const std::string at = "2027-01-01T00:00:00Z";
  const std::vector<std::vector<std::string>> lines{
      {"submit", "--at", at, "--in", "1h", "--", "true"},
      {"submit", "--cron", "@daily", "--at", at, "--", "true"},
      {"submit", "--cron", "@daily", "--in", "1h", "--", "true"},
      {"submit", "--cron", "@daily", "--wait", "--", "true"},
      {"submit", "--misfire", "skip", "--", "true"},
      {"submit", "--overlap", "allow", "--", "true"},
      {"submit", "--jitter", "1s", "--", "true"},
      {"submit", "--catchup-window", "1h", "--", "true"},
      {"submit", "--file", "-", "--name", "x"},
      {"submit", "--file", "-", "--", "true"},
      {"submit", "--webhook", hook, "--", "true"},
      {"submit", "--webhook", hook, "--env", "A=1"},
      {"submit", "--webhook", hook, "--cwd", "/tmp"},
      {"submit", "--webhook", hook, "--payload", "1"},
      {"submit", "--method", "GET", "--", "true"},
      {"submit", "--header", "X-A: b", "--", "true"},
      {"submit", "--data", "x", "--", "true"},
      {"submit", "--insecure", "--", "true"},
      {"submit", "--sign-secret", "K", "--", "true"},
      {"submit", "--on", "a=b", "--on-each", "a=b", "--", "true"},
      {"submit", "--stagger", "1s", "--", "true"},
      {"submit", "--notify-on", "dead", "--", "true"},
      {"submit", "--tz", "UTC", "--", "true"},
      {"submit", "--retry-delay", "10m", "--max-retry-delay", "1s", "--", "true"},
      {"submit"},
      {"submit", "--"},
      {"submit", "--name", "x"},
      {"ls", "--stuck", "--status", "pending"},
      {"ls", "--stuck", "--deleted"},
      {"ls", "--stuck-after", "1h"},
      {"dlq", "replay", "--all", f.plain},
      {"dlq", "replay", "--queue", "q", f.plain},
      {"dlq", "replay"},
      {"dlq", "purge"},
      {"gc"},
      {"update", f.plain},
      {"update", f.plain, "--retry-delay", "10m", "--max-retry-delay", "1s"},
      {"queue", "set", "q"},
      {"queue", "set", "q", "--retry-delay", "10m", "--max-retry-delay", "1s"},
      {"check"},
      {"check", "--queue", "q"},
      {"top"},  // no terminal and no --once
      {"dag", "submit", f.dag_file, "--tz", "UTC"},
      {"dag", "submit"},
      {"schedule", "backfill", f.cron},
      {"schedule", "backfill", f.cron, "--from", "2026-01-01T00:00:00Z"},
      {"cron", "next"},
      {"progress"},
  };
  for (const auto& args : lines) add(cases, args);
}

// Unknown commands and flags, missing and extra arguments.
void unknown(const Fixture& f, Cases& cases) {
  const std::vector<std::vector<std::string>> lines{
      {"sumbit"},           {"frobnicate"},        {""},
      {" "},                {"dlq"},               {"dlq", "lss"},
      {"queue"},            {"schedule"},          {"schedules"},
      {"cron"},             {"dag"},               {"dag", "frob"},
      {"--bogus"},          {"ls", "--bogus"},     {"submit", "--bogus", "--", "true"},
      {"get"},              {"ls", "extra"},       {"init", "extra"},
      {"-o", "xml", "ls"},  {"ls", "--limit"},     {"get", f.plain, f.plain},
      {"doctor", "--fix"},  {"stats", "--queue"},  {"gc", "--older-than"},
      {"workers", "x"},     {"queue", "ls", "x"},  {"schedules", "ls", "x"},
      {"-", "ls"},          {"LS"},                {"Submit", "--", "true"},
  };
  for (const auto& args : lines) add(cases, args);
}

// @FILE, --file and dag submit given what is not a readable file.
void files(const Fixture& f, Cases& cases) {
  const std::vector<std::string> not_files{f.a_dir, f.no_file, ""};
  for (const auto& path : not_files) {
    add(cases, {"submit", "--payload", "@" + path, "--", "true"});
    add(cases, {"submit", "--webhook", "http://127.0.0.1/", "--data", "@" + path});
    add(cases, {"progress", "0.5", "--checkpoint", "@" + path}).with_env(in_job(f));
    add(cases, {"submit", "--file", path});
    add(cases, {"dag", "submit", path});
    add(cases, {"dag", "graph", path});
  }
  // Empty: no JSON, no jobs, no DAG.
  add(cases, {"submit", "--payload", "@" + f.empty, "--", "true"});
  add(cases, {"progress", "0.5", "--checkpoint", "@" + f.empty}).with_env(in_job(f));
  add(cases, {"submit", "--file", f.empty});
  add(cases, {"dag", "submit", f.empty});
  add(cases, {"dag", "graph", f.empty});
  add(cases, {"submit", "--file", "-"}).with_stdin("\n\n  \n");
  add(cases, {"dag", "submit", "-"});
}

// A newline or CR in a value that the message quotes must not make the
// error two lines.
void line_breaks(Cases& cases) {
  add(cases, {"get", "abc\ndef"});
  add(cases, {"submit", "--queue", "a\nb", "--", "true"});
  add(cases, {"submit", "--timeout", "1\n0s", "--", "true"});
  add(cases, {"submit", "--priority", "hi\ngh", "--", "true"});
  add(cases, {"submit", "--on", "a\nb", "--", "true"});
  add(cases, {"submit", "--webhook", "http://127.0.0.1/", "--method", "GET\r\n"});
  add(cases, {"submit", "--webhook", "http://127.0.0.1/", "--header", "X-A: a\r\nX-B: b"});
  add(cases, {"cron", "next", "61\n* * * *"});
  add(cases, {"cron", "next", "@daily", "--tz", "Mars\nOlympus"});
  add(cases, {"submit", "--payload", "{\n", "--", "true"});
}

Cases hostile_cases(const Fixture& f) {
  Cases cases;
  durations(f, cases);
  times(f, cases);
  words(f, cases);
  ids(f, cases);
  states(f, cases);
  progress(f, cases);
  bad_json(f, cases);
  batch_lines(cases);
  dag_documents(f, cases);
  stores(f, cases);
  not_utf8(f, cases);
  sizes(f, cases);
  numbers(f, cases);
  forms(f, cases);
  zones_and_cron(f, cases);
  empties(f, cases);
  combinations(f, cases);
  unknown(f, cases);
  files(f, cases);
  line_breaks(cases);
  return cases;
}

// The store with content: a job of each kind the commands act on.
Fixture make_fixture(const test::TestDb& db, const test::TempDir& dir) {
  Fixture f;
  f.tmp = dir.path();
  f.plain = test::submit(db, dir, {"--name", "plain", "--", "true"});
  f.plain_run = test::get(db, dir, f.plain)["run"]["id"].get<std::string>();
  f.cron = test::submit(db, dir, {"--name", "nightly", "--cron", "0 3 * * *", "--", "true"});
  f.gone = test::submit(db, dir, {"--name", "gone", "--", "true"});
  REQUIRE(test::run_jobctl(db, dir, {"delete", f.gone}).code == 0);
  f.dag_file = dir.file("etl.json");
  std::ofstream(f.dag_file) << R"({"name": "etl", "jobs": {"a": {"command": "true"},
                                   "b": {"command": "true", "depends_on": ["a"]}}})";
  auto dag = test::run_jobctl(db, dir, {"dag", "submit", f.dag_file});
  REQUIRE(dag.code == 0);
  f.dag_run = test::trim(dag.out);
  auto status = test::run_jobctl(db, dir, {"dag", "status", f.dag_run, "-o", "json"});
  REQUIRE(status.code == 0);
  auto s = json::parse(status.out);
  f.dag = s["dag_id"].get<std::string>();
  f.node = s["nodes"][0]["job_id"].get<std::string>();

  f.a_dir = dir.file("a-dir");
  std::filesystem::create_directory(f.a_dir);
  f.no_file = dir.file("no/such/file.json");
  f.empty = dir.file("empty.json");
  std::ofstream(f.empty).flush();
  f.latin1 = dir.file("latin1.txt");
  std::ofstream(f.latin1) << "caf\xE9";
  f.deeper = dir.file("deeper.json");
  std::ofstream(f.deeper) << std::string(100'000, '[') << std::string(100'000, ']');
  f.huge_json = dir.file("huge.json");
  std::ofstream(f.huge_json) << "\"" << std::string(1024 * 1024 + 1, 'x') << "\"";
  f.huge_text = dir.file("huge.txt");
  std::ofstream(f.huge_text) << std::string(1024 * 1024 + 1, 'x');
  f.big_checkpoint = dir.file("checkpoint.json");
  std::ofstream(f.big_checkpoint) << "\"" << std::string(64 * 1024, 'x') << "\"";
  f.big_dag = dir.file("big-dag.json");
  std::ofstream big(f.big_dag);
  big << R"({"name": "big", "jobs": {)";
  for (int i = 0; i < 10'001; ++i) big << (i ? ", " : "") << "\"n" << i << R"(": {"command": "true"})";
  big << "}}";
  return f;
}

// The whole store as text: for each table, its rows, each row's cells
// joined, sorted (rather than ORDER BY: a json column has no order on
// PostgreSQL). NULL is told from "". No column is left out: a command that
// fails writes nothing, not even a time it last looked.
using Dump = std::map<std::string, std::vector<std::string>>;

Dump dump(store::Connection& conn) {
  const auto tables = conn.dialect() == store::Dialect::sqlite
                          ? conn.query("SELECT name FROM sqlite_master WHERE type = 'table'")
                          : conn.query("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()");
  Dump out;
  for (const auto& t : tables) {
    auto& rows = out[t.text(0)];
    for (const auto& row : conn.query("SELECT * FROM \"" + t.text(0) + "\"")) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i)
        line += (i ? "\x1F" : "") + (row.is_null(i) ? "NULL" : "'" + row.text(i) + "'");
      rows.push_back(std::move(line));
    }
    std::sort(rows.begin(), rows.end());
  }
  return out;
}

// The tables that differ, each with a row it gained or lost; "" when none.
std::string difference(const Dump& before, const Dump& after) {
  std::string out;
  auto first_missing = [](const std::vector<std::string>& from, const std::vector<std::string>& in) {
    for (const auto& row : from)
      if (!std::binary_search(in.begin(), in.end(), row)) return row.substr(0, 300);
    return std::string();
  };
  Dump all = before;
  all.insert(after.begin(), after.end());
  for (const auto& entry : all) {
    const std::string& table = entry.first;
    auto b = before.find(table), a = after.find(table);
    const std::vector<std::string> none;
    const auto& rb = b == before.end() ? none : b->second;
    const auto& ra = a == after.end() ? none : a->second;
    if (rb == ra) continue;
    out += table + ": " + std::to_string(rb.size()) + " -> " + std::to_string(ra.size()) + " rows";
    if (auto row = first_missing(ra, rb); !row.empty()) out += ", new: " + row;
    if (auto row = first_missing(rb, ra); !row.empty()) out += ", gone: " + row;
    out += "; ";
  }
  return out;
}

// A case as a person reads it in a failure: arguments quoted, long ones
// cut, bytes that are not printable ASCII as \xHH.
std::string shown(const Case& c) {
  auto quote = [](const std::string& s) {
    std::string out = "'";
    for (size_t i = 0; i < s.size() && i < 80; ++i) {
      auto b = static_cast<unsigned char>(s[i]);
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02X", b);
      out += b >= 0x20 && b < 0x7F ? std::string(1, s[i]) : std::string(hex);
    }
    return out + (s.size() > 80 ? "'…(" + std::to_string(s.size()) + " bytes)" : "'");
  };
  std::string out = "jobctl --db " + (c.db ? quote(*c.db) : std::string("DSN"));
  for (const auto& a : c.args) out += " " + quote(a);
  for (const auto& e : c.env) out = quote(e) + " " + out;
  if (!c.stdin_text.empty()) out += " < " + quote(c.stdin_text);
  return out;
}

// Text split at each newline; an empty line counts.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t start = 0; start < text.size();) {
    size_t end = std::min(text.find('\n', start), text.size());
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

test::Result run(const test::TestDb& db, const test::TempDir& dir, const Case& c) {
  if (!c.db) return test::run_jobctl(db, dir, c.args, c.stdin_text, c.env);
  static int count = 0;
  test::Process p(std::vector<std::string>{JOBCTL_BIN, "--db", *c.db} + c.args, c.env, dir,
                  "other-db-" + std::to_string(++count));
  int code = p.wait();
  return test::Result{code, p.out(), p.err()};
}

}  // namespace

TEST_CASE("hostile: every bad input gets its documented exit status, one error line, and writes nothing") {
  test::TempDir dir;
  test::TestDb db(dir);
  const Fixture f = make_fixture(db, dir);
  const Cases cases = hostile_cases(f);
  REQUIRE(cases.size() >= 300);
  auto conn = db.connect();
  Dump before = dump(*conn);
  for (const auto& c : cases) {
    CAPTURE(shown(c));
    auto r = run(db, dir, c);
    CAPTURE(r.err.substr(0, 1000));
    CHECK(r.code == c.code);
    CHECK(r.code != 70);
    CHECK_MESSAGE(r.out.empty(), "stdout: " << r.out.substr(0, 300));
    // One error line, and at most a hint after it.
    const auto lines = split_lines(r.err);
    CHECK(r.err.rfind("jobctl: error: ", 0) == 0);
    CHECK(lines.size() <= 2);
    if (lines.size() == 2) CHECK(lines[1].rfind("hint: ", 0) == 0);
    if (!c.mentions.empty()) CHECK(r.err.find(c.mentions) != std::string::npos);
    Dump after = dump(*conn);
    const std::string changed = difference(before, after);
    CHECK_MESSAGE(changed.empty(), "the store changed: " << changed);
    if (!changed.empty()) before = std::move(after);  // judge the next case on its own
  }
}
