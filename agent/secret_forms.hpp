#pragma once
// The forms a secret's value may take in what a receiver sends back, so
// that redaction finds it however the receiver echoed it: as sent; URL
// (percent) encoded, by any encoder; JSON-escaped; base64 and base64url,
// at each of the three alignments it can have inside a longer encoded text
// (only the characters that depend on the value alone); hex, in either
// case.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace jobctl::agent {

// An encoded form shorter than this is not looked for: a few characters
// of base64 or hex turn up by chance. The value as sent always is.
inline constexpr size_t kMinEncodedForm = 8;

// `value` itself first, then each distinct encoded form of at least
// kMinEncodedForm bytes but the percent-encoded ones. Empty for an empty
// value.
std::vector<std::string> secret_forms(std::string_view value);

// Where `value` ends in `text` when it starts at `at` with each byte as
// itself or percent-encoded (%XX, either case; a space also as +), or
// npos. Encoders differ in what they leave as it is (Python's quote keeps
// '/', JavaScript's encodeURI keeps ":/?#@&=+$,", each in either case):
// one match covers them all. A match encoded anywhere is at least
// kMinEncodedForm bytes long; the value as sent always matches.
size_t percent_form_end(std::string_view text, size_t at, std::string_view value);
// The longest text percent_form_end can match: every byte as %XX.
inline size_t longest_percent_form(std::string_view value) { return 3 * value.size(); }

}  // namespace jobctl::agent
