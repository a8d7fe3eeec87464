#pragma once
// How a run's state reads in a table: the same words in get, ls, history
// and dag status.
#include <string>

#include "common/model/job.hpp"

namespace jobctl::cli {

// The status, and for a pending run that failed before, that it waits for
// its retry: "pending (retry after 2 failures)".
std::string status_text(const model::Run& r);

// How long the run's last attempt took, "running" while it runs, "-" when
// it has none under way nor finished (a run waiting for its retry).
std::string duration_text(const model::Run& r);

}  // namespace jobctl::cli
