#include "cli/job_flags.hpp"

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::cli {

model::Command command_from_args(const std::vector<std::string>& args) {
  model::Command c;
  c.via_shell = args.size() == 1;
  c.argv = args;
  return c;
}

std::map<std::string, std::string> env_from_flags(const std::vector<std::string>& assignments) {
  std::map<std::string, std::string> env;
  for (const auto& kv : assignments) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw usage_error(fmt::format("invalid --env '{}'", kv), "write it as --env NAME=VALUE");
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

}  // namespace jobctl::cli
