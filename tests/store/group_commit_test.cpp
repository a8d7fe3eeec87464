// jobctl serve's group commit (server/group_commit.cpp) over a real store:
// the requests' own threads write the groups, a lone one on its own thread.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "server/group_commit.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;

namespace {

size_t threads_of_this_process() {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                                           std::filesystem::directory_iterator()));
}

model::JobSpec later_job(const std::string& name) {
  model::JobSpec s;
  s.name = name;
  s.command.argv = {"true"};
  s.delay_us = 3'600'000'000;
  return s;
}

}  // namespace

TEST_CASE("group commit: a lone submission is written on its caller's thread, with no thread started for it") {
  // A committing thread of its own took each lone request from its
  // caller's thread and gave the answer back: two hand-overs, each a
  // wake-up of an idle core, in every POST on a quiet server.
  test::TempDir dir;
  test::TestDb db(dir);
  auto check = db.open();
  server::GroupCommit commits(config::parse_dsn(db.dsn()));
  const size_t threads = threads_of_this_process();
  auto first = commits.submit("ci-bot", {later_job("first")});
  auto second = commits.submit("ci-bot", {later_job("second")});
  CHECK(threads_of_this_process() == threads);
  REQUIRE(first.views.size() == 1);
  CHECK(first.views[0].job.spec.name == "first");
  CHECK(check->jobs().get_job(second.results.at(0).job_id)->job.spec.name == "second");
  CHECK(commits.requests() == 2);
  CHECK(commits.commits() == 2);
}

TEST_CASE("group commit: many threads' submissions are each answered, share commits, and a refused one fails alone") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto check = db.open();
  server::GroupCommit commits(config::parse_dsn(db.dsn()));
  constexpr int kThreads = 12, kEach = 10;
  std::atomic<int> answered{0}, refused{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto spec = later_job(fmt::format("t{}-{}", t, i));
        const bool refuse = t == 0;  // no agent has the label: refused
        if (refuse) spec.fan_out = model::Labels{"role=nowhere"};
        try {
          auto got = commits.submit(t % 2 ? "on-call" : "ci-bot", {spec});
          if (refuse || got.views.size() != 1 || got.views[0].job.spec.name != spec.name) ++wrong;
          ++answered;
        } catch (const Error& e) {
          if (!refuse || e.code() != ExitCode::invalid_state) ++wrong;
          ++refused;
        }
      }
    });
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(answered == (kThreads - 1) * kEach);
  CHECK(refused == kEach);
  CHECK(check->connection().query("SELECT count(*) FROM jobs").at(0).i64(0) == (kThreads - 1) * kEach);
  CHECK(commits.requests() == static_cast<uint64_t>((kThreads - 1) * kEach));
  CHECK(commits.commits() <= commits.requests());
}
