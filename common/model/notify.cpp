#include "common/model/notify.hpp"

#include <fmt/format.h>

#include "common/model/job.hpp"
#include "common/model/webhook.hpp"
#include "common/util/error.hpp"
#include "common/util/strings.hpp"

namespace jobctl::model {
namespace {

using nlohmann::json;

constexpr std::pair<NotifyEvent, std::string_view> kEvents[] = {
    {notify_success, "success"}, {notify_failure, "failure"}, {notify_dead, "dead"}};

std::string_view event_name(NotifyEvent e) {
  for (const auto& [ev, name] : kEvents)
    if (ev == e) return name;
  return "?";
}

}  // namespace

unsigned parse_notify_on(std::string_view csv) {
  unsigned on = 0;
  for (const auto& part : util::split(std::string(csv), ',')) {
    bool known = false;
    for (const auto& [ev, name] : kEvents)
      if (part == name) {
        on |= ev;
        known = true;
      }
    if (!known)
      throw usage_error(fmt::format("invalid --notify-on '{}': unknown event '{}'", csv, part),
                        "events are success, failure and dead, e.g. --notify-on failure,dead");
  }
  return on;
}

std::string notify_on_text(unsigned on) {
  std::string out;
  for (const auto& [ev, name] : kEvents) {
    if (!(on & ev)) continue;
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}

json to_json(const Notify& n) { return json{{"urls", n.urls}, {"on", notify_on_text(n.on)}}; }

std::optional<NotifyEvent> notify_event(RunStatus status, bool attempt_failed) {
  if (status == RunStatus::succeeded) return notify_success;
  if (status == RunStatus::dead) return notify_dead;
  if (status == RunStatus::pending && attempt_failed) return notify_failure;
  return std::nullopt;
}

json notification_body(const JobSpec& job, const NotificationFacts& f, NotifyEvent event) {
  json j{{"event", event_name(event)},
         {"job_id", f.job_id},
         {"job_name", job.name},
         {"queue", job.queue},
         {"run_id", f.run_id},
         {"status", to_string(f.status)},
         {"attempt", f.attempt},
         {"error", f.error}};
  j["duration_ms"] = f.duration_us ? json(*f.duration_us / 1000.0) : json(nullptr);
  j["exit_code"] = f.exit_code ? json(*f.exit_code) : json(nullptr);
  j["http_status"] = f.http_status ? json(*f.http_status) : json(nullptr);
  j["retry_in_ms"] = f.status == RunStatus::pending ? json(f.retry_in_us / 1000) : json(nullptr);
  return j;
}

std::vector<JobSpec> notification_jobs(const JobSpec& job, const NotificationFacts& f, bool attempt_failed) {
  std::vector<JobSpec> out;
  auto event = notify_event(f.status, attempt_failed);
  if (!event || job.notify.empty()) return out;
  // A death nobody subscribed to as such is still a failed attempt.
  if (*event == notify_dead && !(job.notify.on & notify_dead) && attempt_failed) event = notify_failure;
  if (!(job.notify.on & *event)) return out;
  std::string body = notification_body(job, f, *event).dump();
  for (const auto& url : job.notify.urls) {
    JobSpec n;
    n.name = fmt::format("notify {} of {}", event_name(*event), job.name.empty() ? f.job_id : job.name);
    n.queue = job.queue;
    n.priority = job.priority;
    n.tenant = job.tenant;
    n.target = job.target;  // where the job's secrets are: a --notify URL may reference them
    Webhook w;
    w.url = url;
    w.headers = {{"Content-Type", "application/json"}};
    w.body = body;
    w.literal_body = true;  // it quotes the job's name and error: no {{secret:…}} in it is resolved
    n.command.webhook = std::move(w);
    n.timeout_us = 30'000'000;
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace jobctl::model
