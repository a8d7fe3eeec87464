#include "agent/secret_forms.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/util/strings.hpp"

namespace jobctl::agent {
namespace {

bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

std::string percent_encoded(std::string_view v, const char* digits, bool plus_for_space) {
  std::string out;
  for (unsigned char c : v) {
    if (unreserved(c)) {
      out += static_cast<char>(c);
    } else if (c == ' ' && plus_for_space) {
      out += '+';
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
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
  static constexpr char kUpper[] = "0123456789ABCDEF", kLower[] = "0123456789abcdef";
  static constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  static constexpr char kBase64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::vector<std::string> forms{std::string(value)};
  auto add = [&](std::string form) {
    if (form.size() < kMinEncodedForm || std::find(forms.begin(), forms.end(), form) != forms.end()) return;
    forms.push_back(std::move(form));
  };
  add(percent_encoded(value, kUpper, false));
  add(percent_encoded(value, kLower, false));
  add(percent_encoded(value, kUpper, true));
  add(percent_encoded(value, kLower, true));
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

}  // namespace jobctl::agent
