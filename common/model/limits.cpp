#include "common/model/limits.hpp"

#include <fmt/format.h>

#include <string>

#include "common/util/error.hpp"

namespace jobctl::model {

void check_size(size_t bytes, size_t limit, std::string_view what, std::string_view instead) {
  if (bytes <= limit) return;
  throw usage_error(fmt::format("{} is {} bytes, more than {} KiB", what, bytes, limit / kKiB), std::string(instead));
}

}  // namespace jobctl::model
