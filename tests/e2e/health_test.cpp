// jobctl stats and check from the command line, against a real agent.
#include <doctest/doctest.h>
#include <signal.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "tests/support/fixtures.hpp"

using namespace jobctl;
using namespace std::chrono_literals;
using nlohmann::json;
using test::run_jobctl;
using test::submit;

TEST_CASE("check: exit 0 while thresholds hold, 1 with the reason when one is breached, 2 without a threshold") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto none = run_jobctl(db, dir, {"check"});
  CHECK(none.code == 2);
  CHECK(none.err.find("no threshold given") != std::string::npos);

  auto ok = run_jobctl(db, dir, {"check", "--max-dlq", "0"});
  CHECK(ok.code == 0);
  CHECK(ok.out == "ok\n");

  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  test::eventually([&] { return run_jobctl(db, dir, {"check", "--min-workers", "1"}).code == 0; }, "the agent");
  auto id = submit(db, dir, {"--retries", "0", "--", "exit 1"});
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 1);
  auto dlq = run_jobctl(db, dir, {"check", "--max-dlq", "0", "--min-workers", "1"});
  CHECK(dlq.code == 1);
  CHECK(dlq.out == "FAILED: the dead-letter queue holds 1 runs (--max-dlq 0)\n");
  CHECK(run_jobctl(db, dir, {"check", "--max-dlq", "1"}).code == 0);

  // A run in a queue no agent serves waits; after a second it is too old.
  submit(db, dir, {"--queue", "nobody", "--", "true"});
  std::this_thread::sleep_for(1100ms);
  auto old = run_jobctl(db, dir, {"check", "--max-oldest", "1s"});
  CHECK(old.code == 1);
  CHECK(old.out.find("FAILED: queue nobody (normal) has a run waiting for ") == 0);
  CHECK(run_jobctl(db, dir, {"check", "--max-oldest", "1h"}).code == 0);
  auto workers = run_jobctl(db, dir, {"check", "--min-workers", "1", "--queue", "nobody"});
  CHECK(workers.code == 1);
  CHECK(workers.out == "FAILED: 0 live agents on queue nobody (--min-workers 1)\n");

  agent->signal(SIGTERM);
  CHECK(agent->wait() == 0);
  auto gone = run_jobctl(db, dir, {"check", "--min-workers", "1", "--max-dlq", "0"});
  CHECK(gone.code == 1);
  CHECK(gone.out == "FAILED: the dead-letter queue holds 1 runs (--max-dlq 0); 0 live agents (--min-workers 1)\n");
}

TEST_CASE("stats: the table and JSON name a queue that nobody serves") {
  test::TempDir dir;
  test::TestDb db(dir);
  submit(db, dir, {"--queue", "nobody", "--priority", "high", "--", "true"});
  auto table = run_jobctl(db, dir, {"stats", "-o", "table"});
  REQUIRE(table.code == 0);
  CHECK(table.out.find("note: queue nobody: 1 ready runs but no live agent claims from it") != std::string::npos);
  auto j = json::parse(run_jobctl(db, dir, {"stats", "-o", "json", "--since", "5m"}).out);
  REQUIRE(j.size() == 1);
  CHECK(j[0]["queue"] == "nobody");
  CHECK(j[0]["priority"] == "high");
  CHECK(j[0]["ready"] == 1);
  CHECK(j[0]["live_agents"] == 0);
  CHECK(j[0]["window_s"] == 300.0);
  CHECK(run_jobctl(db, dir, {"stats", "--since", "0s"}).code == 2);
}
