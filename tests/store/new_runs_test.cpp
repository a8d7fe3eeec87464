// insert_runs: a schedule's occurrence gets one run however often it is
// written; runs written as having no occurrence are plain inserts, and one
// that has one after all is refused as a bug, with nothing written.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/store/new_runs.hpp"
#include "common/store/store.hpp"
#include "common/util/error.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;

namespace {

struct NewRunsFixture {
  test::TempDir dir;
  test::TestDb db{dir};
  std::unique_ptr<store::Store> s = db.open();
  store::Connection& c = s->connection();

  int64_t runs_of(const std::string& job_id) {
    return c.query("SELECT count(*) FROM runs WHERE job_id = $1", {job_id}).at(0).i64(0);
  }
};

store::NewRun run(const std::string& id, const std::string& job_id, std::optional<int64_t> occurrence = {}) {
  store::NewRun r;
  r.id = id;
  r.job_id = job_id;
  r.queue = "default";
  r.occurrence = occurrence;
  return r;
}

}  // namespace

TEST_CASE("new runs: an occurrence written twice has one run, and plain runs are all written") {
  NewRunsFixture f;
  {
    store::Transaction tx(f.c, store::TxMode::write);
    CHECK(store::insert_runs(f.c, {run("r1", "sched", 1'000'000)}) == 1);
    CHECK(store::insert_runs(f.c, {run("r2", "sched", 1'000'000), run("r3", "sched", 2'000'000)}) == 1);
    const std::vector<store::NewRun> plain{run("p1", "plain"), run("p2", "plain")};
    CHECK(store::insert_runs(f.c, plain.size(), [&](size_t i) { return plain[i]; }, store::Occurrences::none) == 2);
    tx.commit();
  }
  CHECK(f.runs_of("sched") == 2);
  CHECK(f.runs_of("plain") == 2);
}

TEST_CASE("new runs: a run with an occurrence in a batch written for none is refused, and none of the batch is written") {
  NewRunsFixture f;
  const std::vector<store::NewRun> runs{run("a1", "job"), run("a2", "job", 1'000'000)};
  {
    store::Transaction tx(f.c, store::TxMode::write);
    try {
      store::insert_runs(f.c, runs.size(), [&](size_t i) { return runs[i]; }, store::Occurrences::none);
      FAIL("the batch was written");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::internal);
      CHECK(std::string(e.what()).find("a2") != std::string::npos);
    }
  }  // rolled back
  CHECK(f.runs_of("job") == 0);
}
