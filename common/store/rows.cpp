#include "common/store/rows.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/model/job_json.hpp"
#include "common/store/encodings.hpp"

namespace jobctl::store {
namespace {

// Decodes one stored value with `read`; one that does not decode leaves its
// field at the default and is named in Job::damaged, so that one bad row
// takes down neither a listing nor an agent.
void note_damage(model::Job& j, std::string_view column, std::string why) {
  if (why.size() > 160) why = why.substr(0, 157) + "...";
  j.damaged += fmt::format("{}column {} is unreadable: {}", j.damaged.empty() ? "" : "; ", column, why);
}

template <class Read>
void decode(model::Job& j, std::string_view column, Read&& read) {
  try {
    read();
  } catch (const std::exception& e) {
    note_damage(j, column, e.what());
  }
}

}  // namespace

// Each column is read here and written in write_definition below, in the
// same order: a new column is a line in each.
model::Job job_from_row(const Row& row, size_t first) {
  const Cells<kJobs> c(row, first);
  model::Job j;
  j.id = c.text("id");
  auto& s = j.spec;
  s.name = c.text("name");
  s.queue = c.text("queue");
  s.priority = static_cast<model::Priority>(c.i64("priority"));
  decode(j, "command", [&] { s.command = command_from_text(c.text("command")); });
  decode(j, "env", [&] { s.env = env_from_text(c.text("env")); });
  s.cwd = c.text("cwd");
  s.user = c.text("run_as");
  s.payload = c.opt_text("payload");
  if (s.payload && !nlohmann::json::accept(*s.payload)) {
    s.payload.reset();
    note_damage(j, "payload", "not JSON");
  }
  s.timeout_us = c.i64("timeout_us");
  s.idempotency_key = c.text("idempotency_key");
  j.version = static_cast<int>(c.i64("version"));
  j.paused = c.i64("paused") != 0;
  j.created_at = c.i64("created_at");
  auto& r = s.retry;
  r.max_retries = static_cast<int>(c.i64("max_retries"));
  decode(j, "backoff", [&] { r.backoff = model::parse_backoff(c.text("backoff")); });
  r.delay_us = c.i64("retry_delay_us");
  r.max_delay_us = c.i64("max_retry_delay_us");
  r.retry_for_us = c.i64("retry_for_us");
  decode(j, "no_retry_exit_codes", [&] { r.no_retry_exit_codes = model::ExitCodeSet::parse(c.text("no_retry_exit_codes")); });
  r.max_deliveries = static_cast<int>(c.i64("max_deliveries"));
  decode(j, "delivery", [&] { r.delivery = model::parse_delivery(c.text("delivery")); });
  const int64_t max_concurrent = c.i64("max_concurrent");
  if (!c.is_null("cron")) {
    model::ScheduleSpec sc;
    sc.cron = c.text("cron");
    sc.tz = c.text("tz");
    decode(j, "misfire", [&] { sc.misfire = model::parse_misfire(c.text("misfire")); });
    sc.catchup_window_us = c.i64("catchup_window_us");
    decode(j, "overlap", [&] { sc.overlap = model::parse_overlap(c.text("overlap")); });
    if (max_concurrent > 0) sc.max_concurrent = static_cast<int>(max_concurrent);
    sc.jitter_us = c.i64("jitter_us");
    sc.starts_at_us = c.opt_i64("starts_at");
    sc.ends_at_us = c.opt_i64("ends_at");
    sc.max_runs = c.opt_i64("max_runs");
    s.schedule = std::move(sc);
    j.next_fire_at = c.opt_i64("next_fire_at");
    j.schedule_anchor = c.i64("schedule_anchor");
    j.fired = c.i64("fired");
  }
  j.deleted_at = c.opt_i64("deleted_at");
  if (!c.is_null("target")) decode(j, "target", [&] { s.target = labels_from_text(c.text("target")); });
  s.concurrency_key = c.text("concurrency_key");
  // A bare --concurrency-key's limit of 1 is its default, not a choice: it
  // reads back unset, so removing the key removes the limit.
  if (!s.schedule && max_concurrent > 0 && !(max_concurrent == 1 && !c.is_null("concurrency_key")))
    s.max_concurrent = static_cast<int>(max_concurrent);
  s.tenant = c.text("tenant");
  if (!c.is_null("fan_out")) decode(j, "fan_out", [&] { s.fan_out = labels_from_text(c.text("fan_out")); });
  s.stagger_us = c.i64("stagger_us");
  j.kind = c.text("kind");
  j.dag_id = c.text("dag_id");
  if (!c.is_null("notify")) decode(j, "notify", [&] { s.notify = notify_from_text(c.text("notify")); });
  return j;
}

void write_definition(Writes<kJobs>& w, const model::JobSpec& s, const model::RetryPolicy& retry) {
  w.set("name", s.name);
  w.set("queue", s.queue);
  w.set("priority", int64_t{static_cast<int>(s.priority)});
  w.set("command", command_to_text(s.command));
  w.set("env", env_to_text(s.env));
  w.set("cwd", s.cwd);
  w.set("run_as", s.user);
  w.set("payload", nullable(s.payload));
  w.set("timeout_us", s.timeout_us);
  w.set("idempotency_key", nullable(s.idempotency_key));
  const auto& r = retry;
  w.set("max_retries", int64_t{r.max_retries});
  w.set("backoff", std::string(model::to_string(r.backoff)));
  w.set("retry_delay_us", r.delay_us);
  w.set("max_retry_delay_us", r.max_delay_us);
  w.set("retry_for_us", r.retry_for_us);
  w.set("no_retry_exit_codes", r.no_retry_exit_codes.str());
  w.set("max_deliveries", int64_t{r.max_deliveries});
  w.set("delivery", std::string(model::to_string(r.delivery)));
  // A job that is no schedule keeps the schedule defaults and no cron.
  const model::ScheduleSpec sc = s.schedule.value_or(model::ScheduleSpec{});
  w.set("cron", s.schedule ? Value(sc.cron) : Value(nullptr));
  w.set("tz", sc.tz);
  w.set("misfire", std::string(model::to_string(sc.misfire)));
  w.set("catchup_window_us", sc.catchup_window_us);
  w.set("overlap", std::string(model::to_string(sc.overlap)));
  w.set("max_concurrent", int64_t{model::group_limit(s)});
  w.set("jitter_us", sc.jitter_us);
  w.set("starts_at", nullable(sc.starts_at_us));
  w.set("ends_at", nullable(sc.ends_at_us));
  w.set("max_runs", nullable(sc.max_runs));
  w.set("target", s.target.empty() ? Value(nullptr) : Value(labels_to_text(s.target)));
  w.set("concurrency_key", nullable(s.concurrency_key));
  w.set("tenant", s.tenant);
  w.set("fan_out", s.fan_out ? Value(labels_to_text(*s.fan_out)) : Value(nullptr));
  w.set("stagger_us", s.stagger_us);
  w.set("notify", nullable(notify_to_text(s.notify)));
}

const std::string& select_job_by_id() {
  static const std::string sql = "SELECT " + select_list(kJobs) + " FROM jobs j WHERE j.id = $1";
  return sql;
}

model::Run run_from_row(const Row& row, size_t first) {
  const Cells<kRuns> c(row, first);
  model::Run r;
  r.id = c.text("id");
  r.job_id = c.text("job_id");
  r.queue = c.text("queue");
  r.status = model::parse_run_status(c.text("status"));
  r.created_at = c.i64("created_at");
  r.available_at = c.i64("available_at");
  r.started_at = c.opt_i64("started_at");
  r.finished_at = c.opt_i64("finished_at");
  r.lease_owner = c.text("lease_owner");
  r.lease_expires_at = c.opt_i64("lease_expires_at");
  r.fence = c.i64("fence");
  r.deliveries = static_cast<int>(c.i64("deliveries"));
  r.attempts = static_cast<int>(c.i64("attempts"));
  r.cancel_requested = c.i64("cancel_requested") != 0;
  if (auto code = c.opt_i64("exit_code")) r.exit_code = static_cast<int>(*code);
  r.error = c.text("error");
  r.failures = static_cast<int>(c.i64("failures"));
  r.replay_of = c.text("replay_of");
  r.replayed_at = c.opt_i64("replayed_at");
  r.dismissed_at = c.opt_i64("dismissed_at");
  r.occurrence = c.opt_i64("occurrence");
  r.job_version = static_cast<int>(c.i64("job_version"));
  r.pinned_to = c.text("pinned_to");
  r.dag_run_id = c.text("dag_run_id");
  r.dag_node = c.text("dag_node");
  r.waiting_on = static_cast<int>(c.i64("waiting_on"));
  if (!c.is_null("progress")) r.progress = std::stod(c.text("progress"));
  r.progress_message = c.text("progress_message");
  r.progress_at = c.opt_i64("progress_at");
  r.checkpoint = c.opt_text("checkpoint");
  return r;
}

}  // namespace jobctl::store
