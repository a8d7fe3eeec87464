#include "common/util/strings.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace jobctl::util {

std::string hex(std::string_view bytes, HexCase hex_case) {
  const char* digits = hex_case == HexCase::upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(sep, start);
    out.emplace_back(text.substr(start, end == std::string_view::npos ? text.size() - start : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

uint64_t stable_hash(std::string_view text) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

namespace {

// Optimal string alignment distance.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::min<size_t>(2, word.empty() ? 0 : (word.size() - 1) / 2) + 1;  // the first too far
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::optional<double> parse_number(const std::string& text) {
  // from_chars, not stod: stod (strtod) also took C's hexadecimal floats
  // ("0x10" as 16) and leading blanks (" 0.5", though not "0.5 ").
  double v = 0;
  const char* end = text.data() + text.size();
  auto [stop, ec] = std::from_chars(text.data(), end, v, std::chars_format::general);
  if (ec == std::errc() && stop == end && std::isfinite(v)) return v;
  return std::nullopt;
}

}  // namespace jobctl::util
