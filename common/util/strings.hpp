#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jobctl::util {

// Each byte of `bytes` as two hex digits, lower or upper case.
enum class HexCase { lower, upper };
std::string hex(std::string_view bytes, HexCase hex_case = HexCase::lower);

// Splits on `sep`, keeping empty pieces ("a,,b" -> {"a", "", "b"}; "" -> {""}).
std::vector<std::string> split(std::string_view text, char sep);

// FNV-1a of `text`: the same on every host and in every release (unlike
// std::hash), for values that must not move, such as cron's H and jitter.
uint64_t stable_hash(std::string_view text);

// The candidate nearest `word` by edit distance (insertions, deletions,
// substitutions and swaps of neighbours), if it is near enough to be what
// was meant: at most 2 edits, and fewer than half the word's letters. ""
// if none is.
std::string closest(std::string_view word, const std::vector<std::string>& candidates);

// `text`, whole, as a finite decimal number ("2.5", "1e3"); empty for
// anything else ("", "2x", "nan", "inf", " 2", "+2", C's "0x10").
std::optional<double> parse_number(const std::string& text);

}  // namespace jobctl::util
