// jobctl update, delete, restore and history as a user runs them: the real
// binaries against a real store.
#include <doctest/doctest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/fixtures.hpp"

using namespace jobctl;
using nlohmann::json;
using test::get;
using test::run_jobctl;
using test::submit;

namespace {

json history(const test::TestDb& db, const test::TempDir& dir, const std::string& id) {
  auto r = run_jobctl(db, dir, {"history", id, "-o", "json"});
  REQUIRE(r.code == 0);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("lifecycle: update, --if-version, delete, restore and history from the command line") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto id = submit(db, dir, {"--name", "sync", "--actor", "alice", "--", "true"});

  auto up = run_jobctl(db, dir, {"update", id, "--priority", "high", "--env", "A=1", "--if-version", "1", "-o", "json"},
                       "", {"JOBCTL_ACTOR=deploy-bot"});
  REQUIRE_MESSAGE(up.code == 0, up.err);
  CHECK(json::parse(up.out) == json{{"id", id}, {"version", 2}, {"changed", true}, {"dropped", 0}});
  CHECK(get(db, dir, id)["version"] == 2);
  CHECK(get(db, dir, id)["priority"] == "high");

  // The version read before someone else's update: refused, nothing written.
  auto stale = run_jobctl(db, dir, {"update", id, "--priority", "low", "--if-version", "1"});
  CHECK(stale.code == 6);
  CHECK(stale.err.find("changed since you read it") != std::string::npos);
  CHECK(test::lines(stale.err).size() == 2);  // the error and its hint
  CHECK(get(db, dir, id)["priority"] == "high");

  auto nothing = run_jobctl(db, dir, {"update", id});
  CHECK(nothing.code == 2);
  CHECK(nothing.err.find("nothing to update") != std::string::npos);
  auto bad = run_jobctl(db, dir, {"update", id, "--timeout", "soon"});
  CHECK(bad.code == 2);
  auto not_schedule = run_jobctl(db, dir, {"update", id, "--cron", "* * * * *"});
  CHECK(not_schedule.code == 4);

  auto deleted = run_jobctl(db, dir, {"delete", id, "--actor", "ops", "-o", "table"});
  REQUIRE(deleted.code == 0);
  CHECK(deleted.err == "job " + id + " deleted (1 run cancelled)\n");
  CHECK(get(db, dir, id)["deleted_at"].is_string());
  CHECK(get(db, dir, id)["status"] == "cancelled");
  CHECK(json::parse(run_jobctl(db, dir, {"ls", "-o", "json"}).out).empty());
  CHECK(json::parse(run_jobctl(db, dir, {"ls", "--deleted", "-o", "json"}).out).size() == 1);
  CHECK(run_jobctl(db, dir, {"delete", id}).code == 4);
  CHECK(run_jobctl(db, dir, {"update", id, "--priority", "low"}).code == 4);
  CHECK(run_jobctl(db, dir, {"retry", id}).code == 4);
  REQUIRE(run_jobctl(db, dir, {"restore", id}, "", {"JOBCTL_ACTOR=ops"}).code == 0);
  CHECK(get(db, dir, id)["deleted_at"].is_null());
  CHECK(run_jobctl(db, dir, {"restore", id}).code == 4);

  auto h = history(db, dir, id);
  REQUIRE(h.size() == 4);
  CHECK(h[0]["action"] == "restore");
  CHECK(h[0]["actor"] == "ops");
  CHECK(h[1]["action"] == "delete");
  CHECK(h[1]["actor"] == "ops");
  CHECK(h[1]["details"]["cancelled"] == 1);
  CHECK(h[2]["action"] == "update");
  CHECK(h[2]["actor"] == "deploy-bot");
  CHECK(h[2]["version"] == 2);
  CHECK(h[2]["details"]["priority"] == json{{"from", "normal"}, {"to", "high"}});
  // Environment values are not kept in the history, only that they changed.
  CHECK(h[2]["details"]["env.A"] == json{{"from", nullptr}, {"to", "(set)"}});
  CHECK(h[3]["action"] == "create");
  CHECK(h[3]["actor"] == "alice");
  CHECK(h[3]["version"] == 1);

  auto table = run_jobctl(db, dir, {"history", id, "-o", "table"});
  CHECK(table.out.find("priority: \"normal\" -> \"high\"") != std::string::npos);
  CHECK(run_jobctl(db, dir, {"history", "01ARZ3NDEKTSV4RRFFQ69G5FAV"}).code == 3);
}

TEST_CASE("lifecycle: a running job finishes with the command it started with, and its retry runs the new one") {
  test::TempDir dir;
  test::TestDb db(dir);
  std::string gate = dir.file("gate");
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  // The first version waits for the test to open the gate, so the update
  // surely lands while it runs; then it fails, and its retry comes.
  auto id = submit(db, dir, {"--retries", "1", "--backoff", "fixed", "--retry-delay", "100ms", "--",
                             "while [ ! -e '" + gate + "' ]; do sleep 0.05; done; echo v1; exit 1"});
  test::eventually([&] { return get(db, dir, id)["status"] == "running"; }, "the job to start");
  REQUIRE(run_jobctl(db, dir, {"update", id, "--", "echo v2"}).code == 0);
  std::ofstream(gate) << "open";
  REQUIRE(run_jobctl(db, dir, {"wait", id}).code == 0);
  CHECK(test::trim(run_jobctl(db, dir, {"logs", id, "--attempt", "1"}).out) == "v1");
  CHECK(test::trim(run_jobctl(db, dir, {"logs", id, "--attempt", "2"}).out) == "v2");
  auto attempts = json::parse(run_jobctl(db, dir, {"runs", id, "-o", "json"}).out);
  REQUIRE(attempts.size() == 2);
  CHECK(attempts[0]["job_version"] == 1);
  CHECK(attempts[1]["job_version"] == 2);
}

TEST_CASE("lifecycle: submit --on runs a job on the agent with the labels, or says no agent can") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto web = test::start_agent(db, dir, {"--poll-interval", "100ms", "--label", "role=web"}, "web");
  auto dbs = test::start_agent(db, dir, {"--poll-interval", "100ms", "-l", "role=db", "--label", "dc=fra"}, "db");
  test::eventually([&] { return json::parse(run_jobctl(db, dir, {"workers", "-o", "json"}).out).size() == 2; },
                   "both agents to register");
  auto workers = json::parse(run_jobctl(db, dir, {"workers", "-o", "json"}).out);
  for (const auto& w : workers) {
    bool has_host = false;
    for (const auto& l : w["labels"]) has_host = has_host || l.get<std::string>().starts_with("host=");
    CHECK(has_host);
  }
  for (int i = 0; i < 4; ++i) {
    auto id = submit(db, dir, {"--on", "dc=fra,role=db", "--", "true"});
    REQUIRE(run_jobctl(db, dir, {"wait", id}).code == 0);
    auto runs = json::parse(run_jobctl(db, dir, {"runs", id, "-o", "json"}).out);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0]["worker"] == "db");
  }
  auto none = submit(db, dir, {"--on", "role=cache", "--", "true"});
  auto g = get(db, dir, none);
  CHECK(g["status"] == "pending");
  CHECK(g["on"] == "role=cache");
  CHECK(g["waiting"] == "no eligible agent: none of the live agents of queue default has role=cache");
  auto listed = json::parse(run_jobctl(db, dir, {"ls", "-o", "json"}).out);
  REQUIRE(listed.size() == 5);
  CHECK(listed[0]["id"] == none);  // newest first
  CHECK(listed[0]["waiting"] == g["waiting"]);
  CHECK(listed[1]["waiting"].is_null());
  CHECK(run_jobctl(db, dir, {"ls", "-o", "table"}).out.find("pending (no eligible agent)") != std::string::npos);
  CHECK(run_jobctl(db, dir, {"submit", "--on", "role", "--", "true"}).code == 2);
  CHECK(json::parse(run_jobctl(db, dir, {"ls", "-o", "json"}).out).size() == 5);  // nothing written by the bad one
}

TEST_CASE("lifecycle: get, ls and wait say when no live agent serves a job's queue, or the queue is paused") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});  // serves default only
  test::eventually([&] { return json::parse(run_jobctl(db, dir, {"workers", "-o", "json"}).out).size() == 1; },
                   "the agent to register");
  auto ci = submit(db, dir, {"--queue", "ci", "--", "true"});
  auto g = get(db, dir, ci);
  CHECK(g["status"] == "pending");
  CHECK(g["waiting"] == "no eligible agent: no live agent serves queue ci (start one with `jobagent --queues ci`)");
  CHECK(run_jobctl(db, dir, {"ls", "-o", "table"}).out.find("pending (no eligible agent)") != std::string::npos);

  // wait, on a terminal, says so instead of hanging silently.
  auto waited = test::run_jobctl_on_terminal(db, {"wait", ci, "--timeout", "1s"});
  CHECK(waited.code == 124);
  CHECK(waited.out.find("job " + ci + " is waiting: no eligible agent: no live agent serves queue ci") !=
        std::string::npos);
  // ...and not into a pipe, where a script reads only the outcome.
  CHECK(run_jobctl(db, dir, {"wait", ci, "--timeout", "1s"}).err.find("is waiting") == std::string::npos);

  // A paused queue is named as the reason.
  REQUIRE(run_jobctl(db, dir, {"queue", "pause", "default"}).code == 0);
  auto held = submit(db, dir, {"--", "true"});
  CHECK(get(db, dir, held)["waiting"] == "queue default is paused: `jobctl queue resume default` lets agents claim it again");
  CHECK(run_jobctl(db, dir, {"ls", "-o", "table"}).out.find("pending (queue paused)") != std::string::npos);
  REQUIRE(run_jobctl(db, dir, {"queue", "resume", "default"}).code == 0);
  CHECK(run_jobctl(db, dir, {"wait", held}).code == 0);
  CHECK(get(db, dir, held)["waiting"].is_null());
}

TEST_CASE("lifecycle: ls --status failed finds a job waiting for its retry after a failure") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  auto failing = submit(db, dir, {"--retries", "3", "--retry-delay", "1h", "--max-retry-delay", "2h", "--", "exit 3"});
  auto fine = submit(db, dir, {"--", "true"});
  test::eventually([&] { return get(db, dir, failing)["run"]["attempts"] == 1; }, "the first attempt");
  CHECK(run_jobctl(db, dir, {"wait", fine}).code == 0);
  auto g = get(db, dir, failing);
  CHECK(g["status"] == "pending");
  auto listed = json::parse(run_jobctl(db, dir, {"ls", "--status", "failed", "-o", "json"}).out);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["id"] == failing);
  CHECK(run_jobctl(db, dir, {"ls", "--status", "failed", "-o", "table"}).out.find("pending (retry after 1 failure)") !=
        std::string::npos);
  CHECK(run_jobctl(db, dir, {"get", failing, "-o", "table"}).out.find("pending (retry after 1 failure)") != std::string::npos);
  CHECK(json::parse(run_jobctl(db, dir, {"ls", "--status", "succeeded", "-o", "json"}).out).size() == 1);
}

TEST_CASE("lifecycle: update --name, --on, --concurrency-key and --tenant given \"\" remove the value") {
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string id = submit(db, dir, {"--name", "nightly", "--on", "role=web", "--concurrency-key", "db",
                                          "--tenant", "acme", "--", "true"});
  auto before = get(db, dir, id);
  CHECK(before["name"] == "nightly");
  CHECK(before["concurrency_key"] == "db");
  CHECK(before["tenant"] == "acme");
  REQUIRE(run_jobctl(db, dir, {"update", id, "--name", "", "--on", "", "--concurrency-key", "", "--tenant", ""}).code ==
          0);
  auto after = get(db, dir, id);
  CHECK(after["name"] == "");
  CHECK(before["on"] == "role=web");
  CHECK(after["on"].is_null());
  CHECK(after["concurrency_key"].is_null());
  CHECK(after["tenant"] == "");
  CHECK(after["version"] == before["version"].get<int>() + 1);
  // Any other option still refuses "".
  auto r = run_jobctl(db, dir, {"update", id, "--queue", ""});
  CHECK(r.code == 2);
  CHECK(r.err.find("--queue: the value is empty") != std::string::npos);
}
