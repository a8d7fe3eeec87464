#include "common/util/utf8.hpp"

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

}  // namespace

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
