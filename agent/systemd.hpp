#pragma once
// systemd Type=notify: READY=1 once the agent is registered and claiming,
// STOPPING=1 when it starts draining, STATUS= lines, and WATCHDOG=1 from
// the agent's own loop every half of WatchdogSec, so a loop that hangs is
// restarted. Every call is a no-op when systemd did not start us (no
// NOTIFY_SOCKET). See scripts/jobagent.service.
#include <chrono>
#include <optional>
#include <string>

namespace jobctl::agent {

class SystemdNotifier {
 public:
  using Clock = std::chrono::steady_clock;

  SystemdNotifier();  // reads WATCHDOG_USEC (and WATCHDOG_PID)

  void ready(const std::string& status);
  void stopping(const std::string& status);
  void watchdog_if_due(Clock::time_point now);
  std::optional<Clock::time_point> next_deadline() const;

 private:
  std::optional<std::chrono::microseconds> watchdog_;  // WatchdogSec, when set
  Clock::time_point next_ping_{};
};

}  // namespace jobctl::agent
