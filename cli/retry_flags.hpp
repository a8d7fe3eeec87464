#pragma once
// The retry-policy flags, shared by `submit` (a job's policy) and
// `queue set` (a queue's defaults), so both spell them the same way.
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/model/retry.hpp"

namespace jobctl::cli {

struct RetryFlags {
  std::optional<int> retries, max_deliveries;
  std::string backoff, retry_delay, max_retry_delay, retry_for, no_retry_exit_codes, delivery;
};

// Adds the flags; returns their names (for excludes()).
std::vector<std::string> add_retry_flags(CLI::App& cmd, RetryFlags& f);

// The fields the user set. Throws usage Error for a malformed value.
model::RetryOverrides to_overrides(const RetryFlags& f);

}  // namespace jobctl::cli
