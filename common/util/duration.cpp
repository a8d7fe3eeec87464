#include "common/util/duration.hpp"

#include <cctype>
#include <cstdint>

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::util {
namespace {

int64_t unit_micros(std::string_view unit) {
  if (unit == "us") return 1;
  if (unit == "ms") return 1000;
  if (unit == "s") return 1000000;
  if (unit == "m") return 60LL * 1000000;
  if (unit == "h") return 3600LL * 1000000;
  if (unit == "d") return 86400LL * 1000000;
  return 0;
}

}  // namespace

Micros parse_duration(std::string_view text, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return usage_error(fmt::format("invalid duration '{}' for {}: {}", text, what, why),
                       "write it like 90s, 10m, 1h30m or 250ms");
  };
  if (text.empty()) throw bad("it is empty");
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start) throw bad("expected a number");
    if (i - start > 12) throw bad("number too large");
    int64_t n = std::stoll(std::string(text.substr(start, i - start)));
    size_t ustart = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    if (i == ustart) throw bad("missing unit (us, ms, s, m, h, d)");
    int64_t mult = unit_micros(text.substr(ustart, i - ustart));
    if (mult == 0) throw bad(fmt::format("unknown unit '{}'", text.substr(ustart, i - ustart)));
    // Compared before multiplying: a product past int64_t would wrap.
    if (n > (kMaxDuration.count() - total) / mult) throw bad("longer than 100 years");
    total += n * mult;
  }
  return Micros(total);
}

std::string format_duration(Micros d) {
  int64_t us = d.count();
  if (us == 0) return "0s";
  std::string out;
  if (us < 0) {
    out = "-";
    us = -us;
  }
  if (us < 1000) return out + fmt::format("{}us", us);
  if (us < 1000000) return out + fmt::format("{}ms", us / 1000);
  struct Unit { int64_t micros; const char* name; };
  static constexpr Unit units[] = {{86400LL * 1000000, "d"}, {3600LL * 1000000, "h"},
                                   {60LL * 1000000, "m"}, {1000000, "s"}, {1000, "ms"}};
  for (const auto& u : units) {
    if (us >= u.micros) {
      out += fmt::format("{}{}", us / u.micros, u.name);
      us %= u.micros;
    }
  }
  return out;
}

}  // namespace jobctl::util
