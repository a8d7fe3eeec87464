#pragma once
// Webhook request signing (--sign-secret), so a receiver can tell the
// request came from us and was not altered or replayed late:
//
//   X-Job-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
//
// The receiver recomputes the HMAC over the timestamp, a dot and the raw
// body, compares in constant time, and refuses a timestamp too far from
// its clock. Documented in jobctl(1), WEBHOOKS.
#include <cstdint>
#include <string>
#include <string_view>

namespace jobctl::agent {

// Lower-case hex HMAC-SHA256 of `message` under `key`.
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

// The X-Job-Signature header's value.
std::string signature_value(std::string_view secret, int64_t unix_seconds, std::string_view body);

}  // namespace jobctl::agent
