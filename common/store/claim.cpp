// Store: the claim — which pending runs an agent starts next — and
// next_due_in, which tells an idle agent how long it may sleep.
//
// Order. Priority first, always. Within a priority the tenants of a queue
// take turns (round-robin): each tenant's runs are ranked in FIFO order,
// every tenant's first run comes before any tenant's second, and among
// equals the tenant served least recently (tenants.served_at, which each
// claim updates) goes first. So a tenant that submitted 10,000 runs and
// one that submitted 10 are served one for one, even one run per claim,
// and the burst cannot starve the other.
//
// Limits, all checked inside the claim (never by a flag an agent holds):
// * the run's job is not paused or deleted, its --on labels are among the
//   agent's, and a fan-out run is pinned to this agent;
// * it is not a missed occurrence of a schedule (missed_occurrence);
// * its concurrency group (runs.group_key) has fewer than runs.group_max running
//   (a forced trigger's run, group_max 0, counts in its group but is never held);
// * its queue is not paused, runs fewer than its max_concurrent, has a
//   rate token left, and its tenant runs fewer than tenant_max_concurrent.
//
// Why the limits hold under concurrent claims. On SQLite every claim runs
// inside the write lock, one at a time. On PostgreSQL the claim is a
// transaction of two statements: the first takes a transaction-scoped
// advisory lock (try, never wait) on every limited group and queue it may
// claim from (and is tried once more when some of its groups had nothing
// left due: kGroupsStillDue); the second, whose snapshot is taken after
// those locks were granted, counts what runs and claims only from the
// groups and queues the last lock statement returned. Any other claim in
// the same group or queue must hold the same
// lock, so the counts it reads are exact; completions only lower them.
// Unlimited runs need no lock and take the plain SKIP LOCKED path.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "common/store/agent.hpp"
#include "common/store/dag_progress.hpp"
#include "common/store/internal.hpp"
#include "common/store/queues.hpp"
#include "common/store/rows.hpp"

namespace jobctl::store {
namespace {

// The runs (alias `r`) a worker ($N names it) must not take: those of
// paused and deleted jobs (after delete, a run that was running then and
// came back for a retry), of jobs whose --on labels the worker lacks, and
// the nodes of a paused DAG run (pause blocks those waiting; a retry, a
// rescue or a run given back comes back pending, and started while the
// DAG run was paused).
// One primary key lookup per candidate run; the label test only for
// targeted jobs. On PostgreSQL, OFFSET 0 keeps it that: NOT EXISTS is
// otherwise made an anti join, and with a backlog of a million runs the
// planner chose to read every job to find the held ones first, 190 ms a
// claim (scripts/bench, the backlog figure).
std::string job_held(Dialect d, int worker_param, const char* r = "r") {
  const std::string lacks_labels =
      d == Dialect::postgres
          ? fmt::format("NOT (p.target::jsonb <@ COALESCE((SELECT w.labels FROM workers w WHERE w.id = ${}), "
                        "'[]')::jsonb)",
                        worker_param)
          : fmt::format("EXISTS (SELECT 1 FROM json_each(p.target) t WHERE t.value NOT IN (SELECT x.value FROM "
                        "workers w, json_each(w.labels) x WHERE w.id = ${}))",
                        worker_param);
  return fmt::format("(SELECT 1 FROM jobs p WHERE p.id = {0}.job_id AND (p.paused = 1 OR p.deleted_at IS NOT NULL OR "
                     "(p.target IS NOT NULL AND {1}) OR ({0}.dag_run_id IS NOT NULL AND EXISTS (SELECT 1 FROM dag_runs g "
                     "WHERE g.id = {0}.dag_run_id AND g.paused = 1))){2})",
                     r, lacks_labels, d == Dialect::postgres ? " OFFSET 0" : "");
}

// A fan-out run (alias `r`) is for one agent only.
std::string pinned_ok(int worker_param, const char* r = "r") {
  return fmt::format("({0}.pinned_to IS NULL OR {0}.pinned_to = (SELECT w.name FROM workers w WHERE w.id = ${1}))", r,
                     worker_param);
}

// The queues a claim names, bound as parameter $n, as a table u (name).
std::string queue_rows(Dialect d, int n) {
  return d == Dialect::postgres ? fmt::format("unnest(${}::text[]) AS u (name)", n)
                                : fmt::format("(SELECT value AS name FROM json_each(${})) u", n);
}

// Every priority a run has (model::Priority), as a table p (priority),
// and as a list for IN.
constexpr const char* kPriorities =
    "SELECT 0 AS priority UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3";
constexpr const char* kPriorityList = "0, 1, 2, 3";
static_assert(static_cast<int>(model::Priority::critical) == 0 && static_cast<int>(model::Priority::low) == 3);

// PostgreSQL: the first `limit` runs (alias r) of each priority that pass
// `test`, each priority's in due order, the priorities one after another
// (not merged into claim order): `columns` of runs r; `test` may name the
// priority walked as p.priority. Each priority's walk ends at its first
// run not yet due. One walk over every priority, in (priority,
// available_at) order, read each priority's runs not yet due before the
// next priority's: with 200,000 runs an hour ahead, an idle agent's claim
// read them all looking for one due, 119 ms of server time a claim.
std::string each_priority(const std::string& columns, const std::string& test, const std::string& limit) {
  return fmt::format(
      "SELECT r.* FROM ({priorities}) p CROSS JOIN LATERAL (SELECT {columns} FROM runs r "
      "WHERE r.priority = p.priority AND {test} ORDER BY r.available_at, r.id LIMIT {limit}) r",
      fmt::arg("priorities", kPriorities), fmt::arg("columns", columns), fmt::arg("test", test),
      fmt::arg("limit", limit));
}

// PostgreSQL: the first `limit` of each_priority's runs in claim order.
std::string in_claim_order(const std::string& columns, const std::string& test, const std::string& limit) {
  return fmt::format("{} ORDER BY r.priority, r.available_at, r.id LIMIT {}", each_priority(columns, test, limit),
                     limit);
}

constexpr const char* kGroupRunning = "(SELECT count(*) FROM runs o WHERE o.group_key = r.group_key AND o.status = 'running')";

// The tokens a rate-limited queue x has now: refilled at x.rate per second
// since tokens_at, up to a burst of a tenth of a second's worth (at least 1).
std::string tokens_now(Dialect d) {
  const bool pg = d == Dialect::postgres;
  return fmt::format("{}({}(1.0, x.rate / 10.0), x.tokens + (NOW_US - x.tokens_at) * x.rate / 1000000.0)",
                     pg ? "LEAST" : "min", pg ? "GREATEST" : "max");
}

// The whole tokens a queue may spend now (they are never negative).
std::string whole_tokens(Dialect d) {
  if (d == Dialect::postgres) return "CAST(floor(" + tokens_now(d) + ") AS INTEGER)";
  return "CAST(" + tokens_now(d) + " AS INTEGER)";
}

constexpr const char* kLimitedQueue = "(x.max_concurrent > 0 OR x.rate > 0 OR x.tenant_max_concurrent > 0)";

// The claim after its candidates: rank them, apply the queue, tenant and
// group allowances, and keep the best $4. Shared by both dialects.
constexpr const char* kRankAndChoose = R"SQL(
ranked AS (
  SELECT c.*,
         row_number() OVER (PARTITION BY qname, tenant ORDER BY priority, available_at, id) AS trank
  FROM cand c
), allowed AS (
  SELECT r.*,
         row_number() OVER (PARTITION BY qname ORDER BY priority, trank, served_at, available_at, id) AS qrank,
         row_number() OVER (PARTITION BY group_key ORDER BY priority, available_at, id) AS grank
  FROM ranked r WHERE trank <= troom
), chosen AS (
  SELECT id, tid FROM allowed WHERE qrank <= room AND (group_key IS NULL OR grank <= groom)
  ORDER BY priority, trank, served_at, available_at, id LIMIT $4
))SQL";

// The queues to claim from, with how many runs each may still start
// (room), and for each of their tenants when it was last served, how
// many more runs it may start (troom) and the best priority it has due
// (best; a tenant with none due is left out). On PostgreSQL `best` comes
// from a LATERAL join, read once a tenant: as a scalar subquery in qa's
// select list, inlined into qt, it was copied into each of qt's five uses
// of it (its filter, two window maxima, the share's CASE, its own column)
// and walked the claim index five times a tenant. Each walk also crosses
// the entries of the runs claimed since the index was last vacuumed,
// which on a large history can be many. SQLite has no LATERAL.
std::string queues_cte(Dialect d, const std::string& rows, const std::string& locked) {
  const bool pg = d == Dialect::postgres;
  // Each priority looked up on its own, in due order (as the claim index
  // has them): ordered by priority alone, the walk read every run not yet
  // due whenever none was due. (Not EXISTS, which PostgreSQL made a hashed
  // read of every run; without the order, a read of the table was planned
  // for each priority while it was small.)
  const std::string best_run = fmt::format(
      "SELECT p.priority FROM ({}) p WHERE (SELECT 1 FROM runs r WHERE r.queue = q.name AND r.tenant = tn.name "
      "AND r.priority = p.priority AND r.status = 'pending' AND r.available_at <= NOW_US "
      "ORDER BY r.available_at LIMIT 1) = 1 ORDER BY p.priority LIMIT 1",
      kPriorities);
  return fmt::format(R"SQL(
q AS (
  SELECT u.name, COALESCE(x.tenant_max_concurrent, 0) AS tmax,
         {least}(CASE WHEN COALESCE(x.max_concurrent, 0) > 0
                      THEN x.max_concurrent - (SELECT count(*) FROM runs o WHERE o.queue = u.name AND o.status = 'running')
                      ELSE $4 END,
                 CASE WHEN COALESCE(x.rate, 0) > 0 THEN {tokens} ELSE $4 END) AS room
  FROM {rows} LEFT JOIN queues x ON x.name = u.name
  WHERE COALESCE(x.paused, 0) = 0 AND (x.name IS NULL OR NOT {limited} OR {locked})
), qa AS (
  SELECT q.name AS qname, q.room, tn.name AS tenant, tn.served_at,
         CASE WHEN q.tmax > 0
              THEN q.tmax - (SELECT count(*) FROM runs o WHERE o.queue = q.name AND o.tenant = tn.name AND o.status = 'running')
              ELSE $4 END AS troom,
         {best} AS best
  FROM q CROSS JOIN tenants tn{best_join} WHERE q.room > 0
), qt AS (
  -- The tenants with runs due, and how many runs each may bring: a fair
  -- share of the claim, or all of it for one whose best priority beats
  -- another's.
  SELECT qa.*, max(best) OVER (PARTITION BY qname) AS worst,
         CASE WHEN best < max(best) OVER (PARTITION BY qname) THEN $4
              ELSE ($4 + count(*) OVER (PARTITION BY qname) - 1) / count(*) OVER (PARTITION BY qname) END AS share
  FROM qa WHERE best IS NOT NULL
))SQL",
                     fmt::arg("least", pg ? "LEAST" : "min"), fmt::arg("tokens", whole_tokens(d)),
                     fmt::arg("rows", rows), fmt::arg("limited", kLimitedQueue), fmt::arg("locked", locked),
                     fmt::arg("best", pg ? "b.priority" : "(" + best_run + ")"),
                     fmt::arg("best_join", pg ? " CROSS JOIN LATERAL (" + best_run + ") b" : ""));
}

// The filters every candidate passes. A run of a concurrency group passes
// while its group has room and, so that a long backlog of one group does
// not crowd out everything behind it, only if it is among the group's
// first waiting runs that fit in that room: PostgreSQL counts exactly
// (OFFSET may name the row), SQLite lets each claim take the group's
// first (the agent claims again at once while runs are due).
// `group_locked` is the dialect's test that this claim holds the group.
// It is a conjunct of its own, ahead of the job's lookup: PostgreSQL runs
// a filter's cheapest conjuncts first, and a run of a group another claim
// holds is then passed over without a probe of the job's row. Written
// inside the group's test instead, it came after that probe: when the
// groups locked could not fill the claim (their runs claimed by another
// agent meanwhile), the claim walked every due run of a herd of 100,000
// and looked each one's job up, 0.8-1.6 s a claim (scripts/bench, the herd).
std::string claimable(Dialect d, const std::string& group_locked) {
  const std::string offset =
      d == Dialect::postgres ? fmt::format("GREATEST(0, r.group_max - {} - 1)", kGroupRunning) : "0";
  // The runs ahead in the group are those this worker could take now (due,
  // in a queue it claims from, its job not held, not another agent's): a
  // run nobody here can start does not hold the group up. The running
  // count, not this order, is what holds the limit.
  return fmt::format(
      "r.status = 'pending' AND r.available_at <= NOW_US AND (r.group_key IS NULL OR {locked}) "
      "AND NOT EXISTS {held} AND {pinned} AND NOT {missed} "
      "AND (r.group_key IS NULL OR r.group_max = 0 OR ({running} < r.group_max AND NOT EXISTS (SELECT 1 FROM runs e "
      "WHERE e.group_key = r.group_key AND e.status = 'pending' AND e.available_at <= NOW_US "
      "AND (e.priority, e.available_at, e.id) < (r.priority, r.available_at, r.id) "
      "AND e.queue IN (SELECT qname FROM qt) AND NOT EXISTS {e_held} AND {e_pinned} AND NOT {e_missed} "
      "LIMIT 1 OFFSET {offset})))",
      fmt::arg("held", job_held(d, 1)), fmt::arg("pinned", pinned_ok(1)), fmt::arg("missed", missed_occurrence("r")),
      fmt::arg("locked", group_locked), fmt::arg("running", kGroupRunning), fmt::arg("offset", offset),
      fmt::arg("e_held", job_held(d, 1, "e")), fmt::arg("e_pinned", pinned_ok(1, "e")),
      fmt::arg("e_missed", missed_occurrence("e")));
}

// The candidate columns both dialects select, over qt and r; `tid` is
// where the row is (PostgreSQL's ctid, which its r selects as row_ctid;
// SQLite's rowid).
std::string candidate_columns(Dialect d) {
  return fmt::format(
      "r.id, r.{}, r.priority, r.available_at, r.group_key, qt.qname, qt.tenant, qt.room, qt.troom, qt.served_at, "
      "CASE WHEN r.group_key IS NULL THEN 0 WHEN r.group_max = 0 THEN {} ELSE r.group_max - {} END AS groom",
      d == Dialect::postgres ? "row_ctid AS tid" : "rowid AS tid", std::numeric_limits<int32_t>::max(), kGroupRunning);
}

// PostgreSQL, statement 1: the limited groups and queues this claim may
// touch, each locked (try, never wait) for the rest of the transaction.
// The groups: those of the first 2,048 due grouped runs of each queue,
// tenant and priority (each priority walked in due order: runs not yet
// due, such as schedules' occurrences made ahead, cost nothing here; and
// the groups are sorted once, by group: cut to 2,048 across priorities
// first, a herd's claim sorted its 2,048 runs once more), tried in
// the order of each group's first due run, the tenants of a queue taking
// turns (each one's first group, then each one's second, as the claim
// serves them), until 256 are locked. A group another claim holds is
// passed over, so claims at the same moment take different groups: when
// all tried the same 256, the claims that lost found no group of theirs
// and read every due run looking for one (scripts/bench, the herd: 0.5 s a
// claim). A group with a longer backlog than the window delays the groups
// behind it in the same queue and tenant until its backlog is shorter; it
// never takes their runs.
// The locks are tried as the ordered groups (and the limited queues, each
// filtered first in a CTE of its own) are read, and reading the groups
// stops at the 256th: a group never locked is left to the other claims.
// (256, not the claim's limit: a transaction's advisory locks stay until
// it ends, and the server's lock table has room for 64 per connection.)
// Returns what it got: kind 'g' (group) or 'q' (queue), and the name.
const std::string kLockLimited = fmt::format(
    R"SQL(
WITH wanted AS MATERIALIZED (
  SELECT f.name FROM (
    SELECT DISTINCT ON (r.group_key) r.group_key AS name, r.queue, r.tenant, r.priority, r.available_at, r.id
    FROM unnest($1::text[]) AS q (name) CROSS JOIN tenants tn CROSS JOIN LATERAL ({window}) r
    ORDER BY r.group_key, r.priority, r.available_at, r.id) f
  ORDER BY f.priority,
           row_number() OVER (PARTITION BY f.queue, f.tenant, f.priority ORDER BY f.available_at, f.id),
           f.available_at, f.id
), limited AS MATERIALIZED (
  SELECT x.name FROM queues x
  WHERE x.name = ANY ($1::text[]) AND x.paused = 0
    AND (x.max_concurrent > 0 OR x.rate > 0 OR x.tenant_max_concurrent > 0)
)
-- Advisory locks are per database: the schema keeps stores that share one apart.
(SELECT 'g' AS kind, name FROM wanted
 WHERE pg_try_advisory_xact_lock(hashtextextended(current_schema() || ':g:' || name, 7230652077))
 LIMIT 256)
UNION ALL
SELECT 'q', name FROM limited
WHERE pg_try_advisory_xact_lock(hashtextextended(current_schema() || ':q:' || name, 7230652077))
)SQL",
    fmt::arg("window", each_priority("r.group_key, r.queue, r.tenant, r.priority, r.available_at, r.id",
                                     "r.queue = q.name AND r.tenant = tn.name AND r.status = 'pending' "
                                     "AND r.group_key IS NOT NULL AND r.available_at <= NOW_US",
                                     "2048")));

// PostgreSQL: what statement 1 locked.
struct Locked {
  std::vector<std::string> groups, queues;
};
Locked lock_limited(Connection& c, const std::vector<std::string>& queues) {
  Locked got;
  for (const auto& row : c.query(kLockLimited, {c.list(queues)}))
    (row.text(0) == "g" ? got.groups : got.queues).push_back(row.text(1));
  return got;
}

// What a claim writes on each run it leases besides the lease: the
// attempt it opens, on the run itself (migration 15: the attempts row is
// written when the attempt ends), and nothing left of an earlier attempt's
// progress or output. `run`: the name the statement gives the run's row.
std::string opened_attempt(const char* run) {
  return fmt::format(
      "attempt_worker = $1, attempt_started_at = NOW_US, "
      "attempt_job_version = (SELECT v.version FROM jobs v WHERE v.id = {}.job_id), live_stdout_tail = NULL, "
      "live_stderr_tail = NULL, live_stdout_bytes = NULL, live_stderr_bytes = NULL, progress = NULL, "
      "progress_message = NULL, progress_at = NULL",
      run);
}

// A statement whose every NOW_US reads its CTE `stamp` instead.
std::string at_own_time(std::string sql) {
  constexpr std::string_view kNow = "NOW_US", kStamp = "(SELECT us FROM stamp)";
  for (size_t at = sql.find(kNow); at != std::string::npos; at = sql.find(kNow, at + kStamp.size()))
    sql.replace(at, kNow.size(), kStamp);
  return sql;
}

// PostgreSQL: how many of the groups $1 have a due run waiting, in a
// snapshot taken after their locks were granted. A group another agent
// claimed from just before statement 1 tried its lock (its claim committed
// after statement 1's snapshot) looked due there, and was locked.
constexpr const char* kGroupsStillDue =
    "SELECT count(*) FROM unnest($1::text[]) AS g (name) WHERE EXISTS (SELECT 1 FROM runs r "
    "WHERE r.group_key = g.name AND r.status = 'pending' AND r.available_at <= NOW_US OFFSET 0)";

// PostgreSQL, statement 2. Each (queue, tenant) pair walks the claim index
// in order; the chosen runs are then locked SKIP LOCKED (a run another
// agent took since this snapshot is skipped), leased, and their attempts
// opened on them. $5: locked groups, $6: locked queues.
//
// The chosen runs are found again by their ctids, a TID scan: once
// ANALYZE had seen few pending runs among many finished (a burst after a
// long history), the planner looked them up through the claim index (which
// a status = 'pending' test lets it use), walked every pending run for
// them, and each claim cost as much as the backlog (scripts/bench, the
// history figure). The lock still tests that the run is pending: a run
// another agent claimed (or that was cancelled or skipped) since this
// snapshot is found by FOR UPDATE in its newest version and checked again
// there; PostgreSQL releases whose TID scan passes every row in that
// recheck (nodeTidscan.c's TidRecheck long returned true; 15.18 checks
// the ctid) would claim it twice on the ctid alone. The test is written
// on COALESCE (status is NOT NULL, so it means the same) so that no
// partial index on status = 'pending' is taken for it. A run still
// locked is skipped.
//
// The statement runs at its own time, `stamp`, the clock as it runs (after
// its snapshot), not at its transaction's (statement 1's): every NOW_US in
// it reads `stamp`. A completion that committed between the two statements
// frees the group this claim fills, and its attempt ended after statement
// 1 began. Stamped with the transaction's time, the next occurrence of an
// overlap-skip schedule started, on record, before the one it waited for
// had finished, and the rate tokens it spent were counted at that time too.
const std::string kClaimPostgres = at_own_time(fmt::format(R"SQL(
WITH stamp AS MATERIALIZED (SELECT CLOCK_US AS us), {queues}, cand AS (
  SELECT {columns}
  FROM qt CROSS JOIN LATERAL ({walk}) r
), {rank}, picked AS (
  SELECT r.id FROM runs r WHERE r.ctid = ANY (ARRAY(SELECT tid FROM chosen)) AND COALESCE(r.status, '') = 'pending'
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE runs r SET status = 'running', lease_owner = $1, lease_expires_at = NOW_US + $2,
         fence = r.fence + 1, deliveries = r.deliveries + 1, attempts = r.attempts + 1,
         started_at = COALESCE(r.started_at, NOW_US), {opened}
  FROM picked WHERE r.id = picked.id
  RETURNING r.id, r.job_id, r.fence, r.attempts, r.available_at, r.priority, r.failures, r.started_at, r.occurrence,
            r.queue, r.tenant, r.dag_run_id, r.dag_node, r.checkpoint
), served AS (
  -- The tenants served, least recently served first next time (one another
  -- claim is marking right now is left to it: no claim waits for another).
  UPDATE tenants SET served_at = NOW_US
  WHERE name IN (SELECT t.name FROM tenants t WHERE t.name IN (SELECT tenant FROM claimed) FOR UPDATE SKIP LOCKED)
), spent AS (
  -- One token per run claimed from a rate-limited queue.
  UPDATE queues x SET tokens = {tokens} - s.n, tokens_at = NOW_US
  FROM (SELECT queue, count(*) AS n FROM claimed GROUP BY queue) s WHERE x.name = s.queue AND x.rate > 0
)
SELECT {claimed}, {jobs}
FROM claimed c JOIN jobs j ON j.id = c.job_id
ORDER BY c.priority, c.available_at, c.id
)SQL",
    fmt::arg("queues", queues_cte(Dialect::postgres, queue_rows(Dialect::postgres, 3), "u.name = ANY ($6::text[])")),
    fmt::arg("columns", candidate_columns(Dialect::postgres)),
    fmt::arg("walk", in_claim_order("r.*, r.ctid AS row_ctid",
                                    "r.queue = qt.qname AND r.tenant = qt.tenant AND p.priority >= qt.best AND " +
                                        claimable(Dialect::postgres, "r.group_key = ANY ($5::text[])"),
                                    "qt.share")),
    fmt::arg("rank", kRankAndChoose), fmt::arg("opened", opened_attempt("r")), fmt::arg("claimed", select_list(kClaimed)),
    fmt::arg("jobs", select_list(kJobs)), fmt::arg("tokens", tokens_now(Dialect::postgres))));

// SQLite: the same steps inside the BEGIN IMMEDIATE write lock, which is
// what serialises agents on one file. Each (queue, tenant) pair's best
// runs come from correlated subqueries over the claim index (SQLite's LIMIT
// cannot name a column): its fair share, $5, and those that beat another
// tenant's best priority. Naming every priority makes SQLite seek each
// one's due runs in turn (in claim order, no sort) and stop at its first
// run not yet due; ordered by priority alone, the walk read every run not
// yet due whenever fewer than the share were due (with 200,000 an hour
// ahead, an idle agent spent 145 ms of CPU a second). The second walk
// names only the priorities better than `worst`, as a list made per pair:
// written `priority < worst`, SQLite walked it as a range (every run not
// yet due again), and written `+priority < worst` beside the whole list, it
// sought the worse priorities too and read every due run of theirs to
// reject it (a backlog of a million runs: 2.4 ms a claimed run; 0.07 ms
// since). The chosen are updated by rowid: under the write lock no row has
// moved since they were read.
const std::string kClaimSqlite = fmt::format(R"SQL(
WITH {queues}, cand AS (
  SELECT {columns}
  FROM qt JOIN runs r ON (r.id IN (
    SELECT r.id FROM runs r
    WHERE r.queue = qt.qname AND r.tenant = qt.tenant AND r.priority IN ({priorities}) AND {claimable}
    ORDER BY r.priority, r.available_at, r.id
    LIMIT $5) OR r.id IN (
    SELECT r.id FROM runs r
    WHERE r.queue = qt.qname AND r.tenant = qt.tenant
      AND r.priority IN (SELECT p.priority FROM ({every_priority}) p WHERE p.priority < qt.worst) AND {claimable}
    ORDER BY r.priority, r.available_at, r.id
    LIMIT $4))
), {rank}
UPDATE runs SET status = 'running', lease_owner = $1, lease_expires_at = NOW_US + $2,
       fence = fence + 1, deliveries = deliveries + 1, attempts = attempts + 1,
       started_at = COALESCE(started_at, NOW_US), {opened}
WHERE rowid IN (SELECT tid FROM chosen)
RETURNING {claimed}
)SQL",
    fmt::arg("queues", queues_cte(Dialect::sqlite, queue_rows(Dialect::sqlite, 3), "1")),
    fmt::arg("columns", candidate_columns(Dialect::sqlite)), fmt::arg("claimable", claimable(Dialect::sqlite, "1")),
    fmt::arg("priorities", kPriorityList), fmt::arg("every_priority", kPriorities),
    fmt::arg("rank", kRankAndChoose), fmt::arg("opened", opened_attempt("runs")),
    fmt::arg("claimed", select_list(kClaimed, "")));

// The kClaimed columns both claim statements begin with.
ClaimedRun claimed_from_row(const Row& row) {
  const Cells<kClaimed> r(row);
  ClaimedRun c;
  c.run_id = r.text("id");
  c.job_id = r.text("job_id");
  c.fence = r.i64("fence");
  c.attempt = static_cast<int>(r.i64("attempts"));
  c.available_at = r.i64("available_at");
  c.failures = static_cast<int>(r.i64("failures"));
  c.first_started_at = r.i64("started_at");
  c.claimed_at = r.i64("claimed_at");
  c.occurrence = r.opt_i64("occurrence");
  c.queue = r.text("queue");
  c.tenant = r.text("tenant");
  c.dag_run_id = r.text("dag_run_id");
  c.dag_node = r.text("dag_node");
  c.checkpoint = r.opt_text("checkpoint");
  return c;
}

// SQLite: spends one token per run claimed from a rate-limited queue, and
// marks the tenants served (PostgreSQL does both inside the claim).
void account(Connection& conn, const std::vector<ClaimedRun>& claimed) {
  std::map<std::string, int64_t> per_queue;
  std::set<std::string> tenants;
  for (const auto& c : claimed) {
    ++per_queue[c.queue];
    tenants.insert(c.tenant);
  }
  if (!tenants.empty())
    conn.exec("UPDATE tenants SET served_at = NOW_US WHERE name IN (SELECT value FROM json_each($1))",
              {conn.list({tenants.begin(), tenants.end()})});
  // `x` is the row updated: the statement names the table so.
  for (const auto& [queue, n] : per_queue)
    conn.exec(fmt::format("UPDATE queues AS x SET tokens = {} - $2, tokens_at = NOW_US WHERE x.name = $1 AND x.rate > 0",
                          tokens_now(conn.dialect())),
              {queue, n});
}

// Microseconds until a queue holding `have` (< 1) tokens, refilled at
// `rate` a second, has a whole one. At most a day, kMinRate's longest
// wait, even for a rate set before kMinRate was its floor: clamped as a
// double, since converting one past int64_t's range is undefined.
int64_t token_wait_us(double have, double rate) {
  constexpr double kLongest = 1e6 / kMinRate;
  const double us = std::ceil((1.0 - have) / rate * 1e6);
  return static_cast<int64_t>(us <= kLongest ? us : kLongest);  // NaN too
}

}  // namespace

std::vector<ClaimedRun> Agent::claim(const std::string& worker_id, const std::vector<std::string>& queues, int limit,
                                     int64_t lease_us) {
  std::vector<ClaimedRun> out;
  if (limit <= 0 || queues.empty()) return out;
  // Runs whose job's row does not decode: they go dead below, not to an agent.
  std::vector<std::pair<ClaimedRun, std::string>> damaged;
  Transaction tx(*conn_, TxMode::write);
  Params params{worker_id, lease_us, conn_->list(queues), int64_t{limit}};
  if (conn_->dialect() == Dialect::postgres) {
    // Both statements are written for one plan whatever the queues, limit
    // and locks. Planned for each claim's values, they were planned at
    // every claim: the lock statement always (a custom plan estimated one
    // queue where the generic one assumes ten), the claim whenever new
    // statistics made its generic plan look dearer than the custom ones
    // so far. That cost 0.35-0.4 ms and 2-3 ms of server time a claim
    // (pg_stat_statements, 20,000 `true` jobs: 620 claims, 621 and 321
    // plans). The statements after them here look rows up by key.
    conn_->plan_once("runs");
    auto locked = lock_limited(*conn_, queues);
    // Groups locked after another agent claimed their runs leave the claim
    // short, and a short claim reads every due run: with two agents in a
    // herd of 100,000, a third of each claim's 256 groups, and 0.8-1.6 s a
    // claim. If some have nothing due in a fresh snapshot, the locks are
    // tried once more (the ones held are taken again: advisory locks nest;
    // the others stay held to the end, so a claim holds 512 at most).
    if (!locked.groups.empty() && conn_->query(kGroupsStillDue, {conn_->list(locked.groups)}).at(0).i64(0) <
                                      static_cast<int64_t>(locked.groups.size()))
      locked = lock_limited(*conn_, queues);
    params.push_back(conn_->list(locked.groups));
    params.push_back(conn_->list(locked.queues));
    // The claimed rows come with the COMMIT's answer: a round trip less
    // between a wake-up and a job's start.
    Rows claimed;
    conn_->query_with_next(kClaimPostgres, params, [&](Rows&& rows) { claimed = std::move(rows); });
    tx.commit();
    for (const auto& row : claimed) {
      ClaimedRun c = claimed_from_row(row);
      auto job = job_from_row(row, kClaimed.size());
      c.spec = std::move(job.spec);
      if (!job.damaged.empty()) damaged.emplace_back(std::move(c), std::move(job.damaged));
      else out.push_back(std::move(c));
    }
  } else {
    // The fair share: the claim divided among the (queue, tenant) pairs with runs due.
    const int64_t active = std::max<int64_t>(
        1, conn_->query(fmt::format("SELECT count(*) FROM json_each($1) q, tenants t WHERE EXISTS (SELECT 1 FROM "
                                    "runs r WHERE r.queue = q.value AND r.tenant = t.name AND r.priority IN ({}) "
                                    "AND r.status = 'pending' AND r.available_at <= NOW_US)",
                                    kPriorityList),
                        {params[2]})
               .at(0)
               .i64(0));
    params.push_back((limit + active - 1) / active);
    std::map<std::string, model::Job> jobs;
    for (const auto& row : conn_->query(kClaimSqlite, params)) {
      ClaimedRun c = claimed_from_row(row);
      auto it = jobs.find(c.job_id);
      if (it == jobs.end()) {
        auto job = conn_->query(select_job_by_id(), {c.job_id});
        it = jobs.emplace(c.job_id, job_from_row(job.at(0))).first;
      }
      c.spec = it->second.spec;
      out.push_back(std::move(c));
    }
    account(*conn_, out);
    std::erase_if(out, [&](ClaimedRun& c) {
      const auto& damage = jobs.at(c.job_id).damaged;
      if (damage.empty()) return false;
      damaged.emplace_back(std::move(c), damage);
      return true;
    });
    std::sort(out.begin(), out.end(), [](const ClaimedRun& a, const ClaimedRun& b) {
      return std::tie(a.spec.priority, a.available_at, a.run_id) < std::tie(b.spec.priority, b.available_at, b.run_id);
    });
    tx.commit();
  }
  // Once the claim has committed. A damaged run is ended as its agent ends
  // a run (fenced), in a transaction of its own; a DAG node gets its
  // parents' results, final since they ended. Should the store fail here,
  // the claim throws with its runs leased to this agent, as when a claim's
  // answer is lost: the agent's next heartbeat gives back what it does not
  // run.
  for (const auto& [run, damage] : damaged) {
    Transaction end(*conn_, TxMode::write);
    end_damaged_run(*conn_, run, damage);
    end.commit();
  }
  for (auto& c : out)
    if (!c.dag_run_id.empty()) c.parent_results = parent_results(*conn_, c.dag_run_id, c.job_id);
  return out;
}

std::optional<int64_t> Agent::next_due_in(const std::string& worker_id, const std::vector<std::string>& queues) {
  // The earliest due time per queue of the runs this worker could claim
  // once due: runs whose group or whose tenant is at its limit wait for a
  // completion (which wakes the agents), not for a time. Each queue,
  // tenant and priority walks the claim index in due order to its first
  // such run, so schedules' runs made ahead cost nothing here: an idle
  // agent asks after every empty claim, and a min() over every pending
  // run read all 100,000 of a herd's runs made ahead each time, beside the
  // leader making them (scripts/bench, the herd figure). It is planned at
  // each use (1.3-2.4 ms of server time): planned once, as the claim is,
  // it made the herd's lag p50 2.7-2.9 s against 1.3-1.6 s.
  auto due = conn_->query(
      fmt::format("SELECT name, min(first_at) - NOW_US FROM (SELECT u.name, "
                  "(SELECT r.available_at FROM runs r WHERE r.queue = u.name AND r.tenant = tn.name "
                  "AND r.priority = p.priority AND r.status = 'pending' "
                  "AND NOT EXISTS {held} AND {pinned} AND NOT {missed} AND (r.group_key IS NULL OR r.group_max = 0 OR {running} < r.group_max) "
                  "ORDER BY r.available_at LIMIT 1) AS first_at "
                  "FROM {queues} CROSS JOIN tenants tn CROSS JOIN ({priorities}) p "
                  "WHERE NOT EXISTS (SELECT 1 FROM queues x WHERE x.name = u.name AND (x.paused = 1 "
                  "OR (x.max_concurrent > 0 AND (SELECT count(*) FROM runs o WHERE o.queue = x.name "
                  "AND o.status = 'running') >= x.max_concurrent) "
                  "OR (x.tenant_max_concurrent > 0 AND (SELECT count(*) FROM runs o WHERE o.queue = x.name "
                  "AND o.tenant = tn.name AND o.status = 'running') >= x.tenant_max_concurrent)))) f "
                  "WHERE first_at IS NOT NULL GROUP BY name",
                  fmt::arg("held", job_held(conn_->dialect(), 1)), fmt::arg("pinned", pinned_ok(1)),
                  fmt::arg("missed", missed_occurrence("r")),
                  fmt::arg("running", kGroupRunning),
                  fmt::arg("queues", queue_rows(conn_->dialect(), 2)),
                  fmt::arg("priorities", kPriorities)),
      {worker_id, conn_->list(queues)});
  if (due.empty()) return std::nullopt;
  // A rate-limited queue is due no sooner than its next token.
  std::map<std::string, int64_t> token_wait;
  for (const auto& row : conn_->query(fmt::format("SELECT x.name, x.rate, {} FROM queues x WHERE x.rate > 0 AND {}",
                                                  tokens_now(conn_->dialect()), conn_->in_list("x.name", 1)),
                                      {conn_->list(queues)})) {
    double rate = std::stod(row.text(1)), have = std::stod(row.text(2));
    if (have < 1.0) token_wait[row.text(0)] = token_wait_us(have, rate);
  }
  std::optional<int64_t> soonest;
  for (const auto& row : due) {
    int64_t in = row.i64(1);
    if (auto it = token_wait.find(row.text(0)); it != token_wait.end()) in = std::max(in, it->second);
    soonest = soonest ? std::min(*soonest, in) : in;
  }
  return soonest;
}

}  // namespace jobctl::store
