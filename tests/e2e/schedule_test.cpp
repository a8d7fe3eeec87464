// Schedules end to end: jobctl cron next, a live per-second schedule,
// leader failover under kill -9, and the overlap policy with a long job.
#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/store/admin.hpp"
#include "common/store/jobs.hpp"
#include "common/util/time.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using test::run_jobctl;

namespace {

using test::kSecond;

int64_t count(store::Store& s, const std::string& sql) { return s.connection().query(sql).at(0).i64(0); }

std::string leader_name(store::Store& s) {
  for (const auto& w : s.admin().list_workers())
    if (w.leader) return w.name;
  return "";
}

}  // namespace

TEST_CASE("cron next: prints fire times across a DST gap, and refuses a bad expression naming the field") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto r = run_jobctl(db, dir,
                      {"cron", "next", "30 2 * * *", "--tz", "America/New_York", "--from", "2026-03-07T00:00:00Z",
                       "-n", "3", "-o", "json"});
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["next"].size() == 3);
  CHECK(j["next"][0]["utc"] == "2026-03-07T07:30:00.000Z");  // EST
  CHECK(j["next"][1]["utc"] == "2026-03-08T07:00:00.000Z");  // 02:30 does not exist: 03:00 EDT
  CHECK(j["next"][2]["utc"] == "2026-03-09T06:30:00.000Z");  // EDT
  CHECK(j["elapsed_time"] == false);

  auto bad = run_jobctl(db, dir, {"cron", "next", "61 * * * *"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("minute") != std::string::npos);
  auto never = run_jobctl(db, dir, {"cron", "next", "0 0 30 2 *"});
  CHECK(never.code == 2);
  CHECK(never.err.find("never") != std::string::npos);
  auto crontz = run_jobctl(db, dir, {"cron", "next", "CRON_TZ=Europe/Berlin 0 3 * * *"});
  CHECK(crontz.code == 2);
  CHECK(crontz.err.find("--tz") != std::string::npos);
  auto zone = run_jobctl(db, dir, {"submit", "--cron", "@daily", "--tz", "Mars/Olympus", "--", "true"});
  CHECK(zone.code == 2);
  CHECK(zone.err.find("Mars/Olympus") != std::string::npos);
  // An empty zone is one rule everywhere: refused, not the host's zone in
  // one command and UTC in another.
  for (std::vector<std::string> args : {std::vector<std::string>{"cron", "next", "@daily", "--tz", ""},
                                        {"submit", "--cron", "@daily", "--tz", "", "--", "true"},
                                        {"submit", "--at", "2030-01-01 10:00", "--tz", "", "--", "true"},
                                        {"schedule", "backfill", "01J0000000000000000000000A", "--from", "2026-01-01",
                                         "--to", "2026-01-02", "--tz", ""}}) {
    auto empty = run_jobctl(db, dir, args);
    CHECK_MESSAGE(empty.code == 2, args[0]);
    CHECK(empty.err.find("--tz: the value is empty") != std::string::npos);
  }
  auto batch_tz = run_jobctl(db, dir, {"submit", "--file", "-"}, R"({"command": "true", "cron": "@daily", "tz": ""})");
  CHECK(batch_tz.code == 2);
  CHECK(batch_tz.err.find("tz") != std::string::npos);
  // Times end at the year 9999, and cron next says so.
  auto end = run_jobctl(db, dir, {"cron", "next", "0 0 1 1 *", "-n", "10000", "--from", "9990-01-01T00:00:00Z", "-o", "json"});
  CHECK(end.code == 0);
  CHECK(nlohmann::json::parse(end.out)["next"].size() == 9);
  CHECK(end.err.find("it fires only 9 times before the year 10000") != std::string::npos);
  auto store = db.open();
  CHECK(count(*store, "SELECT count(*) FROM jobs") == 0);  // nothing written
}

TEST_CASE("schedule: schedules ls lists every schedule on a host that lacks one's time zone") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto berlin = submit(db, dir, {"--cron", "0 3 * * *", "--tz", "Europe/Berlin", "--", "true"});
  auto local = submit(db, dir, {"--cron", "0 3 * * *", "--", "true"});
  // A host with older tzdata, or none: the whole list failed, as a usage error (exit 2).
  auto r = run_jobctl(db, dir, {"schedules", "ls", "-o", "json"}, "", {"TZDIR=/nonexistent"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  auto all = nlohmann::json::parse(r.out);
  REQUIRE(all.size() == 2);
  for (const auto& s : all) CHECK_FALSE(s["next_fire"].is_null());  // Berlin's: the leader's reckoning
  CHECK(run_jobctl(db, dir, {"schedules", "ls", "-o", "table"}, "", {"TZDIR=/nonexistent"}).code == 0);
  CHECK(run_jobctl(db, dir, {"schedule", "runs", berlin, "-o", "table"}, "", {"TZDIR=/nonexistent"}).code == 0);
  CHECK(run_jobctl(db, dir, {"schedule", "runs", local, "-o", "table"}, "", {"TZDIR=/nonexistent"}).code == 0);
}

TEST_CASE("schedule: a per-second schedule runs each occurrence once with its scheduled time and key") {
  test::TempDir dir;
  test::TestDb db(dir);
  std::string ledger = dir.file("ledger");
  auto sub = run_jobctl(db, dir,
                        {"submit", "--cron", "* * * * * *", "--name", "tick", "--",
                         "echo $JOB_SCHEDULED_AT $JOB_IDEMPOTENCY_KEY >> " + ledger});
  REQUIRE(sub.code == 0);
  std::string id = test::trim(sub.out);
  auto agent = test::start_agent(db, dir, {"--schedule-horizon", "2s", "--poll-interval", "100ms"});
  auto store = db.open();
  test::eventually([&] { return test::lines(test::read_file(ledger)).size() >= 5; }, "5 occurrences to run");
  agent->signal(SIGTERM);
  CHECK(agent->wait() == 0);
  std::set<std::string> seen;
  for (const auto& line : test::lines(test::read_file(ledger))) {
    auto space = line.find(' ');
    REQUIRE(space != std::string::npos);
    std::string at = line.substr(0, space), key = line.substr(space + 1);
    CHECK(at.substr(at.size() - 5) == ".000Z");  // a whole second
    CHECK(key == id + ":" + at);                 // job:occurrence
    CHECK(seen.insert(at).second);
  }
  auto runs = run_jobctl(db, dir, {"schedule", "runs", id, "-o", "json"});
  REQUIRE(runs.code == 0);
  CHECK(nlohmann::json::parse(runs.out).size() >= 5);
  auto ls = run_jobctl(db, dir, {"schedules", "ls", "-o", "table"});
  CHECK(ls.out.find("tick") != std::string::npos);
  auto upd = run_jobctl(db, dir, {"update", id, "--cron", "0 3 * * *", "--tz", "Europe/Berlin"});
  CHECK(upd.code == 0);
  CHECK(store->jobs().get_job(id)->job.version == 2);
  CHECK(count(*store, "SELECT count(*) FROM runs WHERE status = 'pending' AND job_version = 1") == 0);
}

TEST_CASE("schedule: kill -9 of the leader, twice, loses and doubles no occurrence of a per-second schedule") {
  test::TempDir dir;
  test::TestDb db(dir);
  // allow: the overlap rules are tested below; here a run the dead leader
  // held must not hold the next occurrences back.
  auto sub = run_jobctl(db, dir, {"submit", "--cron", "* * * * * *", "--overlap", "allow", "--", "true"});
  REQUIRE(sub.code == 0);
  std::string id = test::trim(sub.out);
  std::vector<std::string> flags{"--lease", "3s", "--schedule-horizon", "2s", "--poll-interval", "200ms",
                                 "--concurrency", "4"};
  auto store = db.open();
  auto a = test::start_agent(db, dir, flags, "a");
  test::eventually([&] { return leader_name(*store) == "a"; }, "agent a to lead");
  auto b = test::start_agent(db, dir, flags, "b");
  int64_t start = store->now();
  auto sleep_until = [&](int64_t at) {
    while (store->now() < at) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  };
  // 20 s in, the leader dies without a word; b takes over, and c joins.
  sleep_until(start + 20 * kSecond);
  a->signal(SIGKILL);
  a->wait();
  test::eventually([&] { return leader_name(*store) == "b"; }, "agent b to take over");
  auto c = test::start_agent(db, dir, flags, "c");
  // 45 s in, the new leader dies the same way, and c takes over.
  sleep_until(start + 45 * kSecond);
  b->signal(SIGKILL);
  b->wait();
  test::eventually([&] { return leader_name(*store) == "c"; }, "agent c to take over");
  int64_t until = start + 75 * kSecond;
  sleep_until(until);
  c->signal(SIGTERM);
  CHECK(c->wait() == 0);

  // Every second of the span has exactly one run, and it ran.
  auto rows = store->connection().query(
      "SELECT occurrence, status, count(*) OVER (PARTITION BY occurrence) FROM runs WHERE job_id = $1 "
      "AND occurrence > $2 AND occurrence <= $3 ORDER BY occurrence",
      {id, start, until - 5 * kSecond});
  std::map<int64_t, std::string> by_second;
  for (const auto& row : rows) {
    CHECK(row.i64(2) == 1);
    by_second[row.i64(0)] = row.text(1);
  }
  CHECK(by_second.size() >= 65);
  int64_t expected = by_second.begin()->first;
  int lost = 0, failed = 0;
  for (const auto& [at, status] : by_second) {
    if (at != expected) ++lost;
    expected = at + kSecond;
    if (status != "succeeded") ++failed;
  }
  CHECK(lost == 0);
  CHECK(failed == 0);
  CHECK(count(*store, "SELECT count(*) FROM runs WHERE status = 'skipped'") == 0);
}

TEST_CASE("schedule: overlap skip never runs two occurrences of a long job at once and records the skipped ones") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto sub = run_jobctl(db, dir, {"submit", "--cron", "* * * * * *", "--overlap", "skip", "--", "sleep 2.5"});
  REQUIRE(sub.code == 0);
  std::string id = test::trim(sub.out);
  auto agent = test::start_agent(db, dir, {"--schedule-horizon", "2s", "--poll-interval", "100ms", "-c", "8"});
  auto store = db.open();
  test::eventually([&] { return count(*store, "SELECT count(*) FROM runs WHERE status = 'succeeded'") >= 3; },
                   "3 occurrences to finish");
  agent->signal(SIGTERM);
  CHECK(agent->wait() == 0);
  auto attempts = store->connection().query(
      "SELECT a.started_at, a.finished_at FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.job_id = $1 "
      "AND a.finished_at IS NOT NULL ORDER BY a.started_at",
      {id});
  for (size_t i = 1; i < attempts.size(); ++i) CHECK(attempts[i].i64(0) >= attempts[i - 1].i64(1));
  auto skipped = store->connection().query(
      "SELECT error FROM runs WHERE job_id = $1 AND status = 'skipped'", {id});
  REQUIRE(skipped.size() >= 2);
  // Skipped while one ran; on a loaded machine, also occurrences that fell
  // due together between two runs (misfire latest runs the last of them).
  int overlapped = 0;
  for (const auto& row : skipped) {
    const std::string error = row.text(0);
    if (error.find("overlap skip") != std::string::npos) ++overlapped;
    else CHECK(error.find("misfire latest") != std::string::npos);
  }
  CHECK(overlapped >= 1);
}

TEST_CASE("schedule: after every agent was down, no run made ahead starts later than the misfire threshold") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto sub = run_jobctl(db, dir, {"submit", "--cron", "* * * * * *", "--misfire", "skip", "--", "true"});
  REQUIRE(sub.code == 0);
  std::string id = test::trim(sub.out);
  std::vector<std::string> flags{"--schedule-horizon", "5s", "--misfire-threshold", "1s", "--poll-interval", "100ms"};
  auto store = db.open();
  auto ran = [&] { return count(*store, "SELECT count(*) FROM runs WHERE status = 'succeeded'"); };
  auto agent = test::start_agent(db, dir, flags, "a");
  test::eventually([&] { return ran() >= 1; }, "an occurrence to run");
  agent->signal(SIGTERM);
  REQUIRE(agent->wait() == 0);
  // The runs made 5 s ahead come due with no agent up.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const int64_t before = ran();
  agent = test::start_agent(db, dir, flags, "a");
  test::eventually([&] { return ran() >= before + 2; }, "occurrences after the restart to run");
  agent->signal(SIGTERM);
  REQUIRE(agent->wait() == 0);
  // Both lateness figures are read on the store's clock, as the claim reads it.
  CHECK(count(*store, "SELECT count(*) FROM runs WHERE started_at > available_at + 1000000") == 0);
  CHECK(count(*store, "SELECT count(*) FROM runs WHERE status = 'skipped' AND error = "
                      "'missed: no agent started it in time (misfire skip)'") >= 1);
}

TEST_CASE("schedule: a schedule bounded to a window runs only inside it, and --max-runs ends one after N runs") {
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string window_ledger = dir.file("window"), counted_ledger = dir.file("counted");
  // Far enough ahead that the submit is stored before the window opens.
  const int64_t start = (util::now_micros() / kSecond + 5) * kSecond, end = start + 3 * kSecond;
  // --overlap allow: every occurrence made runs, however late the agent
  // starts them. Under overlap skip, an occurrence made a second late
  // beside the next one is missed for it (misfire latest), and counts
  // against --max-runs all the same (jobctl(1)): a loaded machine ran the
  // counted schedule once.
  auto window = run_jobctl(db, dir,
                           {"submit", "--cron", "* * * * * *", "--overlap", "allow", "--starts-at",
                            util::format_time(start), "--ends-at", util::format_time(end), "--name", "window", "--",
                            "echo $JOB_SCHEDULED_AT >> " + window_ledger});
  REQUIRE(window.code == 0);
  auto counted = run_jobctl(db, dir,
                            {"submit", "--cron", "* * * * * *", "--overlap", "allow", "--max-runs", "2", "--name",
                             "counted", "--", "echo $JOB_SCHEDULED_AT >> " + counted_ledger});
  REQUIRE(counted.code == 0);
  const std::string window_id = test::trim(window.out), counted_id = test::trim(counted.out);
  auto store = db.open();
  auto agent = test::start_agent(db, dir, {"--schedule-horizon", "2s", "--poll-interval", "100ms"});
  auto ended = [&](const std::string& id) {
    return !store->jobs().get_job(id)->job.next_fire_at &&
           count(*store, "SELECT count(*) FROM runs WHERE job_id = '" + id + "' AND finished_at IS NULL") == 0;
  };
  test::eventually([&] { return ended(window_id) && ended(counted_id); }, "both schedules to end");
  auto fired = test::lines(test::read_file(window_ledger));
  std::sort(fired.begin(), fired.end());  // two started together may append out of order
  REQUIRE(fired.size() == 4);  // start, +1 s, +2 s, +3 s: both ends included
  CHECK(fired.front() == util::format_time(start));
  CHECK(fired.back() == util::format_time(end));
  CHECK(test::lines(test::read_file(counted_ledger)).size() == 2);

  auto ls = run_jobctl(db, dir, {"schedules", "ls", "-o", "table"});
  REQUIRE(ls.code == 0);
  CHECK(ls.out.find("BOUNDS") != std::string::npos);
  CHECK(ls.out.find("2 of 2 runs") != std::string::npos);
  CHECK(ls.out.find("ended") != std::string::npos);
  auto got = nlohmann::json::parse(run_jobctl(db, dir, {"get", window_id, "-o", "json"}).out);
  CHECK(got["schedule"]["starts_at"] == util::format_time(start));
  CHECK(got["schedule"]["ends_at"] == util::format_time(end));
  CHECK(got["schedule"]["max_runs"].is_null());
  CHECK(got["schedule"]["fired"] == 4);
  CHECK(got["schedule"]["next_fire_at"].is_null());

  // A higher limit goes on from where it ended, and only so far.
  auto more = run_jobctl(db, dir, {"update", counted_id, "--max-runs", "3"});
  REQUIRE(more.code == 0);
  test::eventually([&] { return ended(counted_id) && store->jobs().get_job(counted_id)->job.fired == 3; },
                   "the third run");
  CHECK(test::lines(test::read_file(counted_ledger)).size() == 3);
  agent->signal(SIGTERM);
  CHECK(agent->wait() == 0);

  // Backfill keeps inside the window and says it cut the span.
  auto backfill = run_jobctl(db, dir,
                             {"schedule", "backfill", window_id, "--from", util::format_time(start - 10 * kSecond),
                              "--to", util::format_time(util::now_micros()), "-o", "json"});
  REQUIRE(backfill.code == 0);
  auto b = nlohmann::json::parse(backfill.out);
  CHECK(b["cut"] == true);
  CHECK(b["occurrences"] == 4);
  CHECK(b["created"] == 0);
}

TEST_CASE("schedule: bounds are read in --tz, and bad ones are refused with nothing written") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto sub = run_jobctl(db, dir,
                        {"submit", "--cron", "0 9 * * *", "--tz", "Europe/Berlin", "--starts-at", "2030-01-01 09:00",
                         "--ends-at", "2030-03-31T00:00:00Z", "--max-runs", "10", "--", "true"});
  REQUIRE(sub.code == 0);
  const std::string id = test::trim(sub.out);
  auto got = nlohmann::json::parse(run_jobctl(db, dir, {"get", id, "-o", "json"}).out);
  CHECK(got["schedule"]["starts_at"] == "2030-01-01T08:00:00.000Z");  // CET
  CHECK(got["schedule"]["ends_at"] == "2030-03-31T00:00:00.000Z");
  CHECK(got["schedule"]["max_runs"] == 10);
  CHECK(got["schedule"]["next_fire_at"] == "2030-01-01T08:00:00.000Z");
  auto store = db.open();
  const int64_t jobs = count(*store, "SELECT count(*) FROM jobs");
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  for (const auto& c : std::vector<Case>{
           {{"submit", "--cron", "@daily", "--ends-at", "2020-01-01T00:00:00Z", "--", "true"}, "in the past"},
           {{"submit", "--cron", "@daily", "--starts-at", "2031-01-01", "--ends-at", "2030-01-01", "--", "true"},
            "--ends-at is before --starts-at"},
           {{"submit", "--starts-at", "2030-01-01", "--", "true"}, "--cron"},
           {{"submit", "--cron", "@daily", "--max-runs", "0", "--", "true"}, "--max-runs: must be a whole number from 1 to"},
           {{"submit", "--cron", "@daily", "--starts-at", "next tuesday", "--", "true"}, "--starts-at"},
           {{"update", id, "--ends-at", "2029-01-01T00:00:00Z"}, "--ends-at is before --starts-at"},
       }) {
    auto r = run_jobctl(db, dir, c.args);
    CHECK_MESSAGE(r.code == 2, c.args[1]);
    CHECK_MESSAGE(r.err.find(c.says) != std::string::npos, r.err);
  }
  // Each command's help gives the range it takes: submit's from 1,
  // update's from 0, which removes the limit (submit --help showed 0 too).
  auto max_runs_help = [&](const char* command) {
    const std::string help = run_jobctl(db, dir, {command, "--help"}).out;
    const size_t at = help.find("\n  --max-runs ");
    REQUIRE(at != std::string::npos);
    return help.substr(at + 1, help.find('\n', at + 1) - at - 1);
  };
  CHECK(max_runs_help("submit").find("INT:1 to 1000000") != std::string::npos);
  CHECK(max_runs_help("update").find("INT:0 to 1000000") != std::string::npos);
  auto line = run_jobctl(db, dir, {"submit", "--file", "-"},
                         R"({"command": "true", "cron": "@daily", "ends_at": "2020-01-01T00:00:00Z"})");
  CHECK(line.code == 2);
  CHECK(line.err.find("ends_at") != std::string::npos);
  CHECK(count(*store, "SELECT count(*) FROM jobs") == jobs);
  CHECK(store->jobs().get_job(id)->job.version == 1);
  // "" removes a bound.
  REQUIRE(run_jobctl(db, dir, {"update", id, "--starts-at", "", "--max-runs", "0"}).code == 0);
  auto sc = *store->jobs().get_job(id)->job.spec.schedule;
  CHECK_FALSE(sc.starts_at_us);
  CHECK_FALSE(sc.max_runs);
  CHECK(sc.ends_at_us);
}
