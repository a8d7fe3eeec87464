#include "server/api.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "common/util/error.hpp"
#include "server/handlers.hpp"

namespace jobctl::server {
namespace {

const Parameter kId{"id", "path", "A job id, or a run id (its job)"};
const Parameter kScheduleId{"id", "path", "A schedule's job id, a run id, or a scheduled DAG's id"};
const Parameter kDagRunId{"id", "path", "A DAG run id, or a DAG id (its newest run)"};
const Parameter kLimit{"limit", "query", "At most this many, newest first"};
const Parameter kQueue{"name", "path", "A queue's name"};

const std::vector<Route>& table() {
  static const std::vector<Route> routes{
      {"POST", "/jobs", Role::submit, "Submit a job, or a batch (an array) all or nothing", {},
       "A job as a line of `jobctl submit --file`, or an array of them; the Idempotency-Key header is the job's "
       "idempotency key",
       submit_jobs},
      {"GET", "/jobs", Role::read, "List jobs, newest first",
       {{"status", "query", "Only jobs whose latest run has this status"},
        {"queue", "query", "Only jobs of this queue"},
        {"deleted", "query", "true: only deleted jobs"},
        {"before", "query", "Only jobs older than this job id: the next page's cursor (the Link header's rel=next)"},
        {"limit", "query", "At most this many (default 50)"}},
       "", list_jobs},
      {"GET", "/jobs/{id}", Role::read, "A job and its latest run, as `jobctl get -o json`; its ETag is its version",
       {kId}, "", get_job},
      {"PATCH", "/jobs/{id}", Role::operate,
       "Change a job in place, as `jobctl update`; If-Match with its ETag makes it conditional (412 when stale)",
       {kId, {"If-Match", "header", "The ETag GET answered: apply only while the job is at that version"}},
       R"(The fields to change, by their batch-line keys, plus "command" and "unset_env", e.g. {"priority": "high"})",
       update_job},
      {"DELETE", "/jobs/{id}", Role::operate, "Cancel a job: a pending run is cancelled, a running one killed", {kId},
       "", cancel_job},
      {"POST", "/jobs/{id}/retry", Role::operate, "Run a dead, failed or cancelled job again", {kId}, "", retry_job},
      {"POST", "/jobs/{id}/pause", Role::operate, "Pause a job: its pending runs wait", {kId}, "", pause_job},
      {"POST", "/jobs/{id}/resume", Role::operate, "Resume a paused job", {kId}, "", resume_job},
      {"POST", "/jobs/{id}/delete", Role::operate,
       "Soft-delete a job: no new runs, pending ones cancelled, history kept (as `jobctl delete`)",
       {kId, {"cancel_running", "query", "true: also stop a run that is running"}}, "", delete_job},
      {"POST", "/jobs/{id}/restore", Role::operate, "Undo a delete (as `jobctl restore`)", {kId}, "", restore_job},
      {"POST", "/schedules", Role::submit, "Make a schedule: a job with a \"cron\" expression", {},
       "A job with \"cron\", as a line of `jobctl submit --file`", submit_schedule},
      {"GET", "/schedules", Role::read,
       "Every schedule with its latest run and \"next_fire\", as `jobctl schedules ls -o json`", {}, "",
       list_schedules},
      {"POST", "/schedules/{id}/trigger", Role::operate,
       "Make one occurrence now, as `jobctl schedule trigger` (obeys the overlap policy unless force)",
       {kScheduleId, {"force", "query", "true: start it even if the overlap policy would skip it"}}, "",
       trigger_schedule},
      {"GET", "/schedules/{id}/runs", Role::read, "A schedule's past occurrences, as `jobctl schedule runs -o json`",
       {kScheduleId, kLimit}, "", schedule_runs},
      {"POST", "/dags", Role::submit, "Submit a DAG document, as `jobctl dag submit`",
       {{"on_failure", "query", "stop (default) or continue"},
        {"cron", "query", "Run the DAG on this cron expression"},
        {"tz", "query", "The IANA zone of cron"}},
       "The DAG document (jobctl(1), DAGS)", submit_dag},
      {"GET", "/dags", Role::read, "DAG runs, newest first, as `jobctl dag ls -o json`",
       {{"limit", "query", "At most this many (default 50)"}}, "", list_dag_runs},
      {"GET", "/dags/{id}/status", Role::read, "A DAG run and its nodes, as `jobctl dag status -o json`", {kDagRunId},
       "", dag_status},
      {"POST", "/dags/{id}/cancel", Role::operate,
       "Cancel a DAG run: nodes not started are cancelled, running ones stopped", {kDagRunId}, "", cancel_dag_run},
      {"POST", "/dags/{id}/pause", Role::operate, "Pause a DAG run: no further node starts", {kDagRunId}, "",
       pause_dag_run},
      {"POST", "/dags/{id}/resume", Role::operate, "Resume a paused DAG run", {kDagRunId}, "", resume_dag_run},
      {"POST", "/dags/{id}/retry", Role::operate, "Run a finished DAG run's failed and cancelled nodes again",
       {kDagRunId}, "", retry_dag_run},
      {"GET", "/jobs/{id}/attempts", Role::read, "Every attempt of the job (or of the run), as `jobctl runs -o json`",
       {kId}, "", job_attempts},
      {"GET", "/jobs/{id}/logs", Role::read, "An attempt with its output, as `jobctl logs -o json`",
       {kId, {"attempt", "query", "This attempt (1, 2, …) instead of the latest"}}, "", job_logs},
      {"GET", "/jobs/{id}/logs/follow", Role::read,
       "The output as it comes, through every attempt to the run's end, as server-sent events (`jobctl logs -f`): "
       "output, gap, attempt and end; each id resumes with Last-Event-ID",
       {kId}, "", follow_job_logs, "text/event-stream"},
      {"GET", "/jobs/{id}/history", Role::read, "The job's changes, newest first, as `jobctl history -o json`",
       {kId, {"limit", "query", "At most this many (default 100)"}}, "", job_history},
      {"GET", "/workers", Role::read, "The agents, as `jobctl workers -o json`", {}, "", list_workers},
      {"GET", "/queues", Role::read, "The queues with counts, limits and retry defaults, as `jobctl queue ls -o json`",
       {}, "", list_queues},
      {"PATCH", "/queues/{name}", Role::admin,
       "Set a queue's limits and retry defaults, as `jobctl queue set`: its entry of GET /queues after", {kQueue},
       R"({"max_concurrent": N, "rate": "10/s", "tenant_max_concurrent": N, "clear": bool, and retry keys of a )"
       R"(batch line: "retries", "backoff", …; 0 removes a limit)",
       set_queue},
      {"POST", "/queues/{name}/pause", Role::operate, "Pause a queue: no agent claims its runs", {kQueue}, "",
       pause_queue},
      {"POST", "/queues/{name}/resume", Role::operate, "Resume a paused queue", {kQueue}, "", resume_queue},
      {"GET", "/stats", Role::read, "Per queue and priority: depth, outcomes, rates, percentiles (`jobctl stats -o json`)",
       {{"queue", "query", "Only this queue"}, {"since", "query", "The window (default 1h)"}}, "", stats},
      {"GET", "/stats/series", Role::read,
       "The window in steps, oldest first: runs succeeded and dead, failed attempts, failure rate, lag p99 (the "
       "console's charts)",
       {{"queue", "query", "Only this queue"},
        {"since", "query", "The window (default 1h)"},
        {"step", "query", "The step (default 1m; at most 1,440 steps)"}},
       "", stats_series},
      {"GET", "/check", Role::read,
       "Thresholds as `jobctl check`: {\"ok\": bool, \"breaches\": [one phrase each]}",
       {{"max_dlq", "query", "At most this many runs in the dead-letter queue"},
        {"max_lag", "query", "Scheduling lag p99 over since at most this long"},
        {"max_oldest", "query", "No due run waiting longer than this"},
        {"min_workers", "query", "At least this many live agents (on queue, when given)"},
        {"max_failure_rate", "query", "At most this percentage of a queue's attempts over since failed"},
        {"max_ready", "query", "At most this many runs of a queue due and waiting"},
        {"max_stuck", "query", "At most this many running runs that look stuck (as ls --stuck)"},
        {"stuck_after", "query", "For max_stuck: no progress report for this long (default 1h)"},
        {"queue", "query", "Only this queue"},
        {"since", "query", "The window for max_lag and max_failure_rate (default 15m)"}},
       "", check},
      {"GET", "/whoami", Role::read, "The caller's token: {\"name\", \"role\"}", {}, "", whoami},
      {"GET", "/dead-letter", Role::read, "Dead runs with their jobs, newest first, as `jobctl dlq ls -o json`",
       {{"queue", "query", "Only runs of this queue"},
        {"since", "query", "Only runs that died at or after this time (RFC 3339, or a duration ago: 2h)"},
        {"until", "query", "Only runs that died before this time"},
        {"before", "query", "Only runs after this dead run in the list: the next page's cursor (the Link header)"},
        {"limit", "query", "At most this many (default 100)"}},
       "", dead_runs},
      {"GET", "/dead-letter/{id}", Role::read, "A dead run with every attempt's output, as `jobctl dlq show -o json`",
       {{"id", "path", "A dead run's id, or its job's"}}, "", dead_run},
      {"POST", "/dead-letter/{id}/replay", Role::operate, "Run one dead run again, with a fresh retry budget",
       {{"id", "path", "A dead run's id, or its job's"}}, "", replay_dead_run},
      {"POST", "/dead-letter/replay", Role::operate,
       "Run dead runs again: a list of them, or every one a filter covers, in one transaction", {},
       R"({"ids": [RUN_ID, …]}, or {"all": true} with optional "queue", "since" and "until")", replay_dead_runs},
      {"POST", "/dead-letter/{id}/dismiss", Role::operate,
       "Take one dead run out of the queue without running it again; it stays in history",
       {{"id", "path", "A dead run's id, or its job's"}}, "", dismiss_dead_run},
      {"POST", "/dead-letter/dismiss", Role::operate,
       "Dismiss dead runs: a list of them, or every one a filter covers (DAG nodes too), in one transaction", {},
       R"({"ids": [RUN_ID, …]}, or {"all": true} with optional "queue", "since" and "until")", dismiss_dead_runs},
      {"DELETE", "/dead-letter", Role::operate, "Delete dead runs older than older_than, as `jobctl dlq purge`",
       {{"older_than", "query", "An age, e.g. 7d", true}}, "", purge_dead_runs},
  };
  return routes;
}

}  // namespace

std::string Call::query(const std::string& name) const {
  return request.has_param(name) ? request.get_param_value(name) : std::string();
}

int query_int(const Call& c, const std::string& name, int fallback, int min, int max) {
  if (!c.request.has_param(name)) return fallback;
  const std::string text = c.query(name);
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max)
    throw usage_error(fmt::format("query parameter {}='{}' is not a whole number from {} to {}", name, text, min, max));
  return value;
}

void link_next(const Call& c, Reply& reply, const std::string& path, size_t items, int limit, const std::string& last) {
  if (items == 0 || static_cast<int>(items) < limit) return;
  auto params = c.request.params;
  params.erase("before");
  params.emplace("before", last);
  reply.headers.emplace_back(
      "Link", fmt::format("<{}{}?{}>; rel=\"next\"", kApiPrefix, path, httplib::detail::params_to_query_str(params)));
}

bool query_bool(const Call& c, const std::string& name) {
  const std::string text = c.query(name);
  if (text.empty() || text == "false") return false;
  if (text == "true") return true;
  throw usage_error(fmt::format("query parameter {}='{}' is not true or false", name, text));
}

std::span<const Route> api_routes() { return table(); }

std::string path_pattern(const Route& r) {
  std::string out = kApiPrefix;
  for (size_t i = 0; i < r.path.size(); ++i) {
    if (r.path[i] != '{') {
      out += r.path[i];
      continue;
    }
    // The words other routes write out where this one has its parameter.
    const std::string before = r.path.substr(0, i);
    std::set<std::string> words;
    for (const auto& other : table()) {
      if (other.path.compare(0, before.size(), before) != 0 || other.path.size() == before.size()) continue;
      const std::string word = other.path.substr(before.size(), other.path.find('/', before.size()) - before.size());
      if (word.find('{') == std::string::npos) words.insert(word);
    }
    std::string excluded;
    for (const auto& w : words) excluded += (excluded.empty() ? "" : "|") + w;
    if (!excluded.empty()) out += "(?!(?:" + excluded + ")(?:/|$))";
    out += "([^/]+)";
    i = r.path.find('}', i);
  }
  return out;
}

nlohmann::json openapi_document() {
  using nlohmann::json;
  json paths = json::object();
  const json problem{{"description", "A problem (RFC 9457): detail, hint and the CLI's exit_code"},
                     {"content", {{"application/problem+json", {{"schema", {{"$ref", "#/components/schemas/Problem"}}}}}}}};
  for (const auto& r : table()) {
    std::string method = r.method;
    for (auto& ch : method) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    json op{{"summary", r.summary},
            {"operationId", method + r.path},
            {"x-jobctl-role", std::string(to_string(r.role))},
            {"security", json::array({{{"bearer", json::array()}}})},
            {"responses",
             {{"200", {{"description", "OK"}, {"content", {{r.produces, {{"schema", json::object()}}}}}}},
              {"400", problem},
              {"401", problem},
              {"403", problem},
              {"404", problem},
              {"409", problem},
              {"503", problem}}}};
    if (!r.body.empty()) op["responses"]["422"] = problem;
    if (r.method == "POST" && (r.path == "/jobs" || r.path == "/schedules" || r.path == "/dags"))
      op["responses"]["201"] = {{"description", "Created"},
                                {"content", {{"application/json", {{"schema", json::object()}}}}}};
    // 412 where an If-Match can be stale (PATCH /queues/{name} takes none).
    if (std::any_of(r.parameters.begin(), r.parameters.end(), [](const Parameter& p) { return p.name == "If-Match"; }))
      op["responses"]["412"] = problem;
    json params = json::array();
    for (const auto& p : r.parameters)
      params.push_back({{"name", p.name},
                        {"in", p.in},
                        {"required", p.in == "path" || p.required},
                        {"description", p.description},
                        {"schema", {{"type", "string"}}}});
    if ((r.path == "/jobs" || r.path == "/schedules" || r.path == "/dags") && r.method == "POST")
      params.push_back({{"name", "Idempotency-Key"},
                        {"in", "header"},
                        {"required", false},
                        {"description", r.path == "/dags" ? "The DAG's idempotency key: a retried POST makes one DAG"
                                                          : "The job's idempotency key: a retried POST makes one job"},
                        {"schema", {{"type", "string"}}}});
    if (!params.empty()) op["parameters"] = params;
    if (!r.body.empty())
      op["requestBody"] = {{"required", true},
                           {"description", r.body},
                           {"content", {{"application/json", {{"schema", json::object()}}}}}};
    paths[r.path][method] = op;
  }
  return json{
      {"openapi", "3.1.0"},
      {"info", {{"title", "jobctl"}, {"version", JOBCTL_VERSION}, {"description", "The HTTP API of jobctl serve"}}},
      {"servers", json::array({{{"url", kApiPrefix}}})},
      {"paths", paths},
      {"components",
       {{"securitySchemes", {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}}}},
        {"schemas",
         {{"Problem",
           {{"type", "object"},
            {"properties",
             {{"type", {{"type", "string"}}},
              {"title", {{"type", "string"}}},
              {"status", {{"type", "integer"}}},
              {"detail", {{"type", "string"}}},
              {"hint", {{"type", "string"}}},
              {"exit_code", {{"type", "integer"}}}}}}}}}}}};
}

}  // namespace jobctl::server
