#pragma once
// The user a job runs as: its --user, else the agent's --run-as, else the
// agent's own; and whether this agent may switch to it (--allow-users).
#include <optional>
#include <string>

#include "agent/options.hpp"
#include "common/model/job.hpp"

namespace jobctl::agent {

// At start: every user --run-as and --allow-users name exists on this
// host, and the agent may switch to them (root, or CAP_SETUID, CAP_SETGID
// and CAP_KILL) when one is not its own user. Sets opts.own_user. Throws
// Error(ExitCode::usage) naming the flag and the user.
void check_user_options(Options& opts);

// The user to switch to for `spec`: empty when it runs as the agent's own.
std::string job_user(const model::JobSpec& spec, const Options& opts);

// Why this agent will not run a job as `user` (not its --run-as, not in
// its --allow-users), for the run's error; nullopt when it will.
std::optional<std::string> refuse_user(const std::string& user, const Options& opts);

}  // namespace jobctl::agent
