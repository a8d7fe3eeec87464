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

std::vector<std::string> add_fleet_flags(CLI::App& cmd, FleetFlags& f, bool fan_out) {
  cmd.add_option("--concurrency-key", f.concurrency_key,
                 "Share a concurrency group with every job naming this key: at most --max-concurrent (default 1) "
                 "of them run at once, fleet-wide");
  cmd.add_option("--tenant", f.tenant, "Who the job is for: tenants of a queue are served in turn within a priority");
  if (!fan_out) return {"--concurrency-key", "--tenant"};
  cmd.add_option("--on-each", f.on_each,
                 "Run once on every live agent with all these labels (KEY=VALUE,…; '*': every agent), "
                 "each its own run");
  cmd.add_option("--stagger", f.stagger, "With --on-each: start each agent's run this long after the previous one");
  return {"--concurrency-key", "--tenant", "--on-each", "--stagger"};
}

}  // namespace jobctl::cli
