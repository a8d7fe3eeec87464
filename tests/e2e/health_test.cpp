// jobctl stats and check from the command line, against a real agent.
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "common/store/migrations.hpp"
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

TEST_CASE("gc: the command and the leader's --gc-older-than remove finished history") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  auto first = submit(db, dir, {"--", "true"});
  CHECK(run_jobctl(db, dir, {"wait", first}).code == 0);
  auto none = json::parse(run_jobctl(db, dir, {"gc", "--older-than", "1h", "-o", "json"}).out);
  CHECK(none["runs"] == 0);
  std::this_thread::sleep_for(1100ms);
  auto r = json::parse(run_jobctl(db, dir, {"gc", "--older-than", "1s", "-o", "json"}).out);
  CHECK(r["runs"] == 1);
  CHECK(r["jobs"] == 1);
  CHECK(run_jobctl(db, dir, {"get", first}).code == 3);
  CHECK(run_jobctl(db, dir, {"gc"}).code == 2);  // --older-than is required
  agent->signal(SIGTERM);
  CHECK(agent->wait() == 0);

  // The leader does it by itself.
  auto leader = test::start_agent(db, dir, {"--poll-interval", "100ms", "--gc-older-than", "1s", "--gc-every", "1s"});
  auto second = submit(db, dir, {"--", "true"});
  CHECK(run_jobctl(db, dir, {"wait", second}).code == 0);
  test::eventually([&] { return run_jobctl(db, dir, {"get", second}).code == 3; }, "the leader's gc");
}

TEST_CASE("progress: a job reports progress and a checkpoint, and the next attempt resumes from it") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  std::string jobctl = JOBCTL_BIN, seen = dir.file("seen");
  // Attempt 1 gets half way, checkpoints, and is killed; attempt 2 starts
  // from the checkpoint.
  std::string script =
      "if [ -z \"$JOB_CHECKPOINT\" ]; then " + jobctl +
      " progress 0.5 --message halfway --checkpoint '{\"step\": 5}' || exit 3; kill -9 $$; fi; "
      "echo \"$JOB_ATTEMPT $JOB_CHECKPOINT\" > " + seen + "; " + jobctl + " progress 100% --message done";
  auto id = submit(db, dir, {"--retries", "1", "--retry-delay", "10ms", "--", script});
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 0);
  CHECK(test::trim(test::read_file(seen)) == "2 {\"step\":5}");
  auto run = test::get(db, dir, id)["run"];
  CHECK(run["attempts"] == 2);
  CHECK(run["progress"] == 1.0);
  CHECK(run["progress_message"] == "done");
  CHECK(run["checkpoint"]["step"] == 5);
  CHECK(run_jobctl(db, dir, {"get", id, "-o", "table"}).out.find("100% done") != std::string::npos);

  // From outside the attempt: refused.
  std::string run_id = run["id"];
  auto stale = run_jobctl(db, dir, {"progress", "0.1"}, "", {"JOB_RUN_ID=" + run_id, "JOB_FENCE_TOKEN=1"});
  CHECK(stale.code == 4);
  CHECK(stale.err.find("is succeeded, not running") != std::string::npos);
  auto outside = run_jobctl(db, dir, {"progress", "0.1"});
  CHECK(outside.code == 2);
  CHECK(outside.err.find("JOB_RUN_ID is not set") != std::string::npos);
  auto bad = run_jobctl(db, dir, {"progress", "1.5"}, "", {"JOB_RUN_ID=" + run_id, "JOB_FENCE_TOKEN=1"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("out of range") != std::string::npos);
  // A checkpoint must fit in the next attempt's environment.
  std::ofstream(dir.file("big.json")) << "\"" << std::string(70 * 1024, 'x') << "\"";
  auto big = run_jobctl(db, dir, {"progress", "0.1", "--checkpoint", "@" + dir.file("big.json")}, "",
                        {"JOB_RUN_ID=" + run_id, "JOB_FENCE_TOKEN=1"});
  CHECK(big.code == 2);
  CHECK(big.err.find("more than 64 KiB") != std::string::npos);

  // A job's own --env JOBCTL_DB is kept.
  std::string own = dir.file("own");
  auto mine = submit(db, dir, {"--env", "JOBCTL_DB=sqlite:/elsewhere.db", "--", "echo $JOBCTL_DB > " + own});
  CHECK(run_jobctl(db, dir, {"wait", mine}).code == 0);
  CHECK(test::trim(test::read_file(own)) == "sqlite:/elsewhere.db");
}

TEST_CASE("progress: a stale fence is refused while the run is running") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  std::string go = dir.file("go");
  auto id = submit(db, dir, {"--", "touch " + go + ".started; while [ ! -e " + go + " ]; do sleep 0.05; done"});
  test::eventually([&] { return std::filesystem::exists(go + ".started"); }, "the job to start");
  auto run = test::get(db, dir, id)["run"];
  std::string run_id = run["id"];
  int fence = run["fence"];
  auto env = [&](int f) { return std::vector<std::string>{"JOB_RUN_ID=" + run_id, "JOB_FENCE_TOKEN=" + std::to_string(f)}; };
  CHECK(run_jobctl(db, dir, {"progress", "0.25", "--message", "a quarter"}, "", env(fence)).code == 0);
  CHECK(test::get(db, dir, id)["run"]["progress"] == 0.25);
  auto stale = run_jobctl(db, dir, {"progress", "0.3"}, "", env(fence - 1));
  CHECK(stale.code == 4);
  CHECK(stale.err.find("stale fence") != std::string::npos);
  CHECK(test::get(db, dir, id)["run"]["progress"] == 0.25);

  // A job whose agent is gone writes to a stderr pipe nobody reads: the
  // refusal still ends in exit 4, not in SIGPIPE.
  int gone[2];
  REQUIRE(pipe(gone) == 0);
  close(gone[0]);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    signal(SIGPIPE, SIG_DFL);  // as a job gets it from its agent
    dup2(gone[1], STDOUT_FILENO);
    dup2(gone[1], STDERR_FILENO);
    std::string run_env = "JOB_RUN_ID=" + run_id, fence_env = "JOB_FENCE_TOKEN=" + std::to_string(fence - 1);
    putenv(run_env.data());
    putenv(fence_env.data());
    execl(JOBCTL_BIN, JOBCTL_BIN, "--db", db.dsn().c_str(), "progress", "0.3", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(gone[1]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 4);
  std::ofstream(go).put('x');
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 0);
}

TEST_CASE("ls --stuck: a quiet running job is listed, one that reports progress is not") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  std::string go = dir.file("go"), jobctl = JOBCTL_BIN;
  auto quiet = submit(db, dir, {"--name", "quiet", "--", "while [ ! -e " + go + " ]; do sleep 0.05; done"});
  auto busy = submit(db, dir, {"--name", "busy", "--", "while [ ! -e " + go + " ]; do " + jobctl +
                                                           " progress 0.5 --message spinning; sleep 0.2; done"});
  test::eventually([&] { return test::get(db, dir, busy)["run"]["progress"] == 0.5; }, "busy's first report");
  std::this_thread::sleep_for(5500ms);
  auto listed = json::parse(run_jobctl(db, dir, {"ls", "--stuck", "--stuck-after", "5s", "-o", "json"}).out);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["id"] == quiet);
  CHECK(listed[0]["stuck"].get<std::string>().find("without a progress report") != std::string::npos);
  CHECK(run_jobctl(db, dir, {"ls", "--stuck"}).out.find(quiet) == std::string::npos);  // default: 1h
  CHECK(run_jobctl(db, dir, {"ls", "--stuck-after", "1s"}).code == 2);  // needs --stuck
  std::ofstream(go).put('x');
  CHECK(run_jobctl(db, dir, {"wait", quiet}).code == 0);
  CHECK(run_jobctl(db, dir, {"wait", busy}).code == 0);
}

TEST_CASE("doctor: exit 0 on a healthy store, 1 with the fix when the schema is behind") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto ok = run_jobctl(db, dir, {"doctor", "-o", "json"});
  CHECK(ok.code == 0);
  auto findings = json::parse(ok.out);
  CHECK(findings.size() >= 4);
  for (const auto& f : findings) CHECK(f["status"] == "ok");

  test::TempDir old_dir;
  test::TestDb old(old_dir, store::kSchemaVersion - 1);
  auto behind = run_jobctl(old, old_dir, {"doctor", "-o", "table"});
  CHECK(behind.code == 1);
  CHECK(behind.out.find(fmt::format("version {}, this build needs {}", store::kSchemaVersion - 1,
                                    store::kSchemaVersion)) != std::string::npos);
  CHECK(behind.out.find("run `jobctl init` to upgrade it") != std::string::npos);
}

TEST_CASE("doctor: a store that refuses writes, or a damaged file, is a finding and exit 1, not an error") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto finding = [](const std::string& out, const std::string& check) {
    for (const auto& f : json::parse(out))
      if (f["check"] == check) return f;
    return json();
  };
  if (test::test_backend() == config::Backend::postgres) {
    // As a standby, or a session made read-only, refuses every write.
    test::Process r({JOBCTL_BIN, "--db", db.dsn() + " options='-c default_transaction_read_only=on'", "doctor", "-o",
                     "json"},
                    {}, dir, "read-only");
    CHECK_MESSAGE(r.wait() == 1, r.err());
    auto writes = finding(r.out(), "writes");
    CHECK(writes["status"] == "fail");
    CHECK(writes["detail"] == "the session is read-only");
    return;
  }
  const std::string file = db.dsn().substr(std::string("sqlite:").size());
  if (geteuid() == 0 && std::filesystem::exists("/usr/bin/setpriv")) {
    // Readable, not writable, by another user: every submit failed, and doctor said ok.
    const std::string shared = "/tmp/jobctl-doctor-" + std::to_string(getpid());
    std::filesystem::create_directory(shared);
    std::filesystem::permissions(shared, std::filesystem::perms::all);
    std::filesystem::copy_file(file, shared + "/jobs.db");
    auto r = test::Process({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", JOBCTL_BIN, "--db",
                            "sqlite:" + shared + "/jobs.db", "doctor", "-o", "json"},
                           {}, dir, "nobody");
    const int code = r.wait();
    const std::string out = r.out();
    std::filesystem::permissions(shared, std::filesystem::perms::owner_all);
    std::filesystem::remove_all(shared);
    CHECK_MESSAGE(code == 1, r.err());
    CHECK(finding(out, "writes")["status"] == "fail");
  }
  // Damaged: doctor failed with SQLite's error alone (exit 5).
  std::string batch;
  for (int i = 0; i < 2000; ++i) batch += fmt::format("{{\"name\": \"job-{}\", \"command\": \"true\"}}\n", i);
  std::ofstream(dir.file("batch.jsonl")) << batch;
  REQUIRE(run_jobctl(db, dir, {"submit", "--file", dir.file("batch.jsonl")}).code == 0);
  {
    sqlite3* h = nullptr;
    REQUIRE(sqlite3_open(file.c_str(), &h) == SQLITE_OK);
    REQUIRE(sqlite3_exec(h, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(h);
  }
  const auto size = std::filesystem::file_size(file);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f << std::string(16384, '\x55');
  }
  auto r = run_jobctl(db, dir, {"doctor", "-o", "json"});
  CHECK_MESSAGE(r.code == 1, r.err);
  auto integrity = finding(r.out, "integrity");
  CHECK(integrity["status"] == "fail");
  CHECK(integrity["hint"].get<std::string>().find("restore from a backup") != std::string::npos);
  CHECK(integrity["detail"].get<std::string>().find('\n') == std::string::npos);
}

namespace {

// `jobctl top` on a pseudo-terminal, redrawing every 200 ms.
struct TopOnPty {
  int master = -1;
  pid_t pid = -1;
  std::string seen;  // everything it wrote

  explicit TopOnPty(test::TestDb& db) {
    pid = forkpty(&master, nullptr, nullptr, nullptr);
    REQUIRE(pid >= 0);
    if (pid == 0) {
      execl(JOBCTL_BIN, JOBCTL_BIN, "--db", db.dsn().c_str(), "top", "--interval", "200ms", static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~TopOnPty() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (master >= 0) close(master);
  }
  TopOnPty(const TopOnPty&) = delete;
  TopOnPty& operator=(const TopOnPty&) = delete;

  // Whether `what` was written, within a hang guard's 60 s.
  bool read_until(const std::string& what) {
    auto give_up = std::chrono::steady_clock::now() + 60s;
    while (seen.find(what) == std::string::npos && std::chrono::steady_clock::now() < give_up) {
      pollfd p{master, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      ssize_t n = read(master, buf, sizeof buf);
      if (n <= 0) break;
      seen.append(buf, static_cast<size_t>(n));
    }
    return seen.find(what) != std::string::npos;
  }

  // Types q: its exit status once it has restored the terminal, -1 if it was killed.
  int quit() {
    REQUIRE(write(master, "q", 1) == 1);
    CHECK(read_until("\033[?1049l"));
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
};

}  // namespace

TEST_CASE("top: one frame with --once, a refusal without a terminal, and a clean terminal after q") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"}, "top-agent");
  auto id = submit(db, dir, {"--name", "broken", "--retries", "0", "--", "echo nope; exit 9"});
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 1);
  auto once = run_jobctl(db, dir, {"top", "--once"});
  REQUIRE(once.code == 0);
  for (const char* part : {"QUEUES, over the last 15m", "WORKERS", "top-agent", "RECENT FAILURES", "broken",
                           "exited with code 9"}) {
    CAPTURE(part);
    CHECK(once.out.find(part) != std::string::npos);
  }
  CHECK(once.out.find('\033') == std::string::npos);
  auto no_tty = run_jobctl(db, dir, {"top"});
  CHECK(no_tty.code == 2);
  CHECK(no_tty.err.find("jobctl top needs a terminal") != std::string::npos);

  // On a terminal (a pty): alternate screen in, q, and everything undone.
  TopOnPty top(db);
  REQUIRE(top.read_until("RECENT FAILURES"));
  CHECK(top.seen.find("\033[?1049h") != std::string::npos);
  CHECK(top.quit() == 0);
  auto tail = top.seen.substr(top.seen.rfind("\033[?25h"));
  CHECK(tail.rfind("\033[?25h\033[?1049l", 0) == 0);  // cursor shown, main screen back: the last thing written
}

TEST_CASE("top: after its SQLite file is deleted, it says the store does not answer, and reads the new file once made") {
  if (test::test_backend() != config::Backend::sqlite) return;  // a file of its own
  test::TempDir dir;
  test::TestDb db(dir);
  submit(db, dir, {"--queue", "old-queue", "--", "true"});
  TopOnPty top(db);
  REQUIRE(top.read_until("old-queue"));
  // An operator resets the store: top went on drawing the deleted file.
  // Until the new one is made, top says the store does not answer, and
  // goes on.
  const std::string file = db.dsn().substr(std::string("sqlite:").size());
  for (const char* end : {"", "-wal", "-shm"}) std::filesystem::remove(file + end);
  CHECK(top.read_until("the store does not answer: no store at"));
  REQUIRE(run_jobctl(db, dir, {"init"}).code == 0);
  submit(db, dir, {"--queue", "new-queue", "--", "true"});
  CHECK(top.read_until("new-queue"));
  CHECK(top.quit() == 0);
}

TEST_CASE("check: --max-failure-rate, --max-ready and --max-stuck trip per queue") {
  test::TempDir dir;
  test::TestDb db(dir);
  // Nothing yet: every gate holds.
  auto ok = run_jobctl(db, dir, {"check", "--max-failure-rate", "0", "--max-ready", "0", "--max-stuck", "0"});
  CHECK(ok.code == 0);
  CHECK(ok.out == "ok\n");

  // Three runs due in a queue no agent serves: ready.
  for (int i = 0; i < 3; ++i) submit(db, dir, {"--queue", "backlog", "--", "true"});
  auto ready = run_jobctl(db, dir, {"check", "--max-ready", "2"});
  CHECK(ready.code == 1);
  CHECK(ready.out == "FAILED: queue backlog has 3 runs ready and waiting (--max-ready 2)\n");
  CHECK(run_jobctl(db, dir, {"check", "--max-ready", "3"}).code == 0);
  CHECK(run_jobctl(db, dir, {"check", "--max-ready", "0", "--queue", "default"}).code == 0);  // per --queue

  // One attempt of two failed in the default queue: 50 %.
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  CHECK(run_jobctl(db, dir, {"wait", submit(db, dir, {"--retries", "0", "--", "exit 1"})}).code == 1);
  CHECK(run_jobctl(db, dir, {"wait", submit(db, dir, {"--", "true"})}).code == 0);
  auto rate = run_jobctl(db, dir, {"check", "--max-failure-rate", "10"});
  CHECK(rate.code == 1);
  CHECK(rate.out == "FAILED: queue default: 50.0% of the attempts of the last 15m failed, 1 of 2 (--max-failure-rate 10)\n");
  CHECK(run_jobctl(db, dir, {"check", "--max-failure-rate", "50"}).code == 0);

  // A quiet running job is stuck after --stuck-after.
  const std::string go = dir.file("go");
  auto quiet = submit(db, dir, {"--", "while [ ! -e " + go + " ]; do sleep 0.05; done"});
  test::eventually([&] { return test::get(db, dir, quiet)["run"]["status"] == "running"; }, "the quiet job runs");
  std::this_thread::sleep_for(2100ms);
  auto stuck = run_jobctl(db, dir, {"check", "--max-stuck", "0", "--stuck-after", "2s"});
  CHECK(stuck.code == 1);
  CHECK(stuck.out.find("FAILED: 1 running runs look stuck (--max-stuck 0), the longest ") == 0);
  CHECK(stuck.out.find("without a progress report") != std::string::npos);
  CHECK(run_jobctl(db, dir, {"check", "--max-stuck", "0"}).code == 0);  // default --stuck-after 1h
  CHECK(run_jobctl(db, dir, {"check", "--max-stuck", "1", "--stuck-after", "2s"}).code == 0);

  // Bad values: exit 2, nothing read.
  CHECK(run_jobctl(db, dir, {"check", "--max-failure-rate", "101"}).code == 2);
  CHECK(run_jobctl(db, dir, {"check", "--max-failure-rate", "nan"}).code == 2);
  CHECK(run_jobctl(db, dir, {"check", "--max-ready", "-1"}).code == 2);
  auto lonely = run_jobctl(db, dir, {"check", "--max-dlq", "5", "--stuck-after", "2s"});
  CHECK(lonely.code == 2);
  CHECK(lonely.err.find("--stuck-after goes with --max-stuck") != std::string::npos);
  CHECK(run_jobctl(db, dir, {"check", "--max-stuck", "0", "--stuck-after", "soon"}).code == 2);
  std::ofstream(go).put('x');
  CHECK(run_jobctl(db, dir, {"wait", quiet}).code == 0);
}
