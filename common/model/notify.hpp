#pragma once
// Completion notifications (--notify URL, --notify-on): which state
// changes of a run are reported, and the notification itself — a webhook
// job of its own, written in the transaction that records the change and
// delivered (and retried) like any other webhook job.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace jobctl::model {

struct JobSpec;
enum class RunStatus;

enum NotifyEvent : unsigned { notify_success = 1, notify_failure = 2, notify_dead = 4 };

struct Notify {
  std::vector<std::string> urls;              // empty: no notifications
  unsigned on = notify_failure | notify_dead;  // NotifyEvent bits

  bool empty() const { return urls.empty(); }
};

// "success,failure,dead" (any of them, in any order). Throws usage Error.
unsigned parse_notify_on(std::string_view csv);
std::string notify_on_text(unsigned on);

nlohmann::json to_json(const Notify& n);

// What happened to a run, as its notification reports it.
struct NotificationFacts {
  std::string job_id;
  std::string run_id;
  RunStatus status;                    // what the run became: succeeded, pending (to be retried) or dead
  int attempt = 0;
  std::string error;
  std::optional<int64_t> duration_us;  // of the attempt
  std::optional<int> exit_code;
  std::optional<int> http_status;
  int64_t retry_in_us = 0;             // status pending: when the next attempt is due
};

// The event a state change is: success, failure (an attempt failed), dead
// (the run went to the dead-letter queue), or nothing (cancelled, released).
std::optional<NotifyEvent> notify_event(RunStatus status, bool attempt_failed);

// The notification jobs for one state change of a run of `job`, one per
// URL; none when the job does not ask for this event. A run that dies
// sends "dead" when that is asked for, else "failure": one notification
// per state change, never two.
std::vector<JobSpec> notification_jobs(const JobSpec& job, const NotificationFacts& facts, bool attempt_failed);

// The JSON body of a notification (documented in jobctl(1), NOTIFICATIONS).
nlohmann::json notification_body(const JobSpec& job, const NotificationFacts& facts, NotifyEvent event);

}  // namespace jobctl::model
