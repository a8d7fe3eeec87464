#pragma once
// Following runs' output while they run (jobctl logs --follow, jobctl run):
// each attempt's new stdout bytes go to our stdout and its stderr bytes to
// our stderr, as its agent ships them (at most every 500 ms), until every
// run is final. A retry's attempts follow one another, each announced on
// stderr. What the store no longer holds (a job that wrote more than the
// 64 KiB kept between two shipments) is named, not silently skipped.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/context.hpp"
#include "common/model/job.hpp"
#include "common/util/duration.hpp"

namespace jobctl::cli {

struct Followed {
  std::string run_id;
  std::string prefix;  // put before every line ("[agent] "); "" copies bytes as they come
};

// How a followed run ended, or where it was when following stopped.
struct FollowedEnd {
  model::Run run;
  std::optional<model::Attempt> last;  // its last attempt, when it had one
};

struct FollowOptions {
  std::optional<util::Micros> timeout;
  std::string job_id;  // on a terminal, say why the job waits when it may wait for ever
  bool show_stdout = true;
  bool show_stderr = true;
  // Asked between two reads of the store; false stops following.
  std::function<bool()> go_on = [] { return true; };
  // True when go_on() has something to act on: a read of the store under
  // way stops waiting for it (nothing: reads wait their time).
  std::function<bool()> interrupted;
};

enum class FollowResult { finished, timed_out, stopped };

// Follows the runs of `id` (a job or run id: the run named, the job's
// latest, or each agent's of a fan-out job, its lines prefixed "[agent] ")
// until each is final (finished), the timeout passes (timed_out) or go_on()
// says no (stopped); `ends` has each run as last read. Which runs is the
// first read of the store, and waits as the others do.
FollowResult follow_runs(Context& ctx, const std::string& id, const FollowOptions& options,
                         std::vector<FollowedEnd>& ends);

// A line on stderr for each run that did not succeed ("jobctl: run R
// failed: exited with code 3"), and the exit status of `logs --follow`:
// 0 when every run succeeded, else 1.
int report_ends(const std::vector<FollowedEnd>& ends);

}  // namespace jobctl::cli
