#pragma once
// An agent restarted on the same host under the same name is a new
// incarnation of it: before it claims anything, it takes over what a dead
// earlier incarnation left.
//
// Each agent has a lock file, $XDG_RUNTIME_DIR/jobagent/WORKER_ID.lock
// (else /tmp/jobagent-UID/), which it and its job supervisor hold (flock)
// until both are gone; the supervisor lets go only once it has ended every
// process of its jobs. A new incarnation looks at the worker rows with its
// name and host that are not gone: one whose agent's pid is no longer
// alive is dead. Once its lock comes free, its supervisor has ended its
// jobs or was killed too; what is left in its jobs' process groups is
// killed (exec/job_groups.hpp), so its runs are given back at once
// (Agent::give_back_runs) instead of after its leases expire. One whose lock file is missing (another host with this
// host's name, a reboot that cleared the directory) is left to lease expiry.
#include <string>

#include "agent/options.hpp"
#include "agent/runner.hpp"
#include "common/store/store.hpp"

namespace jobctl::agent {

// Takes this agent's lock (worker `worker_id`), then gives back the runs of
// its dead earlier incarnations, waiting at most --kill-grace + 15 s for
// each one's supervisor. Throws Error when the lock directory is not this
// user's own or the lock cannot be made; store errors propagate.
void take_over(store::Store& store, Runner& runner, const Options& opts, const std::string& worker_id);

// Refuses to run beside another live agent of the same name (on --on-each
// and in `jobctl workers` a name is one agent): one on another host whose
// heartbeat is fresh, or one on this host whose process is alive. Of two
// starting at once, the one registered later gives way. An earlier
// incarnation of this agent that died is no namesake: take_over handles
// it. Throws Error(ExitCode::invalid_state), after marking `worker_id`
// gone.
void refuse_namesakes(store::Store& store, const Options& opts, const std::string& worker_id);

// The lock directory (made 0700 when missing). Throws Error(ExitCode::usage)
// when it is not a directory of this user's that only this user may use.
std::string lock_directory();

}  // namespace jobctl::agent
