#pragma once
// Asking a running run to stop, and why. runs.cancel_requested holds the
// reason (0: not asked); the agent holding the run hears of it at its next
// heartbeat (or at once from wake_cancel) and reports "cancelled", and the
// store records the reason the request was made with as the run's error.
#include <cstdint>
#include <string>
#include <vector>

#include "common/store/sql.hpp"

namespace jobctl::store {

enum class CancelReason : int64_t {
  user = 1,         // jobctl cancel
  job_deleted = 2,  // jobctl delete
  dag = 3,          // jobctl dag cancel
  overlap = 4,      // a schedule's overlap policy cancel-other
};

// Asks the running runs `where` picks (over runs, with `params`) that were
// not asked yet to stop, for `why`, and wakes their agents. Returns their
// ids. Runs in the caller's transaction.
std::vector<std::string> ask_to_stop(Connection& c, CancelReason why, const std::string& where, const Params& params);

// The error a run asked to stop with `request` (its cancel_requested) ends
// with.
std::string cancelled_error(int64_t request);

// The SQL for the status a run ends with when its agent reports
// `reported`: a retry ('pending') of a run asked to stop is 'cancelled'
// instead, so that a cancel is never undone by the attempt failing, timing
// out or being given back meanwhile. `request` is the expression of the
// run's cancel_requested.
std::string recorded_status_sql(const std::string& reported, const std::string& request);

// The SQL for the error of a run ending as `status`: the reason of its
// cancel request when it ends cancelled with one, else `reported`.
// `request` is the expression of the run's cancel_requested.
std::string cancelled_error_sql(const std::string& status, const std::string& request, const std::string& reported);

}  // namespace jobctl::store
