// PostgreSQL failover end to end: a primary with a synchronous standby
// (scripts/pg-throwaway pair), jobctl and two agents on a multi-host DSN
// with target_session_attrs=read-write; the primary crashes and the
// standby is promoted while jobs run and a per-second schedule fires.
#include <doctest/doctest.h>

#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/support/fixtures.hpp"

using namespace jobctl;
using nlohmann::json;

namespace {

// The primary and standby of scripts/pg-throwaway pair, stopped and
// removed at the end.
class PgPair {
 public:
  explicit PgPair(const test::TempDir& dir) : dir_(dir) {
    auto out = script({"pair"});
    std::smatch m;
    if (std::regex_search(out, m, std::regex(R"(PG_PAIR_DIR=(\S+))"))) data_ = m[1];
    if (std::regex_search(out, m, std::regex(R"(PG_PAIR_DSN='([^']+)')"))) dsn_ = m[1];
    REQUIRE_MESSAGE(!dsn_.empty(), "scripts/pg-throwaway pair printed: " << out);
  }
  ~PgPair() {
    if (!data_.empty()) script({"stop", data_});
  }
  const std::string& dsn() const { return dsn_; }
  void fail_over() { script({"failover", data_}); }
  // The standby stops (SIGSTOP): the primary's commits wait for it.
  void freeze_standby() { script({"freeze-standby", data_}); }
  void thaw_standby() { script({"thaw-standby", data_}); }

 private:
  std::string script(std::vector<std::string> args) {
    args.insert(args.begin(), std::string(JOBCTL_SOURCE_DIR) + "/scripts/pg-throwaway");
    test::Process p(args, {}, dir_, "pg-pair-" + args[1]);
    CHECK(p.wait(std::chrono::seconds(120)) == 0);
    return p.out() + p.err();
  }

  const test::TempDir& dir_;
  std::string data_, dsn_;
};

test::Result run_during_failover(const std::string& dsn, const test::TempDir& dir, std::vector<std::string> args) {
  static int n = 0;
  args.insert(args.begin(), {JOBCTL_BIN, "--db", dsn});
  test::Process p(args, {"JOBCTL_STORE_TIMEOUT=5s"}, dir, "jobctl-" + std::to_string(++n));
  int code = p.wait(std::chrono::seconds(120));
  return {code, p.out(), p.err()};
}

}  // namespace

TEST_CASE("failover: jobctl and agents carry on when the synchronous standby is promoted") {
  if (test::test_backend() != config::Backend::postgres) return;  // PostgreSQL's own
  test::TempDir dir;
  PgPair pg(dir);
  REQUIRE(run_during_failover(pg.dsn(), dir, {"init"}).code == 0);
  std::string ledger = dir.file("ledger"), ticks = dir.file("ticks");
  auto agent = [&](const std::string& name) {
    return std::make_unique<test::Process>(
        std::vector<std::string>{JOBAGENT_BIN, "--db", pg.dsn(), "--name", name, "--lease", "3s", "--poll-interval",
                                 "200ms", "-c", "4"},
        std::vector<std::string>{"JOBCTL_STORE_TIMEOUT=5s", "XDG_RUNTIME_DIR=" + dir.path()}, dir, name);
  };
  auto a = agent("a"), b = agent("b");
  auto job = [&] { return "sleep 0.3; echo $JOB_ID $JOB_IDEMPOTENCY_KEY >> " + ledger; };
  std::vector<std::string> ids;
  for (int i = 0; i < 30; ++i) {
    auto r = run_during_failover(pg.dsn(), dir, {"submit", "--retries", "10", "--retry-delay", "1s", "--", job()});
    REQUIRE(r.code == 0);
    ids.push_back(test::trim(r.out));
  }
  auto tick = run_during_failover(pg.dsn(), dir, {"submit", "--cron", "* * * * * *", "--", "echo $JOB_SCHEDULED_AT >> " + ticks});
  REQUIRE(tick.code == 0);
  test::eventually([&] { return test::lines(test::read_file(ticks)).size() >= 3; }, "the schedule to fire");

  pg.fail_over();
  size_t ticks_at_failover = test::lines(test::read_file(ticks)).size();
  // jobctl reaches the new primary through the same DSN.
  for (int i = 0; i < 10; ++i) {
    auto r = run_during_failover(pg.dsn(), dir, {"submit", "--retries", "10", "--retry-delay", "1s", "--", job()});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    ids.push_back(test::trim(r.out));
  }
  for (const auto& id : ids) CHECK(run_during_failover(pg.dsn(), dir, {"wait", "--timeout", "120s", id}).code == 0);
  // The schedule goes on under a leader on the new primary.
  test::eventually([&] { return test::lines(test::read_file(ticks)).size() >= ticks_at_failover + 3; },
                   "the schedule to fire after the failover");

  // Nothing acknowledged was lost; a job run twice ran under its one key.
  std::map<std::string, std::set<std::string>> keys;
  for (const auto& line : test::lines(test::read_file(ledger))) {
    auto sp = line.find(' ');
    keys[line.substr(0, sp)].insert(line.substr(sp + 1));
  }
  for (const auto& id : ids) {
    CAPTURE(id);
    REQUIRE(keys.count(id) == 1);
    CHECK(keys[id].size() == 1);
  }
  // Nothing stuck: only the schedule's current occurrence may be running.
  for (const auto& j : json::parse(run_during_failover(pg.dsn(), dir, {"ls", "--status", "running", "-o", "json"}).out))
    CHECK(j["id"] == test::trim(tick.out));
  std::set<std::string> occurrences;
  size_t twice = 0;
  for (const auto& t : test::lines(test::read_file(ticks))) twice += occurrences.insert(t).second ? 0 : 1;
  CHECK(twice == 0);  // no occurrence ran twice
}

TEST_CASE("failover: a commit the standby never confirms is exit 5 saying its outcome is unknown, and it was saved") {
  if (test::test_backend() != config::Backend::postgres) return;  // PostgreSQL's own
  test::TempDir dir;
  PgPair pg(dir);
  REQUIRE(run_during_failover(pg.dsn(), dir, {"init"}).code == 0);
  pg.freeze_standby();
  // The commit reaches the primary, which waits for the standby; jobctl
  // gives up after JOBCTL_STORE_TIMEOUT. It said the store was unreachable,
  // and a script that retried made the job twice (a tester).
  auto lost = run_during_failover(pg.dsn(), dir, {"submit", "--idempotency-key", "deploy-7", "--", "true"});
  pg.thaw_standby();
  CHECK(lost.code == 5);
  CHECK_MESSAGE(lost.err.find("the outcome is unknown: the change may or may not have been saved") != std::string::npos,
                lost.err);
  CHECK(lost.err.find("--idempotency-key") != std::string::npos);
  auto listed = json::parse(run_during_failover(pg.dsn(), dir, {"ls", "-o", "json"}).out);
  CHECK(listed.size() == 1);  // committed on the primary all the same
  // The retry the hint suggests makes no second job.
  auto again = run_during_failover(pg.dsn(), dir, {"submit", "--idempotency-key", "deploy-7", "--", "true"});
  CHECK(again.code == 0);
  CHECK(json::parse(run_during_failover(pg.dsn(), dir, {"ls", "-o", "json"}).out).size() == 1);
}

TEST_CASE("failover: doctor fails the store while commits wait for a synchronous standby that does not answer") {
  if (test::test_backend() != config::Backend::postgres) return;  // PostgreSQL's own
  test::TempDir dir;
  PgPair pg(dir);
  REQUIRE(run_during_failover(pg.dsn(), dir, {"init"}).code == 0);
  auto replication = [&] {
    auto r = run_during_failover(pg.dsn(), dir, {"doctor", "-o", "json"});
    for (const auto& f : json::parse(r.out))
      if (f["check"] == "replication") return std::make_pair(r.code, f);
    FAIL("no replication finding: " << r.out);
    return std::make_pair(r.code, json{});
  };
  auto healthy = replication();
  CHECK(healthy.first == 0);
  CHECK(healthy.second["status"] == "ok");
  CHECK_MESSAGE(healthy.second["detail"].get<std::string>().find("1 of 1 streaming") != std::string::npos,
                healthy.second.dump());

  // Reads still answer and every other finding is ok: doctor said all was
  // well while no write could commit.
  pg.freeze_standby();
  test::Process held({JOBCTL_BIN, "--db", pg.dsn(), "submit", "--", "true"}, {"JOBCTL_STORE_TIMEOUT=60s"}, dir,
                     "held-submit");
  json finding;
  test::eventually(
      [&] {
        auto [code, f] = replication();
        finding = f;
        return code == 1 && f["status"] == "fail";
      },
      "doctor to see the commit waiting for the standby");
  CHECK_MESSAGE(finding["detail"].get<std::string>().find("1 commit is waiting for a synchronous standby") !=
                    std::string::npos,
                finding.dump());
  CHECK(finding["hint"].get<std::string>().find("synchronous_standby_names") != std::string::npos);
  pg.thaw_standby();
  CHECK(held.wait() == 0);
  CHECK(replication().first == 0);
}
