// Coming from cron: jobctl crontab import makes a schedule per entry, the
// same file twice changes nothing, --prune and --dry-run; export prints
// the schedules back as a crontab.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/fixtures.hpp"

using namespace jobctl;
using nlohmann::json;
using test::run_jobctl;

namespace {

const std::string kCrontab = R"(# m h dom mon dow command
MAILTO=ops@example.com
GREETING = "hello world"
0 3 * * * echo "$GREETING"
CRON_TZ=Europe/Berlin
@daily backup.sh --full
*/15 9-17 * * 1-5 date +\%s
@reboot start-things.sh
)";

// The schedules, by command.
std::map<std::string, json> schedules(const test::TestDb& db, const test::TempDir& dir) {
  std::map<std::string, json> out;
  for (const auto& j : json::parse(run_jobctl(db, dir, {"schedules", "ls", "-o", "json"}).out))
    out[j["command"].get<std::string>()] = j;
  return out;
}

}  // namespace

TEST_CASE("crontab: import makes a schedule per entry with its environment and zone, and again changes nothing") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto first = run_jobctl(db, dir, {"crontab", "import", "-"}, kCrontab);
  CHECK(first.code == 0);
  CHECK(first.err.find("line 2 skipped: MAILTO") != std::string::npos);
  CHECK(first.err.find("line 8 skipped: @reboot") != std::string::npos);
  CHECK(first.err.find("3 added, 0 unchanged") != std::string::npos);
  auto s = schedules(db, dir);
  REQUIRE(s.size() == 3);
  const json& echo = s.at("echo \"$GREETING\"");
  CHECK(echo["schedule"]["cron"] == "0 3 * * *");
  CHECK(echo["schedule"]["tz"] == "UTC");
  CHECK(echo["env"] == json{{"GREETING", "hello world"}});
  CHECK(s.at("backup.sh --full")["schedule"]["cron"] == "@daily");
  CHECK(s.at("backup.sh --full")["schedule"]["tz"] == "Europe/Berlin");
  CHECK(s.at("date +%s")["schedule"]["cron"] == "*/15 9-17 * * 1-5");

  // The same file again: nothing new.
  auto again = run_jobctl(db, dir, {"crontab", "import", "-"}, kCrontab);
  CHECK(again.code == 0);
  CHECK(again.err.find("0 added, 3 unchanged, 0 removed") != std::string::npos);
  CHECK(schedules(db, dir).size() == 3);

  // An entry changed: --dry-run says what --prune would do, and does nothing.
  std::string edited = kCrontab;
  edited.replace(edited.find("@daily"), 6, "@weekly");
  auto plan = run_jobctl(db, dir, {"crontab", "import", "--prune", "--dry-run", "-o", "json", "-"}, edited);
  CHECK(plan.code == 0);
  auto p = json::parse(plan.out);
  REQUIRE(p["added"].size() == 1);
  CHECK(p["added"][0]["cron"] == "@weekly");
  CHECK(p["removed"] == json::array({s.at("backup.sh --full")["id"]}));
  CHECK(p["unchanged"].size() == 2);
  CHECK(schedules(db, dir).at("backup.sh --full")["schedule"]["cron"] == "@daily");
  auto pruned = run_jobctl(db, dir, {"crontab", "import", "--prune", "-"}, edited);
  CHECK(pruned.code == 0);
  CHECK(schedules(db, dir).at("backup.sh --full")["schedule"]["cron"] == "@weekly");
  CHECK(schedules(db, dir).size() == 3);

  // The entry pruned comes back when its line does (the schedule restored),
  // and --prune touches only its own queue's imports.
  auto back = run_jobctl(db, dir, {"crontab", "import", "--prune", "-"}, kCrontab);
  CHECK(back.code == 0);
  CHECK(back.err.find("1 added, 2 unchanged, 1 removed") != std::string::npos);
  CHECK(schedules(db, dir).at("backup.sh --full")["schedule"]["cron"] == "@daily");
  CHECK(run_jobctl(db, dir, {"crontab", "import", "--queue", "other", "--prune", "-"}, "@hourly other.sh\n").code == 0);
  CHECK(schedules(db, dir).size() == 4);
  CHECK(run_jobctl(db, dir, {"crontab", "import", "--queue", "bad queue", "-"}, "@hourly x.sh\n").code == 2);

  // What cannot be read: exit 2 naming the line, and nothing imported.
  auto bad = run_jobctl(db, dir, {"crontab", "import", "-"}, "0 3 * * * true\n61 * * * * late.sh\n");
  CHECK(bad.code == 2);
  CHECK(bad.err.rfind("jobctl: error: line 2: ", 0) == 0);
  auto percent = run_jobctl(db, dir, {"crontab", "import", "-"}, "0 3 * * * mail -s hi me%body\n");
  CHECK(percent.code == 2);
  CHECK(percent.err.find("unescaped %") != std::string::npos);
  CHECK(run_jobctl(db, dir, {"crontab", "import", "-"}, "0 3 * * *\n").code == 2);
  CHECK(schedules(db, dir).size() == 4);

  // Export: a crontab again, each entry under a comment naming its job.
  auto exported = run_jobctl(db, dir, {"crontab", "export"});
  CHECK(exported.code == 0);
  CHECK(exported.out.find("CRON_TZ=Europe/Berlin\n") != std::string::npos);
  // (GREETING is set for every entry after it, as in cron.)
  CHECK(exported.out.find("@daily export GREETING='hello world'; backup.sh --full\n") != std::string::npos);
  CHECK(exported.out.find("*/15 9-17 * * 1-5 export GREETING='hello world'; date +\\%s\n") != std::string::npos);
  CHECK(exported.out.find("export GREETING='hello world'; echo \"$GREETING\"") != std::string::npos);
  // Which imports into a fresh store as the same schedules.
  test::TempDir other_dir;
  test::TestDb other(other_dir);
  CHECK(run_jobctl(other, other_dir, {"crontab", "import", "-"}, exported.out).code == 0);
  CHECK(schedules(other, other_dir).size() == 4);
}

TEST_CASE("crontab: export keeps a name or a command of several lines from writing crontab lines of its own") {
  // Found by a tester: a schedule's name holding a newline wrote a working
  // crontab line after its comment, which anyone who may submit could
  // put in the crontab of whoever exports; a command of several lines
  // was cut into lines that are no crontab entries.
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string marker = dir.file("pwned");
  test::submit(db, dir, {"--name", "nightly\n* * * * * touch " + marker + " #", "--cron", "0 3 * * *", "--", "true"});
  test::submit(db, dir, {"--cron", "0 4 * * *", "--", "echo a\necho b"});
  test::submit(db, dir, {"--cron", "0 5 * * *", "--env", "NOTE=two\nlines", "--", "true"});
  auto exported = run_jobctl(db, dir, {"crontab", "export"});
  REQUIRE(exported.code == 0);
  CAPTURE(exported.out);
  // Every line is a comment, a variable, or one of the schedules.
  std::vector<std::string> entries;
  for (const auto& line : test::lines(exported.out))
    if (!line.empty() && line[0] != '#' && line.rfind("CRON_TZ=", 0) != 0) entries.push_back(line);
  CHECK(entries == std::vector<std::string>{"0 3 * * * true"});
  CHECK(exported.out.find("# nightly\\n* * * * * touch " + marker) != std::string::npos);
  CHECK(exported.out.find("# not a crontab line (a command of several lines): 0 4 * * * echo a\\necho b\n") !=
        std::string::npos);
  // What it prints imports into a fresh store as the one schedule it holds.
  test::TempDir other_dir;
  test::TestDb other(other_dir);
  CHECK(run_jobctl(other, other_dir, {"crontab", "import", "-"}, exported.out).code == 0);
  CHECK(schedules(other, other_dir).size() == 1);
}
