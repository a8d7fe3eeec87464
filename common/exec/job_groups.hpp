#pragma once
// What a job supervisor leaves for the agent's next incarnation: the
// process groups of the jobs it runs, kept in the agent's lock file
// (Supervisor::lock) as they start and end.
//
// Killed with SIGKILL together with its agent, the supervisor ends
// nothing. Each job's own process dies with it (PR_SET_PDEATHSIG), but what
// the job started in turn (a script's commands) lives on in the job's
// process group. The next incarnation on this host, once it holds the lock
// (agent/incarnation.hpp), ends every process still in those groups before
// it gives their runs back, so none runs beside its rescue.
//
// The lock file's text: "AGENT_PID SUPERVISOR_PID\n" then
// "session SID groups PGID PGID …\n". A process is taken for a job's only if
// it is in one of those groups and in the supervisor's session, which the
// supervisor leads (setsid) and only its jobs share: a group or session id
// is in use while any member lives, so it names others only after the pid
// space wrapped while the agent was down, and then only if a process given
// the supervisor's pid led a session of its own in which another took a
// job's group id.
#include <sys/types.h>

#include <string>
#include <vector>

namespace jobctl::exec {

struct JobGroups {
  pid_t session = -1;
  std::vector<pid_t> groups;
};

// The lock file's text for an agent, its supervisor and the jobs it runs.
std::string job_groups_text(pid_t agent, pid_t supervisor, const JobGroups& jobs);

// The groups in a lock file's text (none when it has no such line: an
// agent from before they were kept, or one that ran nothing).
JobGroups parse_job_groups(const std::string& text);
// The same, of the lock file open as `fd`.
JobGroups read_job_groups(int fd);

// Sends SIGKILL to every process in `jobs`' groups and session, again
// until none is left (a process may fork meanwhile) or 5 s pass.
struct Ended {
  size_t killed = 0;  // processes sent SIGKILL
  size_t left = 0;    // still alive at the end (not ours to kill: EPERM)
};
Ended end_job_groups(const JobGroups& jobs);

}  // namespace jobctl::exec
