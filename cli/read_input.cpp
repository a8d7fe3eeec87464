#include "cli/read_input.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "common/util/error.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::cli {

std::ifstream open_input(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw usage_error(fmt::format("{}: cannot read file '{}': {}", what, path, std::strerror(errno)),
                      "check the path; - reads standard input");
  // A directory opens, then reads as nothing: say what it is instead.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw usage_error(fmt::format("{}: '{}' is a directory, not a file", what, path),
                      "check the path; - reads standard input");
  return in;
}

std::string read_input(const std::string& path, const std::string& what) {
  std::stringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
    return ss.str();
  }
  ss << open_input(path, what).rdbuf();
  return ss.str();
}

std::string text_or_file(const std::string& arg, const std::string& flag) {
  if (arg.empty() || arg[0] != '@') return arg;
  std::string text = read_input(arg.substr(1), flag);
  if (!util::is_utf8(text))
    throw usage_error(fmt::format("{}: '{}' is not valid UTF-8 text", flag, arg.substr(1)),
                      "jobctl keeps text as UTF-8: convert it first, e.g. with iconv");
  return text;
}

}  // namespace jobctl::cli
