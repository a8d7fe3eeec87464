#include "common/util/host.hpp"

#include <unistd.h>

namespace jobctl::util {

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace jobctl::util
