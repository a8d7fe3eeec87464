// Live output: the agent ships a running job's output (jobctl logs shows
// it before the job ends, logs --follow follows it), and jobctl run
// streams it and exits with the job's own status.
#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/fixtures.hpp"

using namespace jobctl;
using nlohmann::json;
using test::run_jobctl;

namespace {

// A shell command that waits until `path` exists.
std::string until_exists(const std::string& path) {
  return "while [ ! -e " + path + " ]; do sleep 0.05; done";
}

void touch(const std::string& path) { std::ofstream(path) << "go"; }

std::string latest_status(const test::TestDb& db, const test::TempDir& dir, const std::string& id) {
  return test::get(db, dir, id)["status"].get<std::string>();
}

}  // namespace

TEST_CASE("output: logs shows a running job's output, and logs -f follows it to the run's end and status") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  const std::string gate = dir.file("gate");
  auto id = test::submit(db, dir, {"--retries", "0", "--", "echo first; echo oops >&2; " + until_exists(gate) +
                                                            "; echo second; exit 3"});
  // Shipped while the job still runs (it waits for the gate).
  test::eventually([&] { return run_jobctl(db, dir, {"logs", id}).out == "first\n"; }, "the first line to be shipped");
  auto live = run_jobctl(db, dir, {"logs", id});
  CHECK(live.err == "oops\n");
  CHECK(latest_status(db, dir, id) == "running");
  auto live_json = json::parse(run_jobctl(db, dir, {"logs", id, "-o", "json"}).out);
  CHECK(live_json["stdout_bytes"] == 6);
  CHECK(live_json["finished_at"].is_null());

  test::Process follow({JOBCTL_BIN, "--db", db.dsn(), "logs", "-f", id}, {}, dir, "follow");
  test::eventually([&] { return follow.out() == "first\n"; }, "logs -f to print what was shipped");
  CHECK(follow.running());
  touch(gate);
  CHECK(follow.wait() == 1);  // the run failed
  CHECK(follow.out() == "first\nsecond\n");
  CHECK(follow.err().rfind("oops\n", 0) == 0);
  CHECK(follow.err().find(" dead: exited with code 3") != std::string::npos);

  auto done = json::parse(run_jobctl(db, dir, {"logs", id, "-o", "json"}).out);
  CHECK(done["stdout"] == "first\nsecond\n");
  CHECK(done["stdout_bytes"] == 13);
  CHECK(done["stderr_bytes"] == 5);
  // A finished run is followed to its end at once; a succeeded one exits 0.
  auto ok = test::submit(db, dir, {"--", "echo fine"});
  CHECK(run_jobctl(db, dir, {"wait", ok}).code == 0);
  auto again = run_jobctl(db, dir, {"logs", "--follow", ok, "--stream", "stdout"});
  CHECK(again.code == 0);
  CHECK(again.out == "fine\n");
  CHECK(run_jobctl(db, dir, {"logs", "-f", ok, "--attempt", "1"}).code == 2);
  CHECK(run_jobctl(db, dir, {"logs", "-f", ok, "-o", "json"}).code == 2);
}

TEST_CASE("output: a chatty job keeps 64 KiB in the store, and logs -f says how much it could not show") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  const std::string gate = dir.file("gate");
  // 100,001 bytes at once, then (after the gate) four more.
  auto id = test::submit(db, dir, {"--", "head -c 100000 /dev/zero | tr '\\0' a; echo; " + until_exists(gate) +
                                            "; echo end"});
  test::eventually(
      [&] {
        auto r = run_jobctl(db, dir, {"logs", id, "-o", "json"});
        return r.code == 0 && json::parse(r.out)["stdout_bytes"] == 100001;
      },
      "the 100,001 bytes to be shipped");
  auto live = json::parse(run_jobctl(db, dir, {"logs", id, "-o", "json"}).out);
  CHECK(live["stdout"].get<std::string>().size() == 65536);

  test::Process follow({JOBCTL_BIN, "--db", db.dsn(), "logs", "-f", id}, {}, dir, "follow");
  test::eventually([&] { return follow.out().size() == 65536; }, "logs -f to print the kept 64 KiB");
  touch(gate);
  CHECK(follow.wait() == 0);
  CHECK(follow.out().size() == 65536 + 4);
  CHECK(follow.out().substr(follow.out().size() - 6) == "a\nend\n");
  CHECK(follow.err() == "jobctl: [34465 bytes of stdout not kept]\n");
  auto done = json::parse(run_jobctl(db, dir, {"logs", id, "-o", "json"}).out);
  CHECK(done["stdout"].get<std::string>().size() == 65536);
  CHECK(done["stdout_bytes"] == 100005);
}

TEST_CASE("run: streams the job's stdout and stderr and exits with its code, 124 on its timeout, 128+N on a signal") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms", "--kill-grace", "1s"});
  auto three = run_jobctl(db, dir, {"run", "--retries", "0", "--", "echo out; echo err >&2; exit 3"});
  CHECK(three.code == 3);
  CHECK(three.out == "out\n");
  CHECK(three.err.rfind("err\n", 0) == 0);
  auto fine = run_jobctl(db, dir, {"run", "--", "echo fine"});
  CHECK(fine.code == 0);
  CHECK(fine.out == "fine\n");
  CHECK(fine.err.empty());
  CHECK(run_jobctl(db, dir, {"run", "--retries", "0", "--timeout", "1s", "--", "sleep 30"}).code == 124);
  CHECK(run_jobctl(db, dir, {"run", "--retries", "0", "--", "kill -9 $$"}).code == 128 + 9);
  // Each attempt of a retried job is streamed, announced on stderr.
  auto retried = run_jobctl(db, dir, {"run", "--retries", "1", "--retry-delay", "0s", "--",
                                      "echo try $JOB_ATTEMPT; [ $JOB_ATTEMPT = 2 ]"});
  CHECK(retried.code == 0);
  CHECK(retried.out == "try 1\ntry 2\n");
  CHECK(retried.err.find("attempt 2 of run") != std::string::npos);
  // What run cannot do is refused before anything is submitted.
  CHECK(run_jobctl(db, dir, {"run", "--cron", "* * * * *", "--", "true"}).code == 2);
  CHECK(run_jobctl(db, dir, {"run", "-o", "json", "--", "true"}).code == 2);
  CHECK(json::parse(run_jobctl(db, dir, {"ls", "-o", "json"}).out).size() == 5);
}

TEST_CASE("run: the first Ctrl-C cancels the job, the second detaches, and --on-each prefixes each agent's lines") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto web1 = test::start_agent(db, dir, {"--poll-interval", "100ms", "--kill-grace", "30s", "--lease", "60s", "--label", "role=web"},
                                "web-1");
  auto web2 = test::start_agent(db, dir, {"--poll-interval", "100ms", "--kill-grace", "30s", "--lease", "60s", "--label", "role=web"},
                                "web-2");
  test::eventually([&] { return json::parse(run_jobctl(db, dir, {"workers", "-o", "json"}).out).size() == 2; },
                   "the agents to register");

  test::Process cancelled({JOBCTL_BIN, "--db", db.dsn(), "run", "--", "echo started; sleep 60"}, {}, dir, "cancel");
  test::eventually([&] { return cancelled.out() == "started\n"; }, "the job to start");
  cancelled.signal(SIGINT);
  CHECK(cancelled.wait() == 130);
  CHECK(cancelled.err().find("cancelling job") != std::string::npos);
  auto jobs = json::parse(run_jobctl(db, dir, {"ls", "-o", "json"}).out);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0]["status"] == "cancelled");

  // SIGTERM, as a CI runner cancelling the step sends it, cancels the job too
  // (it exited 143 and left the job running).
  test::Process terminated({JOBCTL_BIN, "--db", db.dsn(), "run", "--", "echo started; sleep 60"}, {}, dir, "term");
  test::eventually([&] { return terminated.out() == "started\n"; }, "the job to start");
  terminated.signal(SIGTERM);
  CHECK(terminated.wait() == 143);
  CHECK(terminated.err().find("SIGTERM: cancelling job") != std::string::npos);
  jobs = json::parse(run_jobctl(db, dir, {"ls", "-o", "json"}).out);
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0]["status"] == "cancelled");
  CHECK(jobs[1]["status"] == "cancelled");
  // Under nohup, SIGHUP stays ignored: the job goes on (found in review).
  test::Process nohup({"/bin/sh", "-c",
                       "trap '' HUP; exec " + std::string(JOBCTL_BIN) + " --db '" + db.dsn() +
                           "' run -- 'echo started; sleep 1; echo done'"},
                      {}, dir, "nohup");
  test::eventually([&] { return nohup.out() == "started\n"; }, "the job to start");
  nohup.signal(SIGHUP);
  CHECK(nohup.wait() == 0);
  CHECK(nohup.out() == "started\ndone\n");

  // A job that ignores SIGTERM outlives the cancel (for --kill-grace): the
  // second Ctrl-C leaves it to run.
  test::Process detached({JOBCTL_BIN, "--db", db.dsn(), "run", "--", "trap '' TERM; echo started; sleep 60"}, {}, dir,
                         "detach");
  test::eventually([&] { return detached.out() == "started\n"; }, "the job to start");
  detached.signal(SIGINT);
  test::eventually([&] { return detached.err().find("cancelling job") != std::string::npos; }, "the cancel");
  detached.signal(SIGINT);
  CHECK(detached.wait() == 130);
  CHECK(detached.err().find("detached; job") != std::string::npos);

  // The reader of its output gone (| head -1): SIGPIPE cancels the job, as
  // the shell's pipe ends its writer; it went on running, unseen.
  test::Process piped({"/bin/bash", "-c",
                       std::string(JOBCTL_BIN) + " --db '" + db.dsn() +
                           "' run --name piped -- 'while true; do echo line; sleep 0.1; done' | head -1 >/dev/null; "
                           "echo rc=${PIPESTATUS[0]}"},
                      {}, dir, "piped");
  CHECK(piped.wait() == 0);
  CHECK_MESSAGE(piped.out() == "rc=141\n", piped.out() << piped.err());
  CHECK(piped.err().find("SIGPIPE (the output's reader is gone): cancelling job") != std::string::npos);
  CHECK_MESSAGE(piped.err().find("cannot write the output") == std::string::npos, piped.err());  // SIGPIPE said it
  test::eventually(
      [&] {
        for (const auto& j : json::parse(run_jobctl(db, dir, {"ls", "-o", "json"}).out))
          if (j["name"] == "piped") return j["status"] == "cancelled";
        return false;
      },
      "the piped job to be cancelled");

  const std::string first = dir.file("first");
  auto each = run_jobctl(db, dir, {"run", "--on-each", "role=web", "--retries", "0", "--",
                                   "if mkdir " + first + " 2>/dev/null; then echo one; exit 5; else echo other; fi"});
  CHECK(each.code == 5);  // the worst of 5 and 0
  auto out = test::lines(each.out);
  REQUIRE(out.size() == 2);
  std::sort(out.begin(), out.end());
  CHECK(((out[0] == "[web-1] one" && out[1] == "[web-2] other") ||
         (out[0] == "[web-1] other" && out[1] == "[web-2] one")));
  // A last line with no newline keeps what follows a NUL byte (it was cut there).
  auto nul = run_jobctl(db, dir, {"run", "--on-each", "role=web", "--retries", "0", "--", "printf 'tail\\000after'"});
  CHECK(nul.code == 0);
  auto tails = test::lines(nul.out);
  std::sort(tails.begin(), tails.end());
  using namespace std::string_literals;
  CHECK(tails == std::vector<std::string>{"[web-1] tail\0after"s, "[web-2] tail\0after"s});
}
