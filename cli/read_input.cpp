#include "cli/read_input.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "common/util/error.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::cli {

namespace {

// The hint for a path that cannot be read, with how the flag or argument
// names standard input: "-" (--file), "@-" (a flag's @FILE, where "-" is
// the text itself).
std::string path_hint(const char* stdin_as) { return fmt::format("check the path; {} reads standard input", stdin_as); }

// The file at `path`, open for reading; throws usage Error (naming `what`)
// when it cannot be read or is a directory.
std::ifstream open_input(const std::string& path, const std::string& what, const char* stdin_as) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw usage_error(fmt::format("{}: cannot read file '{}': {}", what, path, std::strerror(errno)), path_hint(stdin_as));
  // A directory opens, then reads as nothing: say what it is instead.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw usage_error(fmt::format("{}: '{}' is a directory, not a file", what, path), path_hint(stdin_as));
  return in;
}

// Everything `in` holds, up to limit.bytes; `from` names it ("'PATH'").
std::string read_all(std::istream& in, const std::string& from, const std::string& what, const ReadLimit& limit,
                     const char* stdin_as) {
  std::string text;
  char chunk[64 * 1024];
  while (in) {
    in.read(chunk, sizeof chunk);
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > limit.bytes)
      throw usage_error(fmt::format("{}: {} holds more than {} MiB, the most jobctl reads for it", what, from,
                                    limit.bytes >> 20),
                        limit.instead);
  }
  if (in.bad())
    throw usage_error(fmt::format("{}: cannot read {}: {}", what, from, std::strerror(errno)), path_hint(stdin_as));
  return text;
}

// read_input, standard input being `stdin_as` to the user.
std::string read_path(const std::string& path, const std::string& what, const ReadLimit& limit, const char* stdin_as) {
  if (path == "-") return read_all(std::cin, "standard input", what, limit, stdin_as);
  std::ifstream in = open_input(path, what, stdin_as);
  return read_all(in, "'" + path + "'", what, limit, stdin_as);
}

}  // namespace

std::string read_input(const std::string& path, const std::string& what, const ReadLimit& limit) {
  return read_path(path, what, limit, "-");
}

std::string text_or_file(const std::string& arg, const std::string& flag) {
  if (arg.empty() || arg[0] != '@') return arg;
  std::string text = read_path(arg.substr(1), flag, kValueFileLimit, "@-");
  if (!util::is_utf8(text))
    throw usage_error(fmt::format("{}: '{}' is not valid UTF-8 text", flag, arg.substr(1)),
                      "jobctl keeps text as UTF-8: convert it first, e.g. with iconv");
  return text;
}

}  // namespace jobctl::cli
