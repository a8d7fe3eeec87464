// Several agents on one store: every job runs exactly once.
#include <doctest/doctest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "tests/support/fixtures.hpp"

using namespace jobctl;
using test::run_jobctl;

TEST_CASE("fleet: two agents with 8 slots each run 2,000 jobs exactly once") {
  test::TempDir dir;
  test::TestDb db(dir);
  std::string ledger = dir.file("ledger");
  std::string batch;
  for (int i = 0; i < 2000; ++i)
    batch += R"({"command": "echo $JOB_RUN_ID $JOB_ATTEMPT >> )" + ledger + R"("})" + "\n";
  auto submitted = run_jobctl(db, dir, {"submit", "--file", "-"}, batch);
  REQUIRE(submitted.code == 0);
  REQUIRE(test::lines(submitted.out).size() == 2000);

  auto a = test::start_agent(db, dir, {"--concurrency", "8", "--poll-interval", "100ms"}, "a");
  auto b = test::start_agent(db, dir, {"--concurrency", "8", "--poll-interval", "100ms"}, "b");
  auto store = db.open();
  test::eventually(
      [&] {
        return store->connection().query("SELECT count(*) FROM runs WHERE status = 'succeeded'").at(0).i64(0) == 2000;
      },
      "2,000 jobs to succeed", std::chrono::seconds(300));
  auto entries = test::lines(test::read_file(ledger));
  std::set<std::string> unique(entries.begin(), entries.end());
  CHECK(entries.size() == 2000);
  CHECK(unique.size() == 2000);
  for (const auto& e : entries) CHECK(e.substr(e.size() - 2) == " 1");
  CHECK(store->connection().query("SELECT count(*) FROM attempts").at(0).i64(0) == 2000);
  // Both agents took part.
  auto per_worker = store->connection().query("SELECT count(DISTINCT worker_id) FROM attempts");
  CHECK(per_worker.at(0).i64(0) == 2);
}
