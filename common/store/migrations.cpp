#include "common/store/migrations.hpp"

#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::store {
namespace {

// Migration 1: jobs, runs, attempts, workers. BLOB_T is the bytes type.
constexpr const char* kV1 = R"SQL(
CREATE TABLE jobs (
  id              TEXT PRIMARY KEY,
  name            TEXT NOT NULL DEFAULT '',
  queue           TEXT NOT NULL,
  priority        INTEGER NOT NULL,
  command         TEXT NOT NULL,
  env             TEXT NOT NULL DEFAULT '{}',
  cwd             TEXT NOT NULL DEFAULT '',
  payload         TEXT,
  timeout_us      BIGINT NOT NULL DEFAULT 0,
  idempotency_key TEXT,
  version         INTEGER NOT NULL DEFAULT 1,
  paused          INTEGER NOT NULL DEFAULT 0,
  deleted_at      BIGINT,
  created_at      BIGINT NOT NULL,
  updated_at      BIGINT NOT NULL
);
CREATE UNIQUE INDEX jobs_idempotency_key ON jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;

-- runs.job_id is deliberately not a foreign key: every write goes through
-- the Store, which writes a job and its first run in one transaction, and
-- the per-row check cost 30 % of batch submit on PostgreSQL (46,700 vs
-- 66,000 jobs/s for 100,000 jobs).
CREATE TABLE runs (
  id               TEXT PRIMARY KEY,
  job_id           TEXT NOT NULL,
  queue            TEXT NOT NULL,
  priority         INTEGER NOT NULL,
  status           TEXT NOT NULL,
  available_at     BIGINT NOT NULL,
  created_at       BIGINT NOT NULL,
  started_at       BIGINT,
  finished_at      BIGINT,
  lease_owner      TEXT,
  lease_expires_at BIGINT,
  fence            BIGINT NOT NULL DEFAULT 0,
  deliveries       INTEGER NOT NULL DEFAULT 0,
  attempts         INTEGER NOT NULL DEFAULT 0,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  exit_code        INTEGER,
  error            TEXT NOT NULL DEFAULT ''
);
-- The claim reads only pending runs, in claim order: its cost does not grow
-- with history.
CREATE INDEX runs_claim ON runs (queue, priority, available_at, id) WHERE status = 'pending';
CREATE INDEX runs_lease ON runs (lease_expires_at) WHERE status = 'running';
CREATE INDEX runs_owner ON runs (lease_owner) WHERE status = 'running';
CREATE INDEX runs_job ON runs (job_id, id);

CREATE TABLE attempts (
  run_id      TEXT NOT NULL REFERENCES runs (id),
  attempt     INTEGER NOT NULL,
  worker_id   TEXT NOT NULL,
  started_at  BIGINT NOT NULL,
  finished_at BIGINT,
  outcome     TEXT NOT NULL,
  exit_code   INTEGER,
  signal      INTEGER,
  error       TEXT NOT NULL DEFAULT '',
  stdout_tail BLOB_T,
  stderr_tail BLOB_T,
  PRIMARY KEY (run_id, attempt)
);

CREATE TABLE workers (
  id           TEXT PRIMARY KEY,
  name         TEXT NOT NULL,
  host         TEXT NOT NULL,
  pid          INTEGER NOT NULL,
  queues       TEXT NOT NULL,
  capacity     INTEGER NOT NULL,
  version      TEXT NOT NULL,
  lease_us     BIGINT NOT NULL,
  started_at   BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL,
  state        TEXT NOT NULL
);
)SQL";

// Migration 2: retry policy per job, failure counts and the dead-letter
// queue's links per run.
constexpr const char* kV2 = R"SQL(
ALTER TABLE jobs ADD COLUMN max_retries INTEGER NOT NULL DEFAULT 3;
ALTER TABLE jobs ADD COLUMN backoff TEXT NOT NULL DEFAULT 'exponential-jitter';
ALTER TABLE jobs ADD COLUMN retry_delay_us BIGINT NOT NULL DEFAULT 1000000;
ALTER TABLE jobs ADD COLUMN max_retry_delay_us BIGINT NOT NULL DEFAULT 300000000;
ALTER TABLE jobs ADD COLUMN retry_for_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN no_retry_exit_codes TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN max_deliveries INTEGER NOT NULL DEFAULT 5;
ALTER TABLE jobs ADD COLUMN delivery TEXT NOT NULL DEFAULT 'at-least-once';
ALTER TABLE runs ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN replay_of TEXT;
ALTER TABLE runs ADD COLUMN replayed_at BIGINT;
-- The dead-letter queue: dead runs not replayed yet, by when they died.
CREATE INDEX runs_dead ON runs (finished_at) WHERE status = 'dead' AND replayed_at IS NULL;
-- The claim skips paused jobs; this tiny index keeps that check a lookup
-- instead of a scan of all jobs.
CREATE INDEX jobs_paused ON jobs (id) WHERE paused = 1;
-- Per-queue defaults of the retry policy, applied at submit time to the
-- fields a job leaves unset. NULL: the built-in default.
CREATE TABLE queues (
  name                TEXT PRIMARY KEY,
  max_retries         INTEGER,
  backoff             TEXT,
  retry_delay_us      BIGINT,
  max_retry_delay_us  BIGINT,
  retry_for_us        BIGINT,
  no_retry_exit_codes TEXT,
  max_deliveries      INTEGER,
  delivery            TEXT,
  updated_at          BIGINT NOT NULL
);
)SQL";

// Migration 3: schedules. A job with a cron expression is a schedule: the
// leader agent materialises its occurrences as runs ahead of time.
constexpr const char* kV3 = R"SQL(
ALTER TABLE jobs ADD COLUMN cron TEXT;
ALTER TABLE jobs ADD COLUMN tz TEXT NOT NULL DEFAULT 'UTC';
-- The first occurrence not materialised yet (µs); NULL: not a schedule, or
-- one that will never fire again.
ALTER TABLE jobs ADD COLUMN next_fire_at BIGINT;
ALTER TABLE jobs ADD COLUMN schedule_anchor BIGINT;
ALTER TABLE jobs ADD COLUMN misfire TEXT NOT NULL DEFAULT 'latest';
ALTER TABLE jobs ADD COLUMN catchup_window_us BIGINT NOT NULL DEFAULT 3600000000;
ALTER TABLE jobs ADD COLUMN overlap TEXT NOT NULL DEFAULT 'skip';
-- Runs of the job allowed at once; 0 = no limit.
ALTER TABLE jobs ADD COLUMN max_concurrent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN jitter_us BIGINT NOT NULL DEFAULT 0;
CREATE INDEX jobs_next_fire ON jobs (next_fire_at) WHERE next_fire_at IS NOT NULL;

-- The fire time a schedule's run is for, and the job version it was made
-- under. One run per (job, version, occurrence): a leader that retries, or
-- two leaders for a moment, cannot fire an occurrence twice. A skipped
-- occurrence holds no place, so backfill can still run it.
ALTER TABLE runs ADD COLUMN occurrence BIGINT;
ALTER TABLE runs ADD COLUMN job_version INTEGER NOT NULL DEFAULT 1;
-- Where a run came from: submit, schedule, trigger, backfill (replays and
-- retries keep their origin). The overlap sweep skips only 'schedule' runs.
ALTER TABLE runs ADD COLUMN origin TEXT NOT NULL DEFAULT 'submit';
CREATE UNIQUE INDEX runs_occurrence ON runs (job_id, job_version, occurrence)
  WHERE occurrence IS NOT NULL AND status <> 'skipped';
-- The overlap checks at claim time: what of a job runs, what waits.
CREATE INDEX runs_running_job ON runs (job_id) WHERE status = 'running';
CREATE INDEX runs_waiting_occurrence ON runs (job_id, occurrence) WHERE status = 'pending' AND occurrence IS NOT NULL;

-- One row: which agent is the scheduler. epoch grows with every change of
-- holder and fences a deposed leader's writes.
CREATE TABLE scheduler_lease (
  id         INTEGER PRIMARY KEY,
  holder     TEXT,
  epoch      BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
INSERT INTO scheduler_lease (id, holder, epoch, expires_at) VALUES (1, NULL, 0, 0);
)SQL";

// Migration 4: the audit trail. A job's creation is its jobs row (who made
// it in created_by, when in created_at), so a batch of 100,000 jobs writes
// no extra rows; every later change is a job_events row written in the
// transaction that made it.
constexpr const char* kV4 = R"SQL(
ALTER TABLE jobs ADD COLUMN created_by TEXT NOT NULL DEFAULT '';
CREATE TABLE job_events (
  id      TEXT PRIMARY KEY,
  job_id  TEXT NOT NULL,
  at      BIGINT NOT NULL,
  action  TEXT NOT NULL,
  actor   TEXT NOT NULL,
  version INTEGER NOT NULL,
  details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX job_events_job ON job_events (job_id, id);
-- ls --deleted reads only the deleted jobs.
CREATE INDEX jobs_deleted ON jobs (deleted_at) WHERE deleted_at IS NOT NULL;
-- The claim skips runs of paused and of deleted jobs.
DROP INDEX jobs_paused;
CREATE INDEX jobs_held ON jobs (id) WHERE paused = 1 OR deleted_at IS NOT NULL;
-- Targeting: a job's --on labels (JSON array; NULL = any agent) and each
-- agent's labels.
ALTER TABLE jobs ADD COLUMN target TEXT;
ALTER TABLE workers ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
-- jobctl queue pause: the claim skips a paused queue.
ALTER TABLE queues ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
-- The version of the job each attempt ran: a run can outlive an update.
ALTER TABLE attempts ADD COLUMN job_version INTEGER NOT NULL DEFAULT 1;
)SQL";

// Migration 5: the fleet. Concurrency groups, tenants, fan-out and queue
// limits; see store/claim.cpp for how the claim uses them.
constexpr const char* kV5 = R"SQL(
-- A job's concurrency group is the job itself unless it names a shared key;
-- max_concurrent (v3) is the group's limit.
ALTER TABLE jobs ADD COLUMN concurrency_key TEXT;
ALTER TABLE jobs ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
-- --on-each: the labels whose agents each get a run; --stagger spreads them.
ALTER TABLE jobs ADD COLUMN fan_out TEXT;
ALTER TABLE jobs ADD COLUMN stagger_us BIGINT NOT NULL DEFAULT 0;
-- Each run carries what the claim needs without reading its job: its
-- tenant, its group (NULL: not limited) and that group's limit, and for a
-- fan-out run the agent (by name) it belongs to.
ALTER TABLE runs ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN group_key TEXT;
ALTER TABLE runs ADD COLUMN group_max INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN pinned_to TEXT;
-- The claim walks pending runs per (queue, tenant) in claim order.
DROP INDEX runs_claim;
CREATE INDEX runs_claim ON runs (queue, tenant, priority, available_at, id) WHERE status = 'pending';
CREATE INDEX runs_group_running ON runs (group_key) WHERE status = 'running' AND group_key IS NOT NULL;
CREATE INDEX runs_group_pending ON runs (group_key, priority, available_at, id)
  WHERE status = 'pending' AND group_key IS NOT NULL;
-- PostgreSQL's claim finds the groups to lock among the first waiting
-- grouped runs of each queue and tenant, in claim order.
CREATE INDEX runs_group_claim ON runs (queue, tenant, priority, available_at, id)
  WHERE status = 'pending' AND group_key IS NOT NULL;
CREATE INDEX runs_tenant_running ON runs (queue, tenant) WHERE status = 'running';
-- One run per (job, version, occurrence, agent): a fan-out occurrence has
-- one per agent.
DROP INDEX runs_occurrence;
CREATE UNIQUE INDEX runs_occurrence ON runs (job_id, job_version, occurrence, COALESCE(pinned_to, ''))
  WHERE occurrence IS NOT NULL AND status <> 'skipped';
-- Every tenant that ever submitted, and when a claim last served it: the
-- claim serves the least recently served first.
CREATE TABLE tenants (name TEXT PRIMARY KEY, served_at BIGINT NOT NULL DEFAULT 0);
INSERT INTO tenants (name) VALUES ('');
-- Queue limits: runs at once (all tenants, and each tenant), and a rate
-- as a token bucket (tokens at tokens_at; 0 rate = none).
ALTER TABLE queues ADD COLUMN max_concurrent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN tenant_max_concurrent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN rate DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN tokens DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN tokens_at BIGINT NOT NULL DEFAULT 0;
-- A schedule's occurrences waiting or running across the upgrade keep
-- their overlap limit: they join their job's group.
UPDATE runs SET group_key = job_id,
                group_max = (SELECT j.max_concurrent FROM jobs j WHERE j.id = runs.job_id)
WHERE status IN ('pending', 'blocked', 'running') AND occurrence IS NOT NULL
  AND (SELECT j.max_concurrent FROM jobs j WHERE j.id = runs.job_id) > 0;
)SQL";

// Migration 6: DAGs. A DAG's nodes are jobs (jobs.dag_id names their DAG);
// each DAG run makes one run per node, in one transaction: roots pending,
// the others blocked with waiting_on counting their parents not done yet.
// A scheduled DAG is a job too (kind 'dag'), whose occurrences the leader
// turns into DAG runs instead of runs.
constexpr const char* kV6 = R"SQL(
CREATE TABLE dags (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  definition  TEXT NOT NULL,
  on_failure  TEXT NOT NULL,
  created_at  BIGINT NOT NULL
);
CREATE TABLE dag_nodes (
  dag_id   TEXT NOT NULL,
  name     TEXT NOT NULL,
  job_id   TEXT NOT NULL,
  position INTEGER NOT NULL,
  PRIMARY KEY (dag_id, name)
);
CREATE TABLE dag_edges (
  dag_id TEXT NOT NULL,
  parent TEXT NOT NULL,
  child  TEXT NOT NULL
);
CREATE INDEX dag_edges_parent ON dag_edges (parent);
CREATE INDEX dag_edges_child ON dag_edges (child);
CREATE TABLE dag_runs (
  id           TEXT PRIMARY KEY,
  dag_id       TEXT NOT NULL,
  on_failure   TEXT NOT NULL,
  occurrence   BIGINT,
  paused       INTEGER NOT NULL DEFAULT 0,
  cancelled_at BIGINT,
  created_at   BIGINT NOT NULL
);
CREATE INDEX dag_runs_dag ON dag_runs (dag_id, id);
CREATE UNIQUE INDEX dag_runs_occurrence ON dag_runs (dag_id, occurrence) WHERE occurrence IS NOT NULL;
ALTER TABLE jobs ADD COLUMN dag_id TEXT;
ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'job';
ALTER TABLE runs ADD COLUMN dag_run_id TEXT;
ALTER TABLE runs ADD COLUMN dag_node TEXT;
ALTER TABLE runs ADD COLUMN waiting_on INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_dag_run ON runs (dag_run_id, job_id) WHERE dag_run_id IS NOT NULL;
)SQL";

// Migration 7: webhooks and notifications. A webhook job keeps its request
// in jobs.command (a JSON object instead of a string or an argv); --notify
// lives in jobs.notify; an HTTP attempt records its status and timings.
// Notifications are jobs of kind 'notification'.
constexpr const char* kV7 = R"SQL(
ALTER TABLE jobs ADD COLUMN notify TEXT;
ALTER TABLE attempts ADD COLUMN http_status INTEGER;
ALTER TABLE attempts ADD COLUMN timings TEXT;
)SQL";

// Migration 8: history by end time, for `jobctl stats` windows and
// `jobctl gc` retention.
constexpr const char* kV8 = R"SQL(
CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX attempts_finished ON attempts (finished_at);
CREATE INDEX attempts_started ON attempts (started_at);
)SQL";

// Migration 9: long-running jobs report progress (jobctl progress) and
// leave a checkpoint that the run's next attempt receives.
constexpr const char* kV9 = R"SQL(
ALTER TABLE runs ADD COLUMN progress REAL;
ALTER TABLE runs ADD COLUMN progress_message TEXT;
ALTER TABLE runs ADD COLUMN progress_at BIGINT;
ALTER TABLE runs ADD COLUMN checkpoint TEXT;
)SQL";

// Migration 10: an agent records a step of the store's clock it noticed
// (the SQLite clock is the host's wall clock), so `jobctl doctor` can
// report it.
constexpr const char* kV10 = R"SQL(
ALTER TABLE workers ADD COLUMN clock_step_us BIGINT;
ALTER TABLE workers ADD COLUMN clock_step_at BIGINT;
)SQL";

// Migration 11: how many bytes an attempt wrote to each stream, of which
// stdout_tail and stderr_tail keep the last 64 KiB. The agent ships both
// while the attempt runs (jobctl logs --follow).
constexpr const char* kV11 = R"SQL(
ALTER TABLE attempts ADD COLUMN stdout_bytes BIGINT;
ALTER TABLE attempts ADD COLUMN stderr_bytes BIGINT;
)SQL";

// Migration 12: bounded schedules. A schedule fires no occurrence before
// starts_at nor after ends_at, and at most max_runs of them; fired counts
// the occurrences the leader has made (backfills and triggers are extra).
constexpr const char* kV12 = R"SQL(
ALTER TABLE jobs ADD COLUMN starts_at BIGINT;
ALTER TABLE jobs ADD COLUMN ends_at BIGINT;
ALTER TABLE jobs ADD COLUMN max_runs BIGINT;
ALTER TABLE jobs ADD COLUMN fired BIGINT NOT NULL DEFAULT 0;
)SQL";

// Migration 13: a job may run as another user of the agent's host
// (--user); empty: the agent's --run-as, else its own user.
constexpr const char* kV13 = R"SQL(
ALTER TABLE jobs ADD COLUMN run_as TEXT NOT NULL DEFAULT '';
)SQL";

// Migration 14, PostgreSQL only: attempts.run_id is no longer a foreign
// key. Its check is a trigger that runs a query per attempt the claim
// opens (and one per run gc deletes): 15 % of the server's CPU while an
// agent drained `true` jobs (perf; the drain's server CPU went from 6.84
// and 7.85 s to 5.63 and 6.90 s for 20,000 runs without it). As with
// runs.job_id, every write goes through the Store: the claim opens an
// attempt only for a run it has just claimed, and gc, dlq purge and the
// DAG clean-up delete a run's attempts before the run. SQLite keeps the
// constraint: its check is one probe of the runs' key, and dropping it
// would mean rebuilding the table.
constexpr const char* kV14Postgres = R"SQL(
ALTER TABLE attempts DROP CONSTRAINT IF EXISTS attempts_run_id_fkey;
)SQL";

// Migration 15: a run's attempt is written once, when it ends. Until then
// the run itself carries it: the worker, start and job version of its
// current (or last) attempt, and the output the agent ships while it runs
// (jobctl logs --follow), cleared when the attempt ends. `attempts` is
// only ever appended to: a claim that opened its attempt row there put it
// on whatever old page of history had room for a fresh row (fillfactor,
// and what vacuum frees), read that page and wrote it whole to the WAL
// (scripts/bench, the history figure). Attempts running now move over.
constexpr const char* kV15 = R"SQL(
ALTER TABLE runs ADD COLUMN attempt_worker TEXT;
ALTER TABLE runs ADD COLUMN attempt_started_at BIGINT;
ALTER TABLE runs ADD COLUMN attempt_job_version INTEGER;
ALTER TABLE runs ADD COLUMN live_stdout_tail BLOB_T;
ALTER TABLE runs ADD COLUMN live_stderr_tail BLOB_T;
ALTER TABLE runs ADD COLUMN live_stdout_bytes BIGINT;
ALTER TABLE runs ADD COLUMN live_stderr_bytes BIGINT;
UPDATE runs SET attempt_worker = a.worker_id, attempt_started_at = a.started_at, attempt_job_version = a.job_version,
       live_stdout_tail = a.stdout_tail, live_stderr_tail = a.stderr_tail, live_stdout_bytes = a.stdout_bytes,
       live_stderr_bytes = a.stderr_bytes
FROM attempts a
WHERE a.run_id = runs.id AND a.attempt = runs.attempts AND a.finished_at IS NULL AND runs.status = 'running';
DELETE FROM attempts WHERE finished_at IS NULL AND EXISTS (SELECT 1 FROM runs r WHERE r.id = attempts.run_id
       AND r.attempts = attempts.attempt AND r.status = 'running');
)SQL";

// Migration 16, PostgreSQL only: every text column an index keys on (ids,
// names, queues, tenants, groups, owners) compares as bytes, as SQLite's
// BINARY does, whatever the database's default collation. Under a
// locale's collation every comparison in those indexes went through
// strcoll: in a database whose default is ICU's en-US, 18 % of the
// server's CPU in a `submit --file` of 100,000 jobs and 12 % in a drain of
// `true` jobs; under C.UTF-8 (scripts/bench's server), 3 %.
// The values are ASCII ids and names, so their order is SQLite's either
// way. No table is rewritten; the indexes on these columns are rebuilt.
// A column a row-level security policy names cannot change collation:
// `jobctl grant`'s policies on runs are set aside meanwhile
// (drop_runs_policies).
constexpr const char* kV16Postgres = R"SQL(
ALTER TABLE jobs ALTER COLUMN id TYPE TEXT COLLATE "C", ALTER COLUMN idempotency_key TYPE TEXT COLLATE "C";
ALTER TABLE runs ALTER COLUMN id TYPE TEXT COLLATE "C", ALTER COLUMN job_id TYPE TEXT COLLATE "C",
  ALTER COLUMN queue TYPE TEXT COLLATE "C", ALTER COLUMN tenant TYPE TEXT COLLATE "C",
  ALTER COLUMN group_key TYPE TEXT COLLATE "C", ALTER COLUMN lease_owner TYPE TEXT COLLATE "C",
  ALTER COLUMN dag_run_id TYPE TEXT COLLATE "C", ALTER COLUMN pinned_to TYPE TEXT COLLATE "C";
ALTER TABLE attempts ALTER COLUMN run_id TYPE TEXT COLLATE "C";
ALTER TABLE workers ALTER COLUMN id TYPE TEXT COLLATE "C";
ALTER TABLE queues ALTER COLUMN name TYPE TEXT COLLATE "C";
ALTER TABLE tenants ALTER COLUMN name TYPE TEXT COLLATE "C";
ALTER TABLE job_events ALTER COLUMN id TYPE TEXT COLLATE "C", ALTER COLUMN job_id TYPE TEXT COLLATE "C";
ALTER TABLE dags ALTER COLUMN id TYPE TEXT COLLATE "C";
ALTER TABLE dag_nodes ALTER COLUMN dag_id TYPE TEXT COLLATE "C", ALTER COLUMN name TYPE TEXT COLLATE "C";
ALTER TABLE dag_edges ALTER COLUMN parent TYPE TEXT COLLATE "C", ALTER COLUMN child TYPE TEXT COLLATE "C";
ALTER TABLE dag_runs ALTER COLUMN id TYPE TEXT COLLATE "C", ALTER COLUMN dag_id TYPE TEXT COLLATE "C";
-- A column's type change drops its statistics, which the claim's plans
-- rely on: autoanalyze would take them again only after many rows change.
ANALYZE jobs, runs, attempts, workers, queues, tenants, job_events, dags, dag_nodes, dag_edges, dag_runs;
)SQL";

// Migration 17: the leader's --misfire-threshold, published with its
// lease. A run of an occurrence that no agent started within it is missed
// (missed_occurrence): the claim passes it over and the leader's sweep
// records it, whichever agent claims and whichever leads.
constexpr const char* kV17 = R"SQL(
ALTER TABLE scheduler_lease ADD COLUMN misfire_after BIGINT;
)SQL";

// Migration 18: `jobctl dlq dismiss`. A dismissed dead run leaves the
// dead-letter queue without running again and stays in history; a dead
// DAG node could leave it only through `dag retry`. Every query of the
// queue tests it beside replayed_at; the partial index runs_dead still
// serves them, its predicate being implied.
constexpr const char* kV18 = R"SQL(
ALTER TABLE runs ADD COLUMN dismissed_at BIGINT;
)SQL";

// Migration 19: `jobctl dag submit --idempotency-key` (and POST /dags'
// Idempotency-Key header): a DAG submitted again with the key of one
// that exists is that one, as a job is. KEY_T: compared as bytes, as
// every text an index keys on (migration 16).
constexpr const char* kV19 = R"SQL(
ALTER TABLE dags ADD COLUMN idempotency_key KEY_T;
CREATE UNIQUE INDEX dags_idempotency_key ON dags (idempotency_key) WHERE idempotency_key IS NOT NULL;
)SQL";

// PostgreSQL only: runs and workers are updated in place all day. Leave
// room on each page for HOT updates and vacuum them long before the default
// 20 % of dead rows.
constexpr const char* kV1Postgres = R"SQL(
ALTER TABLE runs SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.02,
                      autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE attempts SET (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.05);
ALTER TABLE workers SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.0,
                         autovacuum_vacuum_threshold = 100);
)SQL";

std::string migration_sql(Dialect d, int version) {
  std::string sql;
  if (version == 1) {
    sql = kV1;
    if (d == Dialect::postgres) sql += kV1Postgres;
  } else if (version == 2) {
    sql = kV2;
  } else if (version == 3) {
    sql = kV3;
  } else if (version == 4) {
    sql = kV4;
  } else if (version == 5) {
    sql = kV5;
  } else if (version == 6) {
    sql = kV6;
  } else if (version == 7) {
    sql = kV7;
  } else if (version == 8) {
    sql = kV8;
  } else if (version == 9) {
    sql = kV9;
  } else if (version == 10) {
    sql = kV10;
  } else if (version == 11) {
    sql = kV11;
  } else if (version == 12) {
    sql = kV12;
  } else if (version == 13) {
    sql = kV13;
  } else if (version == 14 && d == Dialect::postgres) {
    sql = kV14Postgres;
  } else if (version == 15) {
    sql = kV15;
  } else if (version == 16 && d == Dialect::postgres) {
    sql = kV16Postgres;
  } else if (version == 17) {
    sql = kV17;
  } else if (version == 18) {
    sql = kV18;
  } else if (version == 19) {
    sql = kV19;
  }
  // BLOB_T: the bytes type; KEY_T: text compared as bytes (SQLite's is).
  const auto put = [&sql](std::string_view name, std::string_view type) {
    for (auto pos = sql.find(name); pos != std::string::npos; pos = sql.find(name, pos))
      sql.replace(pos, name.size(), type);
  };
  put("BLOB_T", d == Dialect::postgres ? "BYTEA" : "BLOB");
  put("KEY_T", d == Dialect::postgres ? "TEXT COLLATE \"C\"" : "TEXT");
  return sql;
}

// PostgreSQL: drops the row-level security policies on runs, if any
// (`jobctl grant submitter` makes one), and returns the statements that
// make them again as they were (as pg_dump would). A migration may not
// change the type or collation of a column a policy names ("cannot alter
// type of a column used in a policy definition": migration 16 and
// runs.lease_owner), so they are set aside while the schema is migrated,
// and made again in the same transaction.
std::vector<std::string> drop_runs_policies(Connection& conn) {
  std::vector<std::string> remake;
  for (const auto& row : conn.query(
           "SELECT format('CREATE POLICY %I ON runs AS %s FOR %s TO %s', policyname, permissive, cmd, "
           "(SELECT string_agg(quote_ident(r), ', ') FROM unnest(roles) AS r)) "
           "|| COALESCE(' USING (' || qual || ')', '') || COALESCE(' WITH CHECK (' || with_check || ')', ''), "
           "format('DROP POLICY %I ON runs', policyname) "
           "FROM pg_policies p JOIN pg_namespace n ON n.nspname = p.schemaname "
           "JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = p.tablename "
           "WHERE c.oid = to_regclass('runs') ORDER BY policyname")) {
    conn.exec_script(row.text(1));
    remake.push_back(row.text(0));
  }
  return remake;
}

// PostgreSQL: whether the public schema holds a store made before jobctl
// had a schema of its own.
bool legacy_tables_in_public(Connection& conn) {
  if (conn.dialect() != Dialect::postgres) return false;
  // jobctl's own: these five together, and its migrations table's shape.
  auto rows = conn.query(
      "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename IN ('schema_migrations', 'runs', "
      "'attempts', 'workers', 'scheduler_lease')");
  if (rows.at(0).i64(0) != 5) return false;
  return !conn.query("SELECT 1 FROM information_schema.columns WHERE table_schema = 'public' AND table_name = "
                     "'schema_migrations' AND column_name = 'applied_at'")
              .empty();
}

// jobctl's tables, as every migration above made them.
constexpr const char* kTables[] = {"schema_migrations", "jobs", "runs", "attempts", "workers", "queues",
                                   "scheduler_lease", "job_events", "tenants", "dags", "dag_nodes", "dag_edges",
                                   "dag_runs"};

// PostgreSQL: the schema jobctl's tables go in exists; a store made before
// jobctl had a schema of its own (its tables in public) is moved into it.
void prepare_schema(Connection& conn) {
  const std::string schema = search_path_schema(conn);
  // Only when missing: CREATE SCHEMA checks the right to create before it
  // looks, and a role that may use a schema need not be allowed to make one.
  if (conn.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", {schema}).empty())
    conn.exec_script("CREATE SCHEMA " + quoted_identifier(schema));
  if (schema == "public" || !legacy_tables_in_public(conn)) return;
  if (!conn.query("SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'schema_migrations'", {schema})
           .empty())
    return;  // it has a store of its own: the one in public stays
  for (const char* table : kTables)
    conn.exec_script(fmt::format("ALTER TABLE IF EXISTS public.{} SET SCHEMA {}", table, quoted_identifier(schema)));
}

}  // namespace

std::string search_path_schema(Connection& conn) {
  std::string path = conn.query("SELECT current_setting('search_path')").at(0).text(0);
  std::string first;
  for (std::istringstream list(path); std::getline(list, first, ',');) {
    first.erase(0, first.find_first_not_of(' '));
    first.erase(first.find_last_not_of(' ') + 1);
    if (first.size() >= 2 && first.front() == '"') first = first.substr(1, first.size() - 2);
    if (!first.empty() && first != "$user") return first;
  }
  throw Error(ExitCode::store, fmt::format("the search_path '{}' names no schema for jobctl's tables", path),
              "add schema=NAME to --db (jobctl(1), DATABASE)");
}

Error missing_schema(Connection& conn) {
  if (conn.dialect() == Dialect::postgres) {
    const std::string schema = search_path_schema(conn);
    auto usable = conn.query("SELECT has_schema_privilege(oid, 'USAGE') FROM pg_namespace WHERE nspname = $1", {schema});
    if (!usable.empty() && usable[0].text(0) != "t" && usable[0].text(0) != "1")
      return Error(ExitCode::store, fmt::format("PostgreSQL: permission denied for schema {}", schema),
                   fmt::format("connect as a role that may use it, or `GRANT USAGE ON SCHEMA {} TO ...`", schema));
    if (schema != "public" && legacy_tables_in_public(conn))
      return Error(ExitCode::store,
                   fmt::format("jobctl's tables are in schema public, not in schema {}", schema),
                   "run `jobctl init` to move them there, or add schema=public to --db");
  }
  // A --db that names another program's database: init is not the fix.
  const int64_t theirs =
      conn.dialect() == Dialect::postgres
          ? conn.query("SELECT count(*) FROM pg_tables WHERE schemaname = $1", {search_path_schema(conn)}).at(0).i64(0)
          : conn.query("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                .at(0)
                .i64(0);
  if (theirs > 0)
    return Error(ExitCode::store,
                 fmt::format("the database has no jobctl schema, and holds {} table{} of another program's", theirs,
                             theirs == 1 ? "" : "s"),
                 "check that --db names the jobctl store; `jobctl init` would add jobctl's tables beside them");
  return Error(ExitCode::store, "the database has no jobctl schema", "run `jobctl init` (with the same --db)");
}

int schema_version(Connection& conn) {
  // One round trip in the common case; a missing table means no schema.
  try {
    return static_cast<int>(conn.query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").at(0).i64(0));
  } catch (const Error& e) {
    if (e.code() != ExitCode::internal) throw;
    return 0;
  }
}

int migrate(Connection& conn) { return migrate_to(conn, kSchemaVersion); }

int migrate_to(Connection& conn, int target) {
  Transaction tx(conn, TxMode::write);
  if (conn.dialect() == Dialect::postgres) {
    conn.query("SELECT pg_advisory_xact_lock(7230652077)");
    prepare_schema(conn);
  }
  conn.exec_script("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)");
  int current = schema_version(conn);
  if (current > kSchemaVersion)
    throw Error(ExitCode::store,
                fmt::format("the database schema is at version {}, newer than this jobctl understands ({})", current,
                            kSchemaVersion),
                "upgrade jobctl and jobagent to the release that created it");
  int applied = 0;
  std::vector<std::string> policies;
  if (conn.dialect() == Dialect::postgres && current < target) policies = drop_runs_policies(conn);
  for (int v = current + 1; v <= target; ++v) {
    try {
      conn.exec_script(migration_sql(conn.dialect(), v));
    } catch (const Error& e) {
      // The database's own objects, not jobctl's, are what can stop a
      // migration's script that ran in the tests: a view, a trigger or a
      // policy of its own on a column the script changes.
      if (e.code() != ExitCode::internal) throw;
      throw Error(ExitCode::store,
                  fmt::format("upgrading the schema to version {} failed, and nothing was changed: {}", v, e.what()),
                  "if the error names an object of yours on jobctl's tables (a view, a trigger, a policy), drop it, "
                  "run `jobctl init`, then make it again");
    }
    conn.exec("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, NOW_US)", {int64_t{v}});
    ++applied;
  }
  for (const auto& p : policies) conn.exec_script(p);
  tx.commit();
  return applied;
}

}  // namespace jobctl::store
