#pragma once
// Flag values shared by `submit` (a new job) and `update` (changing one),
// so both read them the same way.
#include <map>
#include <string>
#include <vector>

#include "common/model/job.hpp"

namespace jobctl::cli {

// The arguments after `--`: one is a shell command line (run by sh -c, as
// ssh does), several an argv executed directly.
model::Command command_from_args(const std::vector<std::string>& args);

// --env NAME=VALUE values. Throws usage Error for one without a name or '='.
std::map<std::string, std::string> env_from_flags(const std::vector<std::string>& assignments);

}  // namespace jobctl::cli
