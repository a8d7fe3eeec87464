#pragma once
// Following one run's output as its agent ships it (every 500 ms at most,
// the last 64 KiB of each stream): each look at the store gives what is
// new since the last, as events, through every attempt to the run's end.
// jobctl logs --follow and jobctl run print the events; jobctl serve sends
// them as server-sent events.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/model/job.hpp"
#include "common/store/store.hpp"

namespace jobctl::ops {

enum class Stream { out, err };

struct OutputEvent {
  enum class Kind {
    output,   // `data`: new bytes of `stream`
    gap,      // `bytes` of `stream` the store no longer held when looked at
    attempt,  // attempt `attempt` began after another, which ended with `after`
    end,      // the run is final and all its output was given
  };
  Kind kind = Kind::output;
  int attempt = 0;
  Stream stream = Stream::out;
  std::string data;
  int64_t bytes = 0;
  std::string after;
};

// How far a follower got: the attempt, and the bytes of each stream given.
struct OutputPosition {
  int attempt = 0;
  int64_t out = 0;
  int64_t err = 0;
};

class RunOutput {
 public:
  explicit RunOutput(std::string run_id, OutputPosition from = {}) : run_id_(std::move(run_id)), at_(from) {}

  // Reads the run, then its attempts (a final run's last attempt is closed
  // in the same transaction, so its whole tail is read): what is new.
  // Throws not_found for a run that is not there.
  std::vector<OutputEvent> poll(store::Store& store);

  bool ended() const { return ended_; }
  OutputPosition position() const { return at_; }
  // As last read: the run, and its last attempt if it had one.
  const std::optional<model::Run>& run() const { return run_; }
  const std::optional<model::Attempt>& last() const { return last_; }

 private:
  std::string run_id_;
  OutputPosition at_;
  bool ended_ = false;
  std::optional<model::Run> run_;
  std::optional<model::Attempt> last_;
};

// A run to follow for a job or run id, and the agent a fan-out run is
// pinned to ("" for any other).
struct FollowedRun {
  std::string run_id;
  std::string agent;
};
// The run named, the job's latest, or each agent's of a fan-out job
// (--on-each). Throws as resolve_id does, and invalid_state for a job
// without a run (a schedule whose first is not made yet).
std::vector<FollowedRun> runs_to_follow(store::Store& store, const std::string& id);

}  // namespace jobctl::ops
