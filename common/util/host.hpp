#pragma once
#include <string>

namespace jobctl::util {

// This host's name (gethostname), "" when it has none.
std::string host_name();

}  // namespace jobctl::util
