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

// Clears this process's ambient and inheritable capabilities, so that no
// job (nor the job supervisor's children) can have them back: an agent
// given CAP_SETUID to run jobs as other users keeps it to itself. Call it
// before the job supervisor is forked.
void keep_capabilities_from_jobs();

// The user `spec` asks to run as: its --user, else the agent's --run-as;
// empty when neither names one (the agent's own user, no switch).
std::string job_user(const model::JobSpec& spec, const Options& opts);

// Why this agent will not run a job as `user`, for the run's error; nullopt
// when it will: no user, its --run-as, one of its --allow-users, or its own
// user when it has no --run-as.
std::optional<std::string> refuse_user(const std::string& user, const Options& opts);

}  // namespace jobctl::agent
