#include "server/group_commit.hpp"

#include <system_error>
#include <utility>

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
  handed_over_.notify_one();
  if (thread_.joinable()) thread_.join();
}

GroupCommit::Submitted GroupCommit::submit(std::string actor, std::vector<model::JobSpec> specs) {
  Pending me(store::Submission{std::move(actor), std::move(specs)});
  std::unique_lock lock(mutex_);
  queue_.push_back(&me);
  if (writing_) {  // it waits to be written in a group
    lock.unlock();
    me.woken.acquire();
  } else {  // nothing is written, so nothing waited: it is first, and writes its group here
    writing_ = true;
    if (write_next(lock, &me)) {
      // Requests came meanwhile: the committing thread writes them. Started
      // by the first hand-over, from a worker thread, it inherits the
      // worker's signal mask (serve.cpp leaves SIGTERM to its stopper thread).
      try {
        if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
        committer_ = true;
        handed_over_.notify_one();
      } catch (const std::system_error&) {  // no thread to be had: this one writes what waits
        while (write_next(lock, &me)) {
        }
        writing_ = false;
      }
    } else {
      writing_ = false;
    }
  }
  if (me.error) std::rethrow_exception(me.error);
  return std::move(*me.answer);
}

void GroupCommit::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    handed_over_.wait(lock, [&] { return stopping_ || committer_; });
    if (!committer_) return;  // stopping, and nothing waits
    while (write_next(lock, nullptr)) {
    }
    committer_ = writing_ = false;
  }
}

bool GroupCommit::write_next(std::unique_lock<std::mutex>& lock, const Pending* own) {
  std::vector<Pending*> group;
  try {
    group = next_group();
  } catch (...) {  // no memory for a group: its first request fails alone
    group = {queue_.front()};
    queue_.pop_front();
    group[0]->error = std::current_exception();
  }
  lock.unlock();
  if (!group[0]->error) commit(group);  // never throws: each request gets its answer or error
  // A request's thread may return, and its Pending be gone, once woken.
  for (auto* p : group)
    if (p != own) p->woken.release();
  lock.lock();
  return !queue_.empty();
}

std::vector<GroupCommit::Pending*> GroupCommit::next_group() {
  std::vector<Pending*> group;
  group.reserve(queue_.size());  // what can throw, before any is taken
  size_t jobs = 0;
  while (!queue_.empty() && (group.empty() || jobs + queue_.front()->submission.specs.size() <= kGroupJobs)) {
    jobs += queue_.front()->submission.specs.size();
    group.push_back(queue_.front());
    queue_.pop_front();
  }
  return group;
}

void GroupCommit::commit(const std::vector<Pending*>& group) {
  try {
    write(group);
  } catch (const Error& e) {
    // The store failed (every request gets its error), or one request's
    // jobs were refused: then each is tried alone, to fail or succeed by itself.
    if (e.code() == ExitCode::store) store_.reset();
    if (e.code() == ExitCode::store || group.size() == 1) {
      for (auto* p : group) p->error = std::current_exception();
      return;
    }
    for (auto* p : group) commit({p});
  } catch (...) {
    store_.reset();
    for (auto* p : group) p->error = std::current_exception();
  }
}

void GroupCommit::write(const std::vector<Pending*>& group) {
  store::forget_if_replaced(store_);
  if (!store_) {
    auto s = store::Store::open(dsn_, store::Create::no);
    s->require_schema();
    store_ = std::move(s);
  }
  std::vector<store::Submission> submissions;
  submissions.reserve(group.size());
  for (auto* p : group) submissions.push_back(std::move(p->submission));
  std::vector<Submitted> answers;
  try {
    answers = store_->jobs().submit_together(submissions);
  } catch (...) {
    for (size_t i = 0; i < group.size(); ++i) group[i]->submission = std::move(submissions[i]);  // for a retry alone
    throw;
  }
  ++commits_;
  requests_ += group.size();
  for (size_t i = 0; i < group.size(); ++i) group[i]->answer = std::move(answers[i]);
}

}  // namespace jobctl::server
