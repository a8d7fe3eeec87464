#pragma once
// Human durations: "90s", "10m", "1h30m", "250ms", "2d". Parsing is strict:
// a bare number, an unknown unit or an empty string is an error, because a
// scheduler that guesses "10" means seconds will one day guess wrong.
#include <chrono>
#include <string>
#include <string_view>

namespace jobctl::util {

using Micros = std::chrono::microseconds;

// The longest duration any flag or field takes: 100 years (of 365 days).
inline constexpr Micros kMaxDuration{100LL * 365 * 86400 * 1'000'000};

// Parses a duration of at most kMaxDuration. Throws jobctl::Error
// (ExitCode::usage) naming `what` (the flag) and the bad text.
Micros parse_duration(std::string_view text, std::string_view what);

// Formats compactly and losslessly down to milliseconds: 5400s -> "1h30m".
std::string format_duration(Micros d);

}  // namespace jobctl::util
