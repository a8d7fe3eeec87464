#include "common/model/job_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "common/model/limits.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/time.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::model {
namespace {

using nlohmann::json;

bool valid_name_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_' || ch == '-' || ch == '.';
}

std::optional<json> opt_time(const std::optional<int64_t>& t) {
  if (!t) return std::nullopt;
  return util::format_time(*t);
}

// Output is bytes; JSON wants UTF-8, so invalid sequences become U+FFFD.
json utf8_safe(const std::string& bytes) {
  return json::parse(json(bytes).dump(-1, ' ', false, json::error_handler_t::replace));
}

void put(json& j, const char* key, const std::optional<json>& v) { j[key] = v ? *v : json(nullptr); }

void check_sizes(const JobSpec& s) {
  check_size(s.name.size(), kMaxNameBytes, "the name", "give a shorter --name");
  size_t command = 0;
  for (const auto& a : s.command.argv) command += a.size() + 1;
  check_size(command, kMaxCommandBytes, "the command", "put the script in a file and run the file");
  size_t env = 0;
  for (const auto& [k, v] : s.env) env += k.size() + v.size() + 2;
  check_size(env, kMaxEnvBytes, "the environment (--env)", "pass large values in --payload or a file");
  check_size(s.cwd.size(), kMaxCwdBytes, "--cwd", "give a shorter path");
  if (s.payload)
    check_size(s.payload->size(), kMaxPayloadBytes, "the payload", "store the data elsewhere and pass its location");
  for (const auto& url : s.notify.urls) check_size(url.size(), kMaxUrlBytes, "a --notify URL", "give a shorter URL");
}

// A NUL byte cannot be passed to a process, nor kept in a text column:
// PostgreSQL refuses it, and a text parameter ends at it.
void refuse_nul(std::string_view value, std::string_view label) {
  if (value.find('\0') != std::string_view::npos)
    throw usage_error(fmt::format("{} holds a NUL byte", label), "remove the \\u0000 from it");
}

}  // namespace

void validate_queue_name(const std::string& queue) {
  if (queue.empty() || queue.size() > 64 || !std::all_of(queue.begin(), queue.end(), valid_name_char))
    throw usage_error(fmt::format("invalid queue name '{}'", util::show_bytes(queue)),
                      "use 1 to 64 characters of A-Z a-z 0-9 _ - .");
}

void validate_user_name(const std::string& user, std::string_view label) {
  if (user.empty()) return;
  std::string_view body = user;
  if (body.back() == '$') body.remove_suffix(1);
  const bool ok = user.size() <= 32 && !body.empty() && body.front() != '-' &&
                  std::all_of(body.begin(), body.end(), valid_name_char);
  if (!ok)
    throw usage_error(fmt::format("{}: invalid user name '{}'", label, util::show_bytes(user)),
                      "give a user of the agent's host: 1 to 32 characters of A-Z a-z 0-9 _ . -");
}

void validate_idempotency_key(const std::string& key, std::string_view label) {
  if (key.size() > kMaxIdempotencyKeyBytes)
    throw usage_error(fmt::format("{} is {} bytes, more than {}", label, key.size(), kMaxIdempotencyKeyBytes),
                      "give a shorter key, e.g. a hash of what makes the job unique");
  refuse_nul(key, label);
  if (!util::is_utf8(key))
    throw usage_error(fmt::format("{} is not valid UTF-8", label), "give a key of UTF-8 text");
}

void validate(const JobSpec& s) {
  check_sizes(s);
  refuse_nul(s.name, "--name");
  refuse_nul(s.cwd, "--cwd");
  for (const auto& arg : s.command.argv) refuse_nul(arg, "the command");
  validate_user_name(s.user, "--user");
  if (s.command.webhook) {
    validate(*s.command.webhook);
    // What only a process has would be silently ignored.
    if (s.payload) throw usage_error("a webhook job takes no payload", "send it as the body: --data @payload.json");
    if (!s.env.empty())
      throw usage_error("a webhook job takes no environment (--env)",
                        "send values in --header or --data, secrets as {{secret:NAME}}");
    if (!s.cwd.empty()) throw usage_error("a webhook job takes no working directory (--cwd)", "leave --cwd out");
    if (!s.user.empty())
      throw usage_error("a webhook job takes no user (--user): the agent sends the request itself", "leave --user out");
  } else if (s.command.argv.empty() || s.command.argv[0].empty()) {
    throw usage_error("the command is empty", "give the command after --, e.g. jobctl submit -- make test");
  }
  for (const auto& url : s.notify.urls) {
    Webhook w;
    w.url = url;
    try {
      validate(w);
    } catch (const Error&) {
      throw usage_error(fmt::format("invalid --notify URL '{}': it must be an http:// or https:// URL", util::show_bytes(url)),
                        "e.g. --notify https://hooks.example.com/jobs");
    }
  }
  if (s.notify.urls.size() > 10)
    throw usage_error("at most 10 --notify URLs per job", "notify one receiver of yours that fans out");
  validate_queue_name(s.queue);
  for (const auto& [k, v] : s.env) {
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos)
      throw usage_error(fmt::format("invalid environment variable name '{}'", k), "write it as NAME=VALUE");
    refuse_nul(v, fmt::format("environment variable '{}'", k));
    // Taken for a secret, it would reach the command as the literal text.
    if (v.find("{{secret:") != std::string::npos)
      throw usage_error(fmt::format("environment variable '{}' holds a {{{{secret:NAME}}}} reference: secrets are "
                                    "resolved only in webhook jobs (the URL, --header, --data), never given to a "
                                    "command",
                                    k),
                        "a command reads what it needs itself, e.g. from a file only its user may read");
  }
  if (s.timeout_us < 0) throw usage_error("the timeout must not be negative");
  if (s.max_concurrent && (*s.max_concurrent < 1 || *s.max_concurrent > kMaxConcurrentLimit))
    throw usage_error(fmt::format("--max-concurrent must be 1 to {}, not {}", kMaxConcurrentLimit, *s.max_concurrent),
                      "leave it out for no limit");
  if (s.concurrency_key.size() > kMaxConcurrencyKeyBytes)
    throw usage_error(fmt::format("the concurrency key is {} bytes, more than {}", s.concurrency_key.size(),
                                  kMaxConcurrencyKeyBytes),
                      "give a shorter --concurrency-key");
  refuse_nul(s.concurrency_key, "--concurrency-key");
  if (s.tenant.size() > 64)
    throw usage_error(fmt::format("invalid tenant '{}'", util::show_bytes(s.tenant)),
                      "use at most 64 characters of A-Z a-z 0-9 _ - .");
  for (char ch : s.tenant)
    if (!valid_name_char(ch))
      throw usage_error(fmt::format("invalid tenant '{}'", util::show_bytes(s.tenant)),
                        "use at most 64 characters of A-Z a-z 0-9 _ - .");
  if (s.stagger_us < 0) throw usage_error("--stagger must not be negative");
  if (s.stagger_us > 0 && !s.fan_out)
    throw usage_error("--stagger goes with --on-each", "e.g. --on-each role=web --stagger 30s");
  if (s.fan_out && !s.target.empty())
    throw usage_error("--on and --on-each cannot be combined",
                      "--on-each both selects the agents and gives each of them a run");
  validate_idempotency_key(s.idempotency_key, "--idempotency-key");
  // A delay against a maximum the job does not give is checked once its
  // queue's defaults are merged in, as it is written
  // (JobWriter::retry_policies): --retry-delay 10m under a queue's
  // --max-retry-delay 30m was refused against the built-in 5m.
  if (s.retry_given.delay_us && s.retry_given.max_delay_us) {
    validate(s.retry_given);
  } else {
    auto own = s.retry_given.resolve();
    own.max_delay_us = std::max(own.max_delay_us, own.delay_us);
    validate(own);
  }
}

json to_json(const Run& r) {
  json j{{"id", r.id},
         {"job_id", r.job_id},
         {"queue", r.queue},
         {"status", to_string(r.status)},
         {"created_at", util::format_time(r.created_at)},
         {"available_at", util::format_time(r.available_at)},
         {"fence", r.fence},
         {"deliveries", r.deliveries},
         {"attempts", r.attempts},
         {"cancel_requested", r.cancel_requested},
         {"error", r.error},
         {"failures", r.failures}};
  j["replay_of"] = r.replay_of.empty() ? json(nullptr) : json(r.replay_of);
  put(j, "replayed_at", opt_time(r.replayed_at));
  put(j, "dismissed_at", opt_time(r.dismissed_at));
  put(j, "occurrence", opt_time(r.occurrence));
  j["pinned_to"] = r.pinned_to.empty() ? json(nullptr) : json(r.pinned_to);
  j["dag_run_id"] = r.dag_run_id.empty() ? json(nullptr) : json(r.dag_run_id);
  j["dag_node"] = r.dag_node.empty() ? json(nullptr) : json(r.dag_node);
  j["job_version"] = r.job_version;
  put(j, "started_at", opt_time(r.started_at));
  put(j, "finished_at", opt_time(r.finished_at));
  put(j, "lease_expires_at", opt_time(r.lease_expires_at));
  j["lease_owner"] = r.lease_owner.empty() ? json(nullptr) : json(r.lease_owner);
  j["exit_code"] = r.exit_code ? json(*r.exit_code) : json(nullptr);
  j["progress"] = r.progress ? json(*r.progress) : json(nullptr);
  j["progress_message"] = r.progress_message.empty() ? json(nullptr) : json(r.progress_message);
  put(j, "progress_at", opt_time(r.progress_at));
  // Stored JSON that does not parse (edited by hand) is shown as text.
  j["checkpoint"] = !r.checkpoint ? json(nullptr) : json::accept(*r.checkpoint) ? json::parse(*r.checkpoint) : json(*r.checkpoint);
  return j;
}

json to_json(const ScheduleSpec& s, std::optional<int64_t> next_fire_at, int64_t fired) {
  auto dur = [](int64_t us) { return util::format_duration(util::Micros(us)); };
  int max = effective_max_concurrent(s);
  json j{{"cron", s.cron},
         {"tz", s.tz},
         {"misfire", to_string(s.misfire)},
         {"catchup_window", dur(s.catchup_window_us)},
         {"overlap", to_string(s.overlap)},
         {"max_concurrent", max > 0 ? json(max) : json(nullptr)},
         {"jitter", s.jitter_us ? json(dur(s.jitter_us)) : json(nullptr)}};
  put(j, "starts_at", opt_time(s.starts_at_us));
  put(j, "ends_at", opt_time(s.ends_at_us));
  j["max_runs"] = s.max_runs ? json(*s.max_runs) : json(nullptr);
  j["fired"] = fired;
  put(j, "next_fire_at", opt_time(next_fire_at));
  return j;
}

json to_json(const RetryPolicy& p) {
  auto dur = [](int64_t us) { return util::format_duration(util::Micros(us)); };
  return json{{"retries", p.max_retries},
              {"backoff", to_string(p.backoff)},
              {"retry_delay", dur(p.delay_us)},
              {"max_retry_delay", dur(p.max_delay_us)},
              {"retry_for", p.retry_for_us ? json(dur(p.retry_for_us)) : json(nullptr)},
              {"no_retry_exit_codes", p.no_retry_exit_codes.str()},
              {"max_deliveries", p.max_deliveries},
              {"delivery", to_string(p.delivery)}};
}

json to_json(const RetryOverrides& o) {
  json full = to_json(o.resolve());
  json out = json::object();
  for (auto [set, key] : {std::pair{o.max_retries.has_value(), "retries"}, {o.backoff.has_value(), "backoff"},
                          {o.delay_us.has_value(), "retry_delay"}, {o.max_delay_us.has_value(), "max_retry_delay"},
                          {o.retry_for_us.has_value(), "retry_for"},
                          {o.no_retry_exit_codes.has_value(), "no_retry_exit_codes"},
                          {o.max_deliveries.has_value(), "max_deliveries"}, {o.delivery.has_value(), "delivery"}})
    if (set) out[key] = full[key];
  return out;
}

json to_json(const JobView& v) {
  const Job& job = v.job;
  const JobSpec& s = job.spec;
  json command = s.command.webhook     ? json(nullptr)
                 : s.command.via_shell ? json(s.command.argv.at(0))
                                       : json(s.command.argv);
  json j{{"id", job.id},
         {"name", s.name},
         {"queue", s.queue},
         {"priority", to_string(s.priority)},
         {"command", command},
         {"env", s.env},
         {"cwd", s.cwd},
         {"user", s.user.empty() ? json(nullptr) : json(s.user)},
         {"idempotency_key", s.idempotency_key},
         {"version", job.version},
         {"paused", job.paused},
         {"created_at", util::format_time(job.created_at)}};
  j["timeout"] = s.timeout_us ? json(util::format_duration(util::Micros(s.timeout_us))) : json(nullptr);
  j["payload"] = s.payload ? json::parse(*s.payload) : json(nullptr);
  j["retry"] = to_json(s.retry);
  j["schedule"] = s.schedule ? to_json(*s.schedule, job.next_fire_at, job.fired) : json(nullptr);
  j["status"] = v.latest_run ? json(to_string(v.latest_run->status)) : json(nullptr);
  j["run"] = v.latest_run ? to_json(*v.latest_run) : json(nullptr);
  put(j, "deleted_at", opt_time(job.deleted_at));
  j["on"] = s.target.empty() ? json(nullptr) : json(labels_display(s.target));
  j["on_each"] = s.fan_out ? json(fan_out_display(*s.fan_out)) : json(nullptr);
  j["stagger"] = s.stagger_us ? json(util::format_duration(util::Micros(s.stagger_us))) : json(nullptr);
  j["concurrency_key"] = s.concurrency_key.empty() ? json(nullptr) : json(s.concurrency_key);
  int limit = group_limit(s);
  j["max_concurrent"] = limit > 0 ? json(limit) : json(nullptr);
  j["tenant"] = s.tenant;
  j["webhook"] = s.command.webhook ? to_json(*s.command.webhook) : json(nullptr);
  j["notify"] = s.notify.empty() ? json(nullptr) : to_json(s.notify);
  j["kind"] = job.kind;
  j["damaged"] = job.damaged.empty() ? json(nullptr) : json(job.damaged);
  return j;
}

json to_json(const JobEvent& e) {
  return json{{"id", e.id},
              {"job_id", e.job_id},
              {"at", util::format_time(e.at)},
              {"action", e.action},
              {"actor", e.actor},
              {"version", e.version},
              {"details", json::parse(e.details)}};
}

json to_json(const Attempt& a, bool with_output) {
  json j{{"run_id", a.run_id},
         {"attempt", a.number},
         {"worker_id", a.worker_id},
         {"worker", a.worker_name},
         {"started_at", util::format_time(a.started_at)},
         {"outcome", a.outcome},
         {"error", a.error},
         {"job_version", a.job_version}};
  put(j, "finished_at", opt_time(a.finished_at));
  j["duration_ms"] = a.finished_at ? json((*a.finished_at - a.started_at) / 1000) : json(nullptr);
  j["exit_code"] = a.exit_code ? json(*a.exit_code) : json(nullptr);
  j["signal"] = a.signal ? json(*a.signal) : json(nullptr);
  j["http_status"] = a.http_status ? json(*a.http_status) : json(nullptr);
  j["timings"] = a.timings ? to_json(*a.timings) : json(nullptr);
  if (with_output) {
    j["stdout"] = utf8_safe(a.stdout_tail);
    j["stderr"] = utf8_safe(a.stderr_tail);
    j["stdout_bytes"] = a.stdout_bytes ? json(*a.stdout_bytes) : json(nullptr);
    j["stderr_bytes"] = a.stderr_bytes ? json(*a.stderr_bytes) : json(nullptr);
  }
  return j;
}

json to_json(const Worker& w) {
  return json{{"id", w.id},
              {"name", w.name},
              {"host", w.host},
              {"pid", w.pid},
              {"queues", w.queues},
              {"capacity", w.capacity},
              {"running", w.running},
              {"leader", w.leader},
              {"version", w.version},
              {"state", to_string(w.state)},
              {"labels", w.labels},
              {"started_at", util::format_time(w.started_at)},
              {"heartbeat_at", util::format_time(w.heartbeat_at)}};
}

}  // namespace jobctl::model
