// Store: the jobctl side — submit, read, cancel.
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/model/job_json.hpp"
#include "common/store/dag_progress.hpp"
#include "common/store/fan_out.hpp"
#include "common/store/rows.hpp"
#include "common/store/store.hpp"
#include "common/util/error.hpp"
#include "common/util/ulid.hpp"

namespace jobctl::store {
namespace {

// A job's "latest" run, the one get, ls, wait, cancel and retry act on: the
// newest, leaving out a schedule's occurrences made ahead that are not due
// yet (its leader makes runs a horizon ahead, and those are not it). A
// schedule with nothing due yet has its first. `job` is the SQL naming the
// job id.
std::string latest_run_of(const std::string& job) {
  return fmt::format("COALESCE((SELECT max(x.id) FROM runs x WHERE x.job_id = {0} AND NOT (x.occurrence IS NOT NULL "
                     "AND x.status = 'pending' AND x.started_at IS NULL AND x.available_at > NOW_US)), "
                     "(SELECT min(x.id) FROM runs x WHERE x.job_id = {0}))",
                     job);
}

// PostgreSQL receives batches as arrays unnested into one INSERT per table:
// one round trip per chunk instead of two per job.
constexpr size_t kChunk = 5000;

constexpr const char* kInsertJob =
    "INSERT INTO jobs (id, name, queue, priority, command, env, cwd, payload, timeout_us, idempotency_key, "
    "max_retries, backoff, retry_delay_us, max_retry_delay_us, retry_for_us, no_retry_exit_codes, max_deliveries, "
    "delivery, target, max_concurrent, concurrency_key, tenant, fan_out, stagger_us, notify, created_by, created_at, "
    "updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, "
    "$21, $22, $23, $24, $25, $26, NOW_US, NOW_US)";
// A run is due at --at when given, else --in after now (0 by default).
constexpr const char* kInsertRun =
    "INSERT INTO runs (id, job_id, queue, priority, status, available_at, created_at, tenant, group_key, group_max, pinned_to) "
    "VALUES ($1, $2, $3, $4, 'pending', COALESCE($5, NOW_US + $6), NOW_US, $7, $8, $9, $10)";
constexpr const char* kInsertJobsUnnest =
    "INSERT INTO jobs (id, name, queue, priority, command, env, cwd, payload, timeout_us, idempotency_key, "
    "max_retries, backoff, retry_delay_us, max_retry_delay_us, retry_for_us, no_retry_exit_codes, max_deliveries, "
    "delivery, target, max_concurrent, concurrency_key, tenant, fan_out, stagger_us, notify, created_by, created_at, "
    "updated_at) SELECT u.*, $26, NOW_US, NOW_US FROM unnest($1::text[], "
    "$2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int8[], $10::text[], "
    "$11::int[], $12::text[], $13::int8[], $14::int8[], $15::int8[], $16::text[], $17::int[], $18::text[], "
    "$19::text[], $20::int[], $21::text[], $22::text[], $23::text[], $24::int8[], $25::text[]) AS u";
constexpr const char* kInsertRunsUnnest =
    "INSERT INTO runs (id, job_id, queue, priority, status, available_at, created_at, tenant, group_key, group_max) "
    "SELECT u.id, u.job_id, u.queue, u.priority, 'pending', COALESCE(u.at, NOW_US + u.delay), NOW_US, u.tenant, "
    "u.group_key, u.group_max FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int8[], $6::int8[], $7::text[], "
    "$8::text[], $9::int[]) AS u (id, job_id, queue, priority, at, delay, tenant, group_key, group_max)";

struct NewRow {
  const model::JobSpec* spec;
  std::string job_id;
  std::string run_id;
};

std::optional<std::string> opt(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return s;
}

Value target_value(const model::Labels& target) {
  if (target.empty()) return nullptr;
  return model::labels_to_text(target);
}

Value nullable(const std::string& s) {
  if (s.empty()) return nullptr;
  return s;
}

std::optional<std::string> fan_out_text(const model::JobSpec& s) {
  if (!s.fan_out) return std::nullopt;
  return model::labels_to_text(*s.fan_out);
}

Value opt_value(const std::optional<std::string>& v) {
  if (!v) return nullptr;
  return *v;
}

void insert_each(Connection& c, const std::vector<NewRow>& rows, const std::string& actor) {
  for (const auto& r : rows) {
    const auto& s = *r.spec;
    const auto& p = s.retry;
    c.exec(kInsertJob, {r.job_id, s.name, s.queue, int64_t{static_cast<int>(s.priority)},
                        model::command_to_text(s.command), model::env_to_text(s.env), s.cwd,
                        s.payload ? Value(*s.payload) : Value(nullptr), s.timeout_us, nullable(s.idempotency_key),
                        int64_t{p.max_retries}, std::string(model::to_string(p.backoff)), p.delay_us, p.max_delay_us,
                        p.retry_for_us, p.no_retry_exit_codes.str(), int64_t{p.max_deliveries},
                        std::string(model::to_string(p.delivery)), target_value(s.target),
                        int64_t{model::group_limit(s)}, nullable(s.concurrency_key), s.tenant,
                        opt_value(fan_out_text(s)), s.stagger_us, opt_value(model::notify_to_text(s.notify)), actor});
    if (r.run_id.empty()) continue;  // a schedule (its leader makes the runs) or a fan-out (insert_fan_out)
    c.exec(kInsertRun, {r.run_id, r.job_id, s.queue, int64_t{static_cast<int>(s.priority)},
                        s.run_at_us ? Value(*s.run_at_us) : Value(nullptr), s.delay_us, s.tenant,
                        opt_value(group_of(s, r.job_id)), int64_t{model::group_limit(s)}, nullptr});
  }
}

// A fan-out job's runs: one per matching agent, each --stagger after the
// one before. Returns the first run's id; throws invalid_state (and the
// submit writes nothing) when no agent matches.
std::string insert_fan_out(Connection& c, const NewRow& row) {
  const auto& s = *row.spec;
  auto agents = fan_out_agents(c, *s.fan_out);
  if (agents.empty())
    throw Error(ExitCode::invalid_state, no_agent_reason(*s.fan_out),
                "`jobctl workers` lists the agents and their labels; start one with jobagent --label");
  std::string first;
  const int64_t base = s.run_at_us ? *s.run_at_us : c.query("SELECT NOW_US").at(0).i64(0) + s.delay_us;
  for (size_t i = 0; i < agents.size(); ++i) {
    std::string id = util::new_ulid();
    if (first.empty()) first = id;
    c.exec(kInsertRun, {id, row.job_id, s.queue, int64_t{static_cast<int>(s.priority)},
                        base + static_cast<int64_t>(i) * s.stagger_us, int64_t{0}, s.tenant,
                        opt_value(group_of(s, row.job_id)), int64_t{model::group_limit(s)}, agents[i]});
  }
  return first;
}

void insert_unnest(Connection& c, const std::vector<NewRow>& rows, const std::string& actor) {
  for (size_t start = 0; start < rows.size(); start += kChunk) {
    size_t end = std::min(rows.size(), start + kChunk);
    std::vector<std::vector<std::optional<std::string>>> cols(25);
    for (auto& col : cols) col.reserve(end - start);
    for (size_t i = start; i < end; ++i) {
      const auto& s = *rows[i].spec;
      cols[0].push_back(rows[i].job_id);
      cols[1].push_back(s.name);
      cols[2].push_back(s.queue);
      cols[3].push_back(std::to_string(static_cast<int>(s.priority)));
      cols[4].push_back(model::command_to_text(s.command));
      cols[5].push_back(model::env_to_text(s.env));
      cols[6].push_back(s.cwd);
      cols[7].push_back(s.payload);
      cols[8].push_back(std::to_string(s.timeout_us));
      cols[9].push_back(opt(s.idempotency_key));
      const auto& p = s.retry;
      cols[10].push_back(std::to_string(p.max_retries));
      cols[11].push_back(std::string(model::to_string(p.backoff)));
      cols[12].push_back(std::to_string(p.delay_us));
      cols[13].push_back(std::to_string(p.max_delay_us));
      cols[14].push_back(std::to_string(p.retry_for_us));
      cols[15].push_back(p.no_retry_exit_codes.str());
      cols[16].push_back(std::to_string(p.max_deliveries));
      cols[17].push_back(std::string(model::to_string(p.delivery)));
      cols[18].push_back(s.target.empty() ? std::nullopt : std::optional<std::string>(model::labels_to_text(s.target)));
      cols[19].push_back(std::to_string(model::group_limit(s)));
      cols[20].push_back(opt(s.concurrency_key));
      cols[21].push_back(s.tenant);
      cols[22].push_back(fan_out_text(s));
      cols[23].push_back(std::to_string(s.stagger_us));
      cols[24].push_back(model::notify_to_text(s.notify));
    }
    Params jobs;
    for (const auto& col : cols) jobs.emplace_back(pg_array(col));
    jobs.emplace_back(actor);
    c.exec(kInsertJobsUnnest, jobs);
    std::vector<std::optional<std::string>> run_ids, at, delay;
    std::vector<std::optional<std::string>> job_ids, queues, priorities, tenants, group_keys, group_maxes;
    for (size_t i = start; i < end; ++i) {
      const auto& s = *rows[i].spec;
      if (rows[i].run_id.empty()) continue;  // a schedule (its leader makes the runs) or a fan-out
      run_ids.push_back(rows[i].run_id);
      job_ids.push_back(rows[i].job_id);
      queues.push_back(s.queue);
      priorities.push_back(std::to_string(static_cast<int>(s.priority)));
      at.push_back(s.run_at_us ? std::optional<std::string>(std::to_string(*s.run_at_us)) : std::nullopt);
      delay.push_back(std::to_string(s.delay_us));
      tenants.push_back(s.tenant);
      group_keys.push_back(group_of(s, rows[i].job_id));
      group_maxes.push_back(std::to_string(model::group_limit(s)));
    }
    if (!run_ids.empty())
      c.exec(kInsertRunsUnnest, {pg_array(run_ids), pg_array(job_ids), pg_array(queues), pg_array(priorities),
                                 pg_array(at), pg_array(delay), pg_array(tenants), pg_array(group_keys), pg_array(group_maxes)});
  }
}

// The job id and latest run id already holding each key.
std::map<std::string, SubmitResult> existing_keys(Connection& c, const std::set<std::string>& keys) {
  std::map<std::string, SubmitResult> found;
  if (keys.empty()) return found;
  std::vector<std::string> list(keys.begin(), keys.end());
  std::string sql = "SELECT j.idempotency_key, j.id, (SELECT max(r.id) FROM runs r WHERE r.job_id = j.id) FROM jobs j WHERE " +
                    in_list(c.dialect(), "j.idempotency_key", 1);
  for (const auto& row : c.query(sql, {list_param(c.dialect(), list)}))
    found[row.text(0)] = SubmitResult{row.text(1), row.text(2), true};
  return found;
}

}  // namespace

std::vector<SubmitResult> Store::submit(const std::vector<model::JobSpec>& specs) {
  // A concurrent submit with the same idempotency key can win the race
  // between our lookup and our insert; the retry then finds its job.
  for (int tries = 0;; ++tries) {
    try {
      return insert_jobs(specs);
    } catch (const UniqueViolation& e) {
      if (tries == 2) throw Error(ExitCode::internal, fmt::format("submit kept conflicting: {}", e.what()));
    }
  }
}

std::vector<SubmitResult> Store::insert_jobs(std::vector<model::JobSpec> specs) {
  Transaction tx(*conn_, TxMode::write);
  auto results = write_jobs(std::move(specs), FirstRun::yes);
  tx.commit();
  return results;
}

std::vector<std::string> Store::insert_node_jobs(std::vector<model::JobSpec> specs) {
  std::vector<std::string> ids;
  for (const auto& r : write_jobs(std::move(specs), FirstRun::no)) ids.push_back(r.job_id);
  return ids;
}

std::vector<SubmitResult> Store::write_jobs(std::vector<model::JobSpec> specs, FirstRun first_run) {
  std::set<std::string> spec_queues;
  for (const auto& s : specs) spec_queues.insert(s.queue);
  auto defaults = queue_defaults(spec_queues);
  for (auto& s : specs) {
    model::RetryOverrides policy = defaults[s.queue];
    policy.merge(s.retry_given);
    s.retry = policy.resolve();
    model::validate(s.retry);
    if (s.schedule) model::validate(*s.schedule, s.name);
  }
  std::set<std::string> keys;
  for (const auto& s : specs)
    if (!s.idempotency_key.empty()) keys.insert(s.idempotency_key);
  auto known = existing_keys(*conn_, keys);

  std::vector<SubmitResult> results;
  std::vector<NewRow> fresh;
  results.reserve(specs.size());
  fresh.reserve(specs.size());
  std::set<std::string> queues;
  for (const auto& s : specs) {
    if (!s.idempotency_key.empty()) {
      if (auto it = known.find(s.idempotency_key); it != known.end()) {
        results.push_back(it->second);
        continue;
      }
    }
    // A schedule's runs are made by its leader, a fan-out's below.
    NewRow row{&s, util::new_ulid(),
               s.schedule || s.fan_out || first_run == FirstRun::no ? std::string() : util::new_ulid()};
    if (!s.idempotency_key.empty()) known[s.idempotency_key] = SubmitResult{row.job_id, row.run_id, true};
    results.push_back(SubmitResult{row.job_id, row.run_id, false});
    queues.insert(s.queue);
    fresh.push_back(std::move(row));
  }
  if (dialect() == Dialect::postgres && fresh.size() > 1) {
    insert_unnest(*conn_, fresh, actor_);
  } else {
    insert_each(*conn_, fresh, actor_);
  }
  std::vector<std::pair<std::string, const model::JobSpec*>> schedules;
  for (const auto& r : fresh)
    if (r.spec->schedule) schedules.emplace_back(r.job_id, r.spec);
  start_schedules(schedules);
  for (size_t i = 0, f = 0; i < results.size(); ++i) {
    if (results[i].existed) continue;
    const auto& r = fresh[f++];
    if (r.spec->fan_out && !r.spec->schedule && first_run == FirstRun::yes)
      results[i].run_id = insert_fan_out(*conn_, r);
  }
  std::set<std::string> tenants;
  for (const auto& r : fresh)
    if (!r.spec->tenant.empty()) tenants.insert(r.spec->tenant);
  for (const auto& t : tenants) conn_->exec("INSERT INTO tenants (name) VALUES ($1) ON CONFLICT DO NOTHING", {t});
  if (dialect() == Dialect::postgres)
    for (const auto& q : queues) conn_->query("SELECT pg_notify('jobctl_wake', $1)", {q});
  return results;
}

namespace {

// Jobs with their latest run: the FROM clause of get_jobs and list_jobs.
// See latest_run_of.
const std::string kJobsWithLatestRun =
    std::string("FROM jobs j LEFT JOIN runs r ON r.id = ") + latest_run_of("j.id");

model::JobView view_from_row(const Row& row) {
  model::JobView v{job_from_row(row), std::nullopt};
  if (!row.is_null(kJobColumnCount)) v.latest_run = run_from_row(row, kJobColumnCount);
  return v;
}

}  // namespace

std::optional<model::JobView> Store::get_job(const std::string& job_id) {
  auto views = get_jobs({job_id});
  if (views.empty()) return std::nullopt;
  return std::move(views[0]);
}

std::vector<model::JobView> Store::get_jobs(const std::vector<std::string>& job_ids) {
  std::string sql = fmt::format("SELECT {}, {} {} WHERE {}", kJobColumns, kRunColumns, kJobsWithLatestRun,
                                in_list(dialect(), "j.id", 1));
  std::map<std::string, model::JobView> found;
  for (const auto& row : conn_->query(sql, {list_param(dialect(), job_ids)})) {
    auto v = view_from_row(row);
    found.emplace(v.job.id, std::move(v));
  }
  std::vector<model::JobView> out;
  for (const auto& id : job_ids)
    if (auto it = found.find(id); it != found.end()) out.push_back(it->second);
  return out;
}

std::vector<model::JobView> Store::list_jobs(const JobFilter& filter) {
  std::string sql = fmt::format(
      "SELECT {}, {} {} "
      "WHERE (j.deleted_at IS NULL) = ($4 = 0) AND ($1 = '' OR r.status = $1) AND ($2 = '' OR j.queue = $2) "
      "AND j.dag_id IS NULL AND j.kind = 'job' "
      "ORDER BY j.id DESC LIMIT $3",
      kJobColumns, kRunColumns, kJobsWithLatestRun);
  std::string status = filter.status ? std::string(model::to_string(*filter.status)) : "";
  auto rows = conn_->query(sql, {status, filter.queue.value_or(""), int64_t{filter.limit},
                                 int64_t{filter.deleted ? 1 : 0}});
  std::vector<model::JobView> out;
  out.reserve(rows.size());
  for (const auto& row : rows) out.push_back(view_from_row(row));
  return out;
}

std::optional<model::Run> Store::get_run(const std::string& run_id) {
  auto rows = conn_->query(fmt::format("SELECT {} FROM runs r WHERE r.id = $1", kRunColumns), {run_id});
  if (rows.empty()) return std::nullopt;
  return run_from_row(rows[0]);
}

std::vector<model::Run> Store::runs_of(const std::string& job_id) {
  auto rows = conn_->query(fmt::format("SELECT {} FROM runs r WHERE r.job_id = $1 ORDER BY r.id", kRunColumns), {job_id});
  std::vector<model::Run> out;
  for (const auto& row : rows) out.push_back(run_from_row(row));
  return out;
}

std::vector<model::Attempt> Store::attempts(const std::string& run_id) {
  auto rows = conn_->query(
      "SELECT a.run_id, a.attempt, a.worker_id, COALESCE(w.name, ''), a.started_at, a.finished_at, a.outcome, "
      "a.exit_code, a.signal, a.error, a.stdout_tail, a.stderr_tail, a.job_version, a.http_status, a.timings "
      "FROM attempts a LEFT JOIN workers w ON w.id = a.worker_id WHERE a.run_id = $1 ORDER BY a.attempt",
      {run_id});
  std::vector<model::Attempt> out;
  for (const auto& row : rows) {
    model::Attempt a;
    a.run_id = row.text(0);
    a.number = static_cast<int>(row.i64(1));
    a.worker_id = row.text(2);
    a.worker_name = row.text(3);
    a.started_at = row.i64(4);
    a.finished_at = row.opt_i64(5);
    a.outcome = row.text(6);
    if (auto v = row.opt_i64(7)) a.exit_code = static_cast<int>(*v);
    if (auto v = row.opt_i64(8)) a.signal = static_cast<int>(*v);
    a.error = row.text(9);
    a.stdout_tail = row.text(10);
    a.stderr_tail = row.text(11);
    a.job_version = static_cast<int>(row.i64(12));
    if (auto v = row.opt_i64(13)) a.http_status = static_cast<int>(*v);
    if (!row.is_null(14)) a.timings = model::timings_from_text(row.text(14));
    out.push_back(std::move(a));
  }
  return out;
}

std::pair<std::string, model::RunStatus> Store::latest_run_for(const std::string& job_id, const char* action) {
  auto rows = conn_->query(std::string("SELECT r.id, r.status FROM runs r WHERE r.id = ") + latest_run_of("$1"), {job_id});
  if (rows.empty()) {
    if (conn_->query("SELECT 1 FROM jobs WHERE id = $1", {job_id}).empty())
      throw Error(ExitCode::not_found, fmt::format("no job with id '{}'", job_id), "list jobs with `jobctl ls`");
    throw Error(ExitCode::invalid_state, fmt::format("job {} has no run to {}", job_id, action));
  }
  return {rows[0].text(0), model::parse_run_status(rows[0].text(1))};
}

CancelOutcome Store::cancel(const std::string& job_id) {
  Transaction tx(*conn_, TxMode::write);
  const auto [run_id, status] = latest_run_for(job_id, "cancel");
  CancelOutcome outcome;
  if (status == model::RunStatus::pending || status == model::RunStatus::blocked) {
    auto dag = conn_->query("UPDATE runs SET status = 'cancelled', finished_at = NOW_US, error = 'cancelled by user' "
                            "WHERE id = $1 AND status IN ('pending', 'blocked') RETURNING dag_run_id",
                            {run_id});
    if (dag.empty())
      throw Error(ExitCode::invalid_state, fmt::format("job {}'s run started or ended while it was being cancelled", job_id),
                  "look at it with `jobctl get`, and cancel again if it still runs");
    advance_dag(*conn_, dag[0].text(0), job_id, model::RunStatus::cancelled);
    outcome = CancelOutcome::cancelled;
    audit(job_id, "cancel", nlohmann::json{{"run", run_id}}.dump());
  } else if (status == model::RunStatus::running) {
    conn_->exec("UPDATE runs SET cancel_requested = 1 WHERE id = $1", {run_id});
    if (dialect() == Dialect::postgres) conn_->query("SELECT pg_notify('jobctl_cancel', $1)", {run_id});
    outcome = CancelOutcome::requested;
    audit(job_id, "cancel", nlohmann::json{{"run", run_id}, {"running", true}}.dump());
  } else {
    throw Error(ExitCode::invalid_state,
                fmt::format("job {} already finished ({}); there is nothing to cancel", job_id, model::to_string(status)));
  }
  tx.commit();
  return outcome;
}

}  // namespace jobctl::store
