#pragma once
// The handlers of the API's routes (api.cpp lists them with their paths and
// roles), one file per resource: jobs, schedules, DAGs, records, the dead-letter queue.
#include "common/model/job.hpp"
#include "server/api.hpp"

namespace jobctl::server {

Reply submit_jobs(Call& c);      // POST   /jobs
Reply list_jobs(Call& c);        // GET    /jobs
Reply get_job(Call& c);          // GET    /jobs/{id}
Reply update_job(Call& c);       // PATCH  /jobs/{id}
Reply cancel_job(Call& c);       // DELETE /jobs/{id}
Reply retry_job(Call& c);        // POST   /jobs/{id}/retry
Reply pause_job(Call& c);        // POST   /jobs/{id}/pause
Reply resume_job(Call& c);       // POST   /jobs/{id}/resume
Reply delete_job(Call& c);       // POST   /jobs/{id}/delete
Reply restore_job(Call& c);      // POST   /jobs/{id}/restore
Reply submit_schedule(Call& c);  // POST   /schedules
Reply list_schedules(Call& c);   // GET    /schedules
Reply trigger_schedule(Call& c); // POST   /schedules/{id}/trigger
Reply schedule_runs(Call& c);    // GET    /schedules/{id}/runs
Reply submit_dag(Call& c);       // POST   /dags
Reply list_dag_runs(Call& c);    // GET    /dags
Reply dag_status(Call& c);       // GET    /dags/{id}/status
Reply cancel_dag_run(Call& c);   // POST   /dags/{id}/cancel
Reply pause_dag_run(Call& c);    // POST   /dags/{id}/pause
Reply resume_dag_run(Call& c);   // POST   /dags/{id}/resume
Reply retry_dag_run(Call& c);    // POST   /dags/{id}/retry
Reply job_attempts(Call& c);     // GET    /jobs/{id}/attempts
Reply job_logs(Call& c);         // GET    /jobs/{id}/logs
Reply follow_job_logs(Call& c);  // GET    /jobs/{id}/logs/follow
// At most `most` of those streams at once (each holds a worker thread);
// more are answered 503.
void limit_log_streams(int most);
Reply job_history(Call& c);      // GET    /jobs/{id}/history
Reply list_workers(Call& c);     // GET    /workers
Reply list_queues(Call& c);      // GET    /queues
Reply set_queue(Call& c);        // PATCH  /queues/{name}
Reply pause_queue(Call& c);      // POST   /queues/{name}/pause
Reply resume_queue(Call& c);     // POST   /queues/{name}/resume
Reply stats(Call& c);            // GET    /stats
Reply stats_series(Call& c);     // GET    /stats/series
Reply check(Call& c);            // GET    /check
Reply whoami(Call& c);           // GET    /whoami
Reply dead_runs(Call& c);        // GET    /dead-letter
Reply dead_run(Call& c);         // GET    /dead-letter/{id}
Reply replay_dead_run(Call& c);  // POST   /dead-letter/{id}/replay
Reply replay_dead_runs(Call& c); // POST   /dead-letter/replay
Reply dismiss_dead_run(Call& c); // POST   /dead-letter/{id}/dismiss
Reply dismiss_dead_runs(Call& c);// POST   /dead-letter/dismiss
Reply purge_dead_runs(Call& c);  // DELETE /dead-letter

// The Idempotency-Key header is the job's idempotency key (seed 001), so a
// retried POST makes one job. Throws usage Error when the body gives another.
void apply_idempotency_header(const Call& c, model::JobSpec& spec);

// A whole number from a query parameter within [min, max], else `fallback`
// when absent. Throws usage Error naming the parameter.
int query_int(const Call& c, const std::string& name, int fallback, int min, int max);

// For a full page (`items` == `limit`) of a list at `path`, the Link
// header (RFC 8288) to the next: the same query with before=`last`.
void link_next(const Call& c, Reply& reply, const std::string& path, size_t items, int limit, const std::string& last);

// A query parameter that is true or false (absent: false). Throws usage
// Error for anything else.
bool query_bool(const Call& c, const std::string& name);

}  // namespace jobctl::server
