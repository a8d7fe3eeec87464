#include "common/store/rows.hpp"

#include <nlohmann/json.hpp>

#include "common/model/job_json.hpp"

namespace jobctl::store {

std::optional<std::string> group_of(const model::JobSpec& s, const std::string& job_id) {
  if (model::group_limit(s) == 0) return std::nullopt;
  return s.concurrency_key.empty() ? job_id : s.concurrency_key;
}

model::Job job_from_row(const Row& row, size_t f) {
  model::Job j;
  j.id = row.text(f + 0);
  j.spec.name = row.text(f + 1);
  j.spec.queue = row.text(f + 2);
  j.spec.priority = static_cast<model::Priority>(row.i64(f + 3));
  j.spec.command = model::command_from_text(row.text(f + 4));
  j.spec.env = model::env_from_text(row.text(f + 5));
  j.spec.cwd = row.text(f + 6);
  if (!row.is_null(f + 7)) j.spec.payload = row.text(f + 7);
  j.spec.timeout_us = row.i64(f + 8);
  j.spec.idempotency_key = row.text(f + 9);
  j.version = static_cast<int>(row.i64(f + 10));
  j.paused = row.i64(f + 11) != 0;
  j.created_at = row.i64(f + 12);
  auto& r = j.spec.retry;
  r.max_retries = static_cast<int>(row.i64(f + 13));
  r.backoff = model::parse_backoff(row.text(f + 14));
  r.delay_us = row.i64(f + 15);
  r.max_delay_us = row.i64(f + 16);
  r.retry_for_us = row.i64(f + 17);
  r.no_retry_exit_codes = model::ExitCodeSet::parse(row.text(f + 18));
  r.max_deliveries = static_cast<int>(row.i64(f + 19));
  r.delivery = model::parse_delivery(row.text(f + 20));
  if (!row.is_null(f + 21)) {
    model::ScheduleSpec sc;
    sc.cron = row.text(f + 21);
    sc.tz = row.text(f + 22);
    sc.misfire = model::parse_misfire(row.text(f + 23));
    sc.catchup_window_us = row.i64(f + 24);
    sc.overlap = model::parse_overlap(row.text(f + 25));
    if (auto max = row.i64(f + 26); max > 0) sc.max_concurrent = static_cast<int>(max);
    sc.jitter_us = row.i64(f + 27);
    j.spec.schedule = std::move(sc);
    j.next_fire_at = row.opt_i64(f + 28);
    j.schedule_anchor = row.i64(f + 29);
  }
  j.deleted_at = row.opt_i64(f + 30);
  if (!row.is_null(f + 31)) j.spec.target = model::labels_from_text(row.text(f + 31));
  j.spec.concurrency_key = row.text(f + 32);
  // A bare --concurrency-key's limit of 1 is its default, not a choice: it
  // reads back unset, so removing the key removes the limit.
  if (auto max = row.i64(f + 26); !j.spec.schedule && max > 0 && !(max == 1 && !row.is_null(f + 32)))
    j.spec.max_concurrent = static_cast<int>(max);
  j.spec.tenant = row.text(f + 33);
  if (!row.is_null(f + 34)) j.spec.fan_out = model::labels_from_text(row.text(f + 34));
  j.spec.stagger_us = row.i64(f + 35);
  j.kind = row.text(f + 36);
  j.dag_id = row.text(f + 37);
  if (!row.is_null(f + 38)) j.spec.notify = model::notify_from_text(row.text(f + 38));
  return j;
}

model::Run run_from_row(const Row& row, size_t f) {
  model::Run r;
  r.id = row.text(f + 0);
  r.job_id = row.text(f + 1);
  r.status = model::parse_run_status(row.text(f + 2));
  r.created_at = row.i64(f + 3);
  r.available_at = row.i64(f + 4);
  r.started_at = row.opt_i64(f + 5);
  r.finished_at = row.opt_i64(f + 6);
  r.lease_owner = row.text(f + 7);
  r.lease_expires_at = row.opt_i64(f + 8);
  r.fence = row.i64(f + 9);
  r.deliveries = static_cast<int>(row.i64(f + 10));
  r.attempts = static_cast<int>(row.i64(f + 11));
  r.cancel_requested = row.i64(f + 12) != 0;
  if (auto code = row.opt_i64(f + 13)) r.exit_code = static_cast<int>(*code);
  r.error = row.text(f + 14);
  r.failures = static_cast<int>(row.i64(f + 15));
  r.replay_of = row.text(f + 16);
  r.replayed_at = row.opt_i64(f + 17);
  r.occurrence = row.opt_i64(f + 18);
  r.job_version = static_cast<int>(row.i64(f + 19));
  r.pinned_to = row.text(f + 20);
  r.dag_run_id = row.text(f + 21);
  r.dag_node = row.text(f + 22);
  r.waiting_on = static_cast<int>(row.i64(f + 23));
  if (!row.is_null(f + 24)) r.progress = std::stod(row.text(f + 24));
  r.progress_message = row.text(f + 25);
  r.progress_at = row.opt_i64(f + 26);
  if (!row.is_null(f + 27)) r.checkpoint = row.text(f + 27);
  return r;
}

}  // namespace jobctl::store
