#include "common/jobdef/job_input.hpp"

#include <fmt/format.h>

#include <utility>

#include "common/cron/plan.hpp"
#include "common/model/job_json.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/time.hpp"

namespace jobctl::jobdef {
namespace {

using nlohmann::json;

Error field_error(std::string_view field, std::string_view why) {
  return usage_error(fmt::format("field '{}': {}", field, why));
}

const std::string& want_string(const json& v, std::string_view field) {
  if (!v.is_string()) throw field_error(field, "must be a string");
  return v.get_ref<const std::string&>();
}

int want_int(const json& v, std::string_view field) {
  if (!v.is_number_integer()) throw field_error(field, "must be an integer");
  auto n = v.get<int64_t>();
  if (n < 0 || n > 1000000) throw field_error(field, "is out of range");
  return static_cast<int>(n);
}

model::Command command_from_json(const json& v, std::string_view field) {
  model::Command c;
  if (v.is_string()) {
    c.via_shell = true;
    c.argv = {v.get<std::string>()};
  } else if (v.is_array()) {
    for (const auto& a : v) {
      if (!a.is_string()) throw field_error(field, "array elements must be strings");
      c.argv.push_back(a.get<std::string>());
    }
  } else {
    throw field_error(field, "must be a string (run by sh -c) or an array of strings (argv)");
  }
  return c;
}

}  // namespace

model::JobSpec job_spec_from_json(const json& j) {
  if (!j.is_object()) throw usage_error("a job must be a JSON object");
  model::JobSpec s;
  bool has_command = false;
  std::string at, tz;
  model::ScheduleSpec sched;
  bool has_cron = false, has_schedule_field = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "command") {
      if (has_command) throw usage_error("give either 'command' or 'webhook', not both");
      s.command = command_from_json(v, key);
      has_command = true;
    } else if (key == "webhook") {
      if (has_command) throw usage_error("give either 'command' or 'webhook', not both");
      s.command.webhook = model::webhook_from_json(v);
      has_command = true;
    } else if (key == "notify") {
      if (v.is_string()) {
        s.notify.urls = {v.get<std::string>()};
      } else if (v.is_array()) {
        for (const auto& u : v) s.notify.urls.push_back(want_string(u, key));
      } else {
        throw field_error(key, "must be a URL or an array of URLs");
      }
    } else if (key == "notify_on") {
      s.notify.on = model::parse_notify_on(want_string(v, key));
    } else if (key == "name") {
      s.name = want_string(v, key);
    } else if (key == "queue") {
      s.queue = want_string(v, key);
    } else if (key == "priority") {
      s.priority = model::parse_priority(want_string(v, key));
    } else if (key == "timeout") {
      s.timeout_us = util::parse_duration(want_string(v, key), "timeout").count();
    } else if (key == "env") {
      if (!v.is_object()) throw field_error(key, "must be an object of strings");
      for (const auto& [k, ev] : v.items()) s.env[k] = want_string(ev, "env." + k);
    } else if (key == "cwd") {
      s.cwd = want_string(v, key);
      if (!s.cwd.empty() && s.cwd[0] != '/') throw field_error(key, "must be an absolute path");
    } else if (key == "payload") {
      s.payload = v.dump();
    } else if (key == "idempotency_key") {
      s.idempotency_key = want_string(v, key);
    } else if (key == "at") {
      at = want_string(v, key);
    } else if (key == "tz") {
      tz = want_string(v, key);
    } else if (key == "in") {
      s.delay_us = util::parse_duration(want_string(v, key), "in").count();
    } else if (key == "on") {
      s.target = model::parse_labels(want_string(v, key), "field 'on'");
    } else if (key == "cron") {
      sched.cron = want_string(v, key);
      has_cron = true;
    } else if (key == "misfire") {
      sched.misfire = model::parse_misfire(want_string(v, key));
      has_schedule_field = true;
    } else if (key == "catchup_window") {
      sched.catchup_window_us = util::parse_duration(want_string(v, key), "catchup_window").count();
      has_schedule_field = true;
    } else if (key == "overlap") {
      sched.overlap = model::parse_overlap(want_string(v, key));
      has_schedule_field = true;
    } else if (key == "max_concurrent") {
      s.max_concurrent = want_int(v, key);
    } else if (key == "concurrency_key") {
      s.concurrency_key = want_string(v, key);
    } else if (key == "tenant") {
      s.tenant = want_string(v, key);
    } else if (key == "on_each") {
      s.fan_out = model::parse_fan_out(want_string(v, key), "field 'on_each'");
    } else if (key == "stagger") {
      s.stagger_us = util::parse_duration(want_string(v, key), "stagger").count();
    } else if (key == "jitter") {
      sched.jitter_us = util::parse_duration(want_string(v, key), "jitter").count();
      has_schedule_field = true;
    } else if (key == "retries") {
      s.retry_given.max_retries = want_int(v, key);
    } else if (key == "backoff") {
      s.retry_given.backoff = model::parse_backoff(want_string(v, key));
    } else if (key == "retry_delay") {
      s.retry_given.delay_us = util::parse_duration(want_string(v, key), "retry_delay").count();
    } else if (key == "max_retry_delay") {
      s.retry_given.max_delay_us = util::parse_duration(want_string(v, key), "max_retry_delay").count();
    } else if (key == "retry_for") {
      s.retry_given.retry_for_us = util::parse_duration(want_string(v, key), "retry_for").count();
    } else if (key == "no_retry_exit_codes") {
      s.retry_given.no_retry_exit_codes = model::ExitCodeSet::parse(want_string(v, key));
    } else if (key == "max_deliveries") {
      s.retry_given.max_deliveries = want_int(v, key);
    } else if (key == "delivery") {
      s.retry_given.delivery = model::parse_delivery(want_string(v, key));
    } else {
      throw usage_error(fmt::format("unknown field '{}'", key),
                        "fields are: command or webhook, notify, notify_on, name, queue, priority, timeout, env, cwd, payload, "
                        "idempotency_key, at, tz, in, on, on_each, stagger, concurrency_key, max_concurrent, tenant, "
                        "cron, misfire, catchup_window, overlap, jitter, retries, backoff, retry_delay, max_retry_delay, retry_for, no_retry_exit_codes, "
                        "max_deliveries, delivery (see jobctl(1), BATCH FORMAT)");
    }
  }
  if (!has_command) throw field_error("command", "is required (or 'webhook')");
  if (has_schedule_field && !has_cron) throw field_error("cron", "is required by misfire, catchup_window, overlap and jitter");
  if (has_cron) {
    sched.max_concurrent = std::exchange(s.max_concurrent, std::nullopt);
    if (!at.empty() || s.delay_us) throw field_error("cron", "cannot be combined with 'at' or 'in'");
    if (!tz.empty()) sched.tz = tz;
    cron::validate_schedule(sched, s.name);
    s.schedule = std::move(sched);
    model::validate(s);
    return s;
  }
  if (!tz.empty() && at.empty()) throw field_error("tz", "goes with 'at' or 'cron'");
  if (!at.empty() && s.delay_us) throw field_error("in", "cannot be combined with 'at'");
  if (!at.empty()) s.run_at_us = util::parse_at(at, tz, "at");
  model::validate(s);
  return s;
}

}  // namespace jobctl::jobdef
