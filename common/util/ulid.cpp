#include "common/util/ulid.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>

namespace jobctl::util {
namespace {

constexpr char kAlphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

struct State {
  std::mutex mu;
  std::mt19937_64 rng{std::random_device{}()};
  uint64_t last_ms = 0;
  std::array<uint8_t, 10> rand{};
};

State& state() {
  static State s;
  return s;
}

void increment(std::array<uint8_t, 10>& r) {
  for (int i = 9; i >= 0; --i) {
    if (++r[static_cast<size_t>(i)] != 0) return;
  }
}

}  // namespace

std::string new_ulid() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  uint64_t ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
  std::array<uint8_t, 16> bytes{};
  {
    State& s = state();
    std::lock_guard lock(s.mu);
    if (ms <= s.last_ms) {
      ms = s.last_ms;
      increment(s.rand);
    } else {
      s.last_ms = ms;
      for (auto& b : s.rand) b = static_cast<uint8_t>(s.rng());
      s.rand[0] &= 0x7f;  // leave headroom so increments never overflow
    }
    for (int i = 0; i < 6; ++i) bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(ms >> (40 - 8 * i));
    for (size_t i = 0; i < 10; ++i) bytes[6 + i] = s.rand[i];
  }
  // 128 bits -> 26 base32 digits (the first digit carries 3 bits).
  // Digit i covers bits [5i-2, 5i+3) of the 128, counted from the top.
  std::string out(26, '0');
  for (int i = 0; i < 26; ++i) {
    unsigned digit = 0;
    for (int b = 5 * i - 2; b < 5 * i + 3; ++b) {
      unsigned bit = b < 0 ? 0 : (bytes[static_cast<size_t>(b / 8)] >> (7 - b % 8)) & 1u;
      digit = (digit << 1) | bit;
    }
    out[static_cast<size_t>(i)] = kAlphabet[digit];
  }
  return out;
}

bool is_ulid(const std::string& s) {
  if (s.size() != 26) return false;
  for (char c : s) {
    char u = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
    bool ok = (u >= '0' && u <= '9') || (u >= 'A' && u <= 'Z' && u != 'I' && u != 'L' && u != 'O' && u != 'U');
    if (!ok) return false;
  }
  return s[0] <= '7';
}

}  // namespace jobctl::util
