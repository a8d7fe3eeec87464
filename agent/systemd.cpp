#include "agent/systemd.hpp"

#include <systemd/sd-daemon.h>

namespace jobctl::agent {

SystemdNotifier::SystemdNotifier() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) watchdog_ = std::chrono::microseconds(usec);
}

void SystemdNotifier::ready(const std::string& status) {
  sd_notify(0, ("READY=1\nSTATUS=" + status).c_str());
  next_ping_ = Clock::now();
}

void SystemdNotifier::stopping(const std::string& status) { sd_notify(0, ("STOPPING=1\nSTATUS=" + status).c_str()); }

void SystemdNotifier::watchdog_if_due(Clock::time_point now) {
  if (!watchdog_ || now < next_ping_) return;
  sd_notify(0, "WATCHDOG=1");
  next_ping_ = now + *watchdog_ / 2;
}

std::optional<SystemdNotifier::Clock::time_point> SystemdNotifier::next_deadline() const {
  if (!watchdog_) return std::nullopt;
  return next_ping_;
}

}  // namespace jobctl::agent
