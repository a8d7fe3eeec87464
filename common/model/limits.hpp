#pragma once
// How large a job's fields may be (jobctl(1), LIMITS), checked at submit
// and update with exit 2 above them. A command job's fields must fit what
// Linux gives a process (at most 128 KiB per argument or environment
// variable, about 2 MiB in all, with the agent's own environment); the
// rest keeps rows and tables readable.
#include <cstddef>
#include <string_view>

namespace jobctl::model {

inline constexpr size_t kKiB = 1024;
inline constexpr size_t kMaxNameBytes = kKiB;             // --name
inline constexpr size_t kMaxCommandBytes = 64 * kKiB;     // every argument of the command, together
inline constexpr size_t kMaxEnvBytes = 64 * kKiB;         // every NAME=VALUE of --env, together
inline constexpr size_t kMaxCwdBytes = 4 * kKiB;          // --cwd (PATH_MAX)
inline constexpr size_t kMaxPayloadBytes = 1024 * kKiB;   // --payload, compact; on the job's standard input
inline constexpr size_t kMaxPayloadInEnv = 64 * kKiB;     // JOB_PAYLOAD is set only up to this size
inline constexpr size_t kMaxUrlBytes = 8 * kKiB;          // --webhook, --notify
inline constexpr size_t kMaxHeadersBytes = 64 * kKiB;     // every --header, together
inline constexpr size_t kMaxBodyBytes = 1024 * kKiB;      // --data
inline constexpr size_t kMaxConcurrencyKeyBytes = 200;     // --concurrency-key
inline constexpr size_t kMaxIdempotencyKeyBytes = 255;     // --idempotency-key, the Idempotency-Key header

// Throws usage Error when `bytes` exceeds `limit`: "WHAT is N bytes, more
// than L KiB", with `instead` (where large content belongs) as the hint.
void check_size(size_t bytes, size_t limit, std::string_view what, std::string_view instead);

}  // namespace jobctl::model
