#include "agent/secret_forms.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/util/strings.hpp"

namespace jobctl::agent {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// percent_form_end from the value's byte `i` on. A '%' of the value may be
// itself or %25, so both are tried (a value holds few).
size_t percent_match(std::string_view text, size_t at, std::string_view value, size_t i) {
  for (; i < value.size(); ++i) {
    if (at >= text.size()) return std::string_view::npos;
    const char c = value[i];
    if (text[at] == '%' && at + 2 < text.size()) {
      const int hi = hex_digit(text[at + 1]), lo = hex_digit(text[at + 2]);
      if (hi >= 0 && lo >= 0 && static_cast<char>(hi * 16 + lo) == c) {
        if (c != '%') {
          at += 3;
          continue;
        }
        if (size_t end = percent_match(text, at + 3, value, i + 1); end != std::string_view::npos) return end;
      }
    }
    if (text[at] == c || (c == ' ' && text[at] == '+')) {
      ++at;
      continue;
    }
    return std::string_view::npos;
  }
  return at;
}

// As a JSON string's content: as nlohmann::json writes it, with / escaped
// too (`slash`, as some encoders do), or with everything beyond ASCII as
// \uXXXX (`ascii`, as Python's json does by default).
std::string json_escaped(std::string_view v, bool slash, bool ascii) {
  std::string out = nlohmann::json(std::string(v)).dump(-1, ' ', ascii, nlohmann::json::error_handler_t::replace);
  out = out.substr(1, out.size() - 2);
  if (!slash) return out;
  std::string escaped;
  for (char c : out) escaped += c == '/' ? std::string("\\/") : std::string(1, c);
  return escaped;
}

// The base64 characters of `v` placed `shift` bytes into a 3-byte group
// that depend on its bytes alone: what any text that holds `v` at that
// alignment encodes to, whatever surrounds it.
std::string base64_core(std::string_view v, size_t shift, const char* alphabet) {
  std::string bytes(shift, '\0');
  bytes.append(v);
  while (bytes.size() % 3 != 0) bytes += '\0';
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = (uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                 (uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) | static_cast<unsigned char>(bytes[i + 2]);
    for (int k = 0; k < 4; ++k) {
      // Character p covers bits 6p … 6p+5 of the text: bytes 6p/8 to (6p+5)/8.
      const size_t p = i / 3 * 4 + static_cast<size_t>(k);
      const size_t first = 6 * p / 8, last = (6 * p + 5) / 8;
      if (first >= shift && last < shift + v.size()) out += alphabet[(n >> (18 - 6 * k)) & 63];
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> secret_forms(std::string_view value) {
  if (value.empty()) return {};
  static constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  static constexpr char kBase64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::vector<std::string> forms{std::string(value)};
  auto add = [&](std::string form) {
    if (form.size() < kMinEncodedForm || std::find(forms.begin(), forms.end(), form) != forms.end()) return;
    forms.push_back(std::move(form));
  };
  add(json_escaped(value, false, false));
  add(json_escaped(value, true, false));
  add(json_escaped(value, false, true));
  for (size_t shift = 0; shift < 3; ++shift) {
    add(base64_core(value, shift, kBase64));
    add(base64_core(value, shift, kBase64Url));
  }
  add(util::hex(value, util::HexCase::lower));
  add(util::hex(value, util::HexCase::upper));
  return forms;
}

size_t percent_form_end(std::string_view text, size_t at, std::string_view value) {
  if (value.empty()) return std::string_view::npos;
  const size_t end = percent_match(text, at, value, 0);
  if (end == std::string_view::npos) return end;
  // As long as the value only when every byte is itself: as sent.
  return end - at == value.size() || end - at >= kMinEncodedForm ? end : std::string_view::npos;
}

}  // namespace jobctl::agent
