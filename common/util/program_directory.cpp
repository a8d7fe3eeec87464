#include "common/util/program_directory.hpp"

namespace jobctl::util {

std::filesystem::path program_directory() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : self.parent_path();
}

}  // namespace jobctl::util
