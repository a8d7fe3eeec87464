#pragma once
// Turning how a process ended into what the store records: success, a
// retry after backoff, the dead-letter queue, a cancel, or a release.
#include <random>
#include <string>

#include "agent/runner.hpp"
#include "common/store/agent.hpp"

namespace jobctl::agent {

// The completion for a process that ended (by itself or stopped by us).
// `lost` endings are never reported and must not be passed here.
store::Completion outcome_of(const Finished& f, std::mt19937_64& rng);

// The completion for a run that could not start at all: a permanent
// failure, or retried (see Permanent).
store::Completion start_failure(const store::ClaimedRun& run, const std::string& error, std::mt19937_64& rng,
                                Permanent permanent = Permanent::yes);

}  // namespace jobctl::agent
