#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace jobctl::util {

// Splits on `sep`, keeping empty pieces ("a,,b" -> {"a", "", "b"}; "" -> {""}).
std::vector<std::string> split(std::string_view text, char sep);

}  // namespace jobctl::util
