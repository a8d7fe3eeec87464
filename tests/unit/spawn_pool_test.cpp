// The supervisor's starters on their own, with starts the test holds: they
// start side by side, a start that waits holds up no other's result, and
// stop_taking() drops what no starter took while the starts under way go on.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

#include "common/exec/spawn_pool.hpp"
#include "common/util/error.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;

namespace {

// Starts that return their request's text as a pid, and wait while the
// test holds that text.
struct HeldStarts {
  std::mutex mu;
  std::condition_variable changed;
  std::set<std::string> held, running;
  std::atomic<int> calls{0};

  pid_t start(const std::string& text) {
    ++calls;
    std::unique_lock lock(mu);
    running.insert(text);
    changed.notify_all();
    changed.wait(lock, [&] { return !held.count(text); });
    running.erase(text);
    if (text == "refused") throw usage_error("command not found: refused");
    return static_cast<pid_t>(std::stoi(text));
  }
  void hold(const std::string& text) {
    std::lock_guard lock(mu);
    held.insert(text);
  }
  void release(const std::string& text) {
    std::lock_guard lock(mu);
    held.erase(text);
    changed.notify_all();
  }
  bool is_running(const std::string& text) {
    std::lock_guard lock(mu);
    return running.count(text) > 0;
  }
};

bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, ms) == 1;
}

// Takes results into `got` until it holds `n`.
void take_until(exec::SpawnPool& pool, std::vector<exec::SpawnPool::Result>& got, size_t n, const std::string& what) {
  test::eventually([&] {
    for (auto& r : pool.take()) got.push_back(std::move(r));
    return got.size() >= n;
  }, what);
  REQUIRE(got.size() == n);
}

std::vector<exec::Fd> one_pipe_end(int& other) {
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  other = p[0];
  std::vector<exec::Fd> fds;
  fds.emplace_back(p[1]);
  return fds;
}

}  // namespace

TEST_CASE("exec::SpawnPool starts side by side, and a start that waits holds up no other's result") {
  HeldStarts starts;
  exec::SpawnPool pool(2, [&](const std::string& text, std::vector<exec::Fd>&) { return starts.start(text); });
  starts.hold("101");
  pool.submit(1, "101", {});
  test::eventually([&] { return starts.is_running("101"); }, "the first start under way");
  pool.submit(2, "102", {});
  pool.submit(3, "refused", {});
  // The second starter takes the next requests while the first start waits.
  std::vector<exec::SpawnPool::Result> got;
  take_until(pool, got, 2, "the two later results");
  CHECK(got[0].seq == 2);
  CHECK(got[0].nth == 2);
  CHECK(got[0].pid == 102);
  CHECK(got[1].seq == 3);
  CHECK(got[1].pid == -1);
  CHECK(got[1].code == static_cast<int32_t>(ExitCode::usage));
  CHECK(got[1].error == "command not found: refused");
  CHECK(pool.submitted() == 3);
  CHECK(pool.oldest_unanswered() == 1);  // the first is still under way
  starts.release("101");
  take_until(pool, got, 3, "the first result");
  CHECK(got[2].seq == 1);
  CHECK(got[2].nth == 1);
  CHECK(got[2].pid == 101);
  CHECK(pool.oldest_unanswered() == 4);  // none left
}

TEST_CASE("exec::SpawnPool's stop_taking drops the requests no starter took, and lets the starts under way finish") {
  HeldStarts starts;
  exec::SpawnPool pool(1, [&](const std::string& text, std::vector<exec::Fd>&) { return starts.start(text); });
  starts.hold("201");
  int under_way_peer = -1, dropped_peer = -1, late_peer = -1;
  pool.submit(1, "201", one_pipe_end(under_way_peer));
  test::eventually([&] { return starts.is_running("201"); }, "the start under way");
  pool.submit(2, "202", one_pipe_end(dropped_peer));  // the one starter is busy: nobody takes it
  pool.stop_taking();
  pool.submit(3, "203", one_pipe_end(late_peer));  // ignored
  // Their descriptors are closed at once: each pipe reads end of file.
  char c;
  for (int peer : {dropped_peer, late_peer}) {
    CHECK(readable(peer, 5000));
    CHECK(read(peer, &c, 1) == 0);
  }
  CHECK(pool.oldest_unanswered() == 1);
  starts.release("201");
  std::vector<exec::SpawnPool::Result> got;
  take_until(pool, got, 1, "the result of the start under way");
  CHECK(got[0].seq == 1);
  CHECK(got[0].pid == 201);
  CHECK(pool.oldest_unanswered() == pool.submitted() + 1);
  CHECK(starts.calls == 1);  // 202 and 203 never started
  // And the started one's descriptors are closed once it started.
  CHECK(read(under_way_peer, &c, 1) == 0);
  for (int peer : {under_way_peer, dropped_peer, late_peer}) close(peer);
}
