#pragma once
// The forms a secret's value may take in what a receiver sends back, so
// that redaction finds it however the receiver echoed it: as sent; URL
// (percent) encoded, in upper or lower case hex, with a space as + or
// %20; JSON-escaped; base64 and base64url, at each of the three
// alignments it can have inside a longer encoded text (only the
// characters that depend on the value alone); hex, in either case.
#include <string>
#include <string_view>
#include <vector>

namespace jobctl::agent {

// An encoded form shorter than this is not looked for: a few characters
// of base64 or hex turn up by chance. The value as sent always is.
inline constexpr size_t kMinEncodedForm = 8;

// `value` itself first, then each distinct encoded form of at least
// kMinEncodedForm bytes. Empty for an empty value.
std::vector<std::string> secret_forms(std::string_view value);

}  // namespace jobctl::agent
