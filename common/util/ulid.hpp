#pragma once
// ULIDs: 48 bits of Unix milliseconds then 80 random bits, printed as 26
// characters of Crockford base32. Lexical order is time order, so ids sort
// by creation and a "latest" is an ORDER BY id DESC.
#include <string>

namespace jobctl::util {

// Returns a new ULID. Within one process, ids made in the same millisecond
// are strictly increasing (the random part is incremented). Thread-safe.
std::string new_ulid();

// True when s is 26 Crockford base32 characters (case-insensitive).
bool is_ulid(const std::string& s);

}  // namespace jobctl::util
