#include "common/util/utf8.hpp"

#include <cstdint>

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::util {
namespace {

// The length of the well-formed UTF-8 sequence at text[i], 0 when none
// starts there (RFC 3629, table 3-7 of the Unicode standard).
size_t sequence_at(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  auto in = [](unsigned b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
  const unsigned b0 = byte(0);
  if (b0 < 0x80) return 1;
  if (in(b0, 0xC2, 0xDF)) return in(byte(1), 0x80, 0xBF) ? 2 : 0;
  if (in(b0, 0xE0, 0xEF)) {
    const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;  // no overlongs, no surrogates
    return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) ? 3 : 0;
  }
  if (in(b0, 0xF0, 0xF4)) {
    const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;  // no overlongs, nothing past U+10FFFF
    return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) && in(byte(3), 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

// The code point of the `n`-byte sequence at text[i] (sequence_at).
uint32_t code_point(std::string_view text, size_t i, size_t n) {
  auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(text[i + k])); };
  if (n == 1) return b(0);
  if (n == 2) return (b(0) & 0x1F) << 6 | (b(1) & 0x3F);
  if (n == 3) return (b(0) & 0x0F) << 12 | (b(1) & 0x3F) << 6 | (b(2) & 0x3F);
  return (b(0) & 0x07) << 18 | (b(1) & 0x3F) << 12 | (b(2) & 0x3F) << 6 | (b(3) & 0x3F);
}

struct Range {
  uint32_t first, last;
};

// East Asian Wide and Fullwidth (Unicode's EastAsianWidth.txt, W and F),
// in blocks: the emoji among the symbols one by one, the rest whole.
constexpr Range kWide[] = {
    {0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23EC},   {0x23F0, 0x23F0},
    {0x23F3, 0x23F3},   {0x25FD, 0x25FE},   {0x2614, 0x2615},   {0x2648, 0x2653},   {0x267F, 0x267F},
    {0x2693, 0x2693},   {0x26A1, 0x26A1},   {0x26AA, 0x26AB},   {0x26BD, 0x26BE},   {0x26C4, 0x26C5},
    {0x26CE, 0x26CE},   {0x26D4, 0x26D4},   {0x26EA, 0x26EA},   {0x26F2, 0x26F3},   {0x26F5, 0x26F5},
    {0x26FA, 0x26FA},   {0x26FD, 0x26FD},   {0x2705, 0x2705},   {0x270A, 0x270B},   {0x2728, 0x2728},
    {0x274C, 0x274C},   {0x274E, 0x274E},   {0x2753, 0x2755},   {0x2757, 0x2757},   {0x2795, 0x2797},
    {0x27B0, 0x27B0},   {0x27BF, 0x27BF},   {0x2B1B, 0x2B1C},   {0x2B50, 0x2B50},   {0x2B55, 0x2B55},
    {0x2E80, 0x303E},   {0x3041, 0x33FF},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},
    {0xA960, 0xA97F},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE10, 0xFE19},   {0xFE30, 0xFE6F},
    {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x16FE0, 0x16FE4}, {0x17000, 0x18CFF}, {0x1B000, 0x1B2FF},
    {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF}, {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A}, {0x1F200, 0x1F2FF},
    {0x1F300, 0x1F64F}, {0x1F680, 0x1F6FF}, {0x1F7E0, 0x1F7EB}, {0x1F90C, 0x1F9FF}, {0x1FA70, 0x1FAFF},
    {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};

// Combining marks and zero-width characters: drawn over the character
// before them, or not at all.
constexpr Range kZeroWidth[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x0610, 0x061A}, {0x064B, 0x065F},
    {0x1160, 0x11FF}, {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF}, {0x200B, 0x200F}, {0x2060, 0x2064},
    {0x20D0, 0x20FF}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF}, {0xE0100, 0xE01EF},
};

template <size_t N>
bool in_ranges(const Range (&ranges)[N], uint32_t cp) {
  for (const auto& r : ranges) {
    if (cp < r.first) return false;  // sorted
    if (cp <= r.last) return true;
  }
  return false;
}

// The columns of the character at text[i] (`n` bytes, 0 for a stray byte).
size_t columns_at(std::string_view text, size_t i, size_t n) {
  if (n == 0) return 1;
  const uint32_t cp = code_point(text, i, n);
  if (cp < 0x300) return 1;
  if (in_ranges(kZeroWidth, cp)) return 0;
  return in_ranges(kWide, cp) ? 2 : 1;
}

}  // namespace

size_t display_width(std::string_view text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t n = sequence_at(text, i);
    width += columns_at(text, i, n);
    i += n == 0 ? 1 : n;
  }
  return width;
}

size_t prefix_within(std::string_view text, size_t columns) {
  size_t width = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t n = sequence_at(text, i);
    const size_t w = columns_at(text, i, n);
    if (w > 0 && width + w > columns) return i;
    width += w;
    i += n == 0 ? 1 : n;
  }
  return text.size();
}

bool is_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = sequence_at(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string show_bytes(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const size_t n = sequence_at(text, i);
    // A NUL is valid UTF-8, but a message is a C string in the end (what()):
    // it would end there.
    if (n == 0 || text[i] == '\0') {
      out += fmt::format("\\x{:02X}", static_cast<unsigned char>(text[i]));
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string one_line(std::string_view text) {
  std::string out;
  const std::string shown = show_bytes(text);
  for (size_t i = 0; i < shown.size(); ++i) {
    const char c = shown[i];
    const auto b = static_cast<unsigned char>(c);
    const auto next = i + 1 < shown.size() ? static_cast<unsigned char>(shown[i + 1]) : 0;
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (b < 0x20 || b == 0x7F) out += fmt::format("\\x{:02X}", b);
    else if (b == 0xC2 && next >= 0x80 && next <= 0x9F) {  // U+0080..U+009F: C1 controls (U+009B is a CSI)
      out += fmt::format("\\u{:04X}", next);
      ++i;
    } else out += c;
  }
  return out;
}

size_t incomplete_utf8_tail(std::string_view text) {
  // The last lead byte among the last three, and how long its character is.
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    const auto b = static_cast<unsigned char>(text[text.size() - back]);
    if ((b & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t length = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 1;
    return length > back ? back : 0;
  }
  return 0;
}

void require_utf8_arguments(int argc, const char* const* argv, std::string_view exempt) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == exempt) {
      ++i;  // its value
      continue;
    }
    if (arg.size() > exempt.size() && arg.substr(0, exempt.size()) == exempt && arg[exempt.size()] == '=') continue;
    if (!is_utf8(arg))
      throw usage_error(fmt::format("argument '{}' is not valid UTF-8", show_bytes(arg)),
                        "jobctl keeps text as UTF-8: convert it first, e.g. with iconv");
  }
}

}  // namespace jobctl::util
