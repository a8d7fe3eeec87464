#include "server/group_commit.hpp"

#include "common/util/error.hpp"

namespace jobctl::server {
namespace {

// A group takes waiting requests until it holds this many jobs (a larger
// request goes alone): one transaction stays short.
constexpr size_t kGroupJobs = 5000;

}  // namespace

GroupCommit::GroupCommit(config::Dsn dsn) : dsn_(std::move(dsn)) {}

GroupCommit::~GroupCommit() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

GroupCommit::Submitted GroupCommit::submit(std::string actor, std::vector<model::JobSpec> specs) {
  Pending p{store::Submission{std::move(actor), std::move(specs)}, {}};
  auto answer = p.promise.get_future();
  {
    std::lock_guard lock(mutex_);
    // Started by the first request, from a worker thread: it inherits the
    // worker's signal mask (serve.cpp leaves SIGTERM to its stopper thread).
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    queue_.push_back(std::move(p));
  }
  wake_.notify_one();
  return answer.get();
}

void GroupCommit::run() {
  for (;;) {
    std::vector<Pending> group;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing waits
      size_t jobs = 0;
      while (!queue_.empty() && (group.empty() || jobs + queue_.front().submission.specs.size() <= kGroupJobs)) {
        jobs += queue_.front().submission.specs.size();
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    commit(group);
  }
}

void GroupCommit::commit(std::vector<Pending>& group) {
  try {
    write(group);
  } catch (const Error& e) {
    // The store failed (every request gets its error), or one request's
    // jobs were refused: then each is tried alone, to fail or succeed by itself.
    if (e.code() == ExitCode::store) store_.reset();
    if (e.code() == ExitCode::store || group.size() == 1) {
      for (auto& p : group) p.promise.set_exception(std::current_exception());
      return;
    }
    for (auto& p : group) {
      std::vector<Pending> alone;
      alone.push_back(std::move(p));
      commit(alone);
    }
  } catch (...) {
    store_.reset();
    for (auto& p : group) p.promise.set_exception(std::current_exception());
  }
}

void GroupCommit::write(std::vector<Pending>& group) {
  if (!store_) {
    auto s = store::Store::open(dsn_, store::Create::no);
    s->require_schema();
    store_ = std::move(s);
  }
  std::vector<store::Submission> submissions;
  submissions.reserve(group.size());
  for (auto& p : group) submissions.push_back(std::move(p.submission));
  std::vector<Submitted> answers;
  try {
    answers = store_->jobs().submit_together(submissions);
  } catch (...) {
    for (size_t i = 0; i < group.size(); ++i) group[i].submission = std::move(submissions[i]);  // for a retry alone
    throw;
  }
  ++commits_;
  requests_ += group.size();
  for (size_t i = 0; i < group.size(); ++i) group[i].promise.set_value(std::move(answers[i]));
}

}  // namespace jobctl::server
