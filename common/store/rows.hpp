#pragma once
// Column lists and row mappers shared by the store's queries, so every
// query that returns a job or a run reads it the same way.
#include <optional>
#include <string>
#include <vector>

#include "common/model/job.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

// 39 columns of jobs aliased j.
inline constexpr const char* kJobColumns =
    "j.id, j.name, j.queue, j.priority, j.command, j.env, j.cwd, j.payload, j.timeout_us, "
    "j.idempotency_key, j.version, j.paused, j.created_at, j.max_retries, j.backoff, j.retry_delay_us, "
    "j.max_retry_delay_us, j.retry_for_us, j.no_retry_exit_codes, j.max_deliveries, j.delivery, "
    "j.cron, j.tz, j.misfire, j.catchup_window_us, j.overlap, j.max_concurrent, j.jitter_us, j.next_fire_at, "
    "j.schedule_anchor, j.deleted_at, j.target, j.concurrency_key, j.tenant, j.fan_out, j.stagger_us, j.kind, j.dag_id, "
    "j.notify";
inline constexpr size_t kJobColumnCount = 39;

// 28 columns of runs aliased r.
inline constexpr size_t kRunColumnCount = 28;
inline constexpr const char* kRunColumns =
    "r.id, r.job_id, r.status, r.created_at, r.available_at, r.started_at, r.finished_at, r.lease_owner, "
    "r.lease_expires_at, r.fence, r.deliveries, r.attempts, r.cancel_requested, r.exit_code, r.error, "
    "r.failures, r.replay_of, r.replayed_at, r.occurrence, r.job_version, r.pinned_to, r.dag_run_id, r.dag_node, r.waiting_on, "
    "r.progress, r.progress_message, r.progress_at, r.checkpoint";

// The concurrency group a new run of the job joins, none when the job has
// no limit: its --concurrency-key, else the job itself.
std::optional<std::string> group_of(const model::JobSpec& s, const std::string& job_id);
// The same in SQL, over jobs aliased j.
inline constexpr const char* kGroupOfJob = "CASE WHEN j.max_concurrent > 0 THEN COALESCE(j.concurrency_key, j.id) END";

model::Job job_from_row(const Row& row, size_t first = 0);
model::Run run_from_row(const Row& row, size_t first = 0);


}  // namespace jobctl::store
