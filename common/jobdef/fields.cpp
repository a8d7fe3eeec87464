#include "common/jobdef/fields.hpp"

#include <fmt/format.h>

#include <utility>

#include "common/cron/plan.hpp"
#include "common/model/job_json.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/time.hpp"
#include "common/util/tz.hpp"

namespace jobctl::jobdef {
namespace {

using nlohmann::json;

Error field_error(std::string_view label, std::string_view why) {
  return usage_error(fmt::format("{}: {}", label, why));
}

Error key_error(std::string_view key, std::string_view why) {
  return field_error(fmt::format("field '{}'", key), why);
}

const std::string& want_string(const json& v, std::string_view label) {
  if (!v.is_string()) throw field_error(label, "must be a string");
  return v.get_ref<const std::string&>();
}

const std::string& text(const json& v, const Name& n) { return want_string(v, n.label()); }

int count(const json& v, const Name& n) {
  if (!v.is_number_integer()) throw field_error(n.label(), "must be an integer");
  auto i = v.get<int64_t>();
  if (i < 0 || i > 1000000) throw field_error(n.label(), "is out of range");
  return static_cast<int>(i);
}

int64_t duration(const json& v, const Name& n) { return util::parse_duration(text(v, n), n.what()).count(); }

// A schedule's bound as typed: it is read in the schedule's zone once that
// is known, so here it is only checked. "" is none.
std::string bound_time(const json& v, const Name& n) {
  const std::string& t = text(v, n);
  if (!t.empty()) util::parse_at(t, "UTC", n.what().c_str(), util::OwnOffset::wins);
  return t;
}

model::Command command_from_json(const json& v, const Name& n) {
  model::Command c;
  if (v.is_string()) {
    c.via_shell = true;
    c.argv = {v.get<std::string>()};
  } else if (v.is_array()) {
    for (const auto& a : v) {
      if (!a.is_string()) throw field_error(n.label(), "array elements must be strings");
      c.argv.push_back(a.get<std::string>());
    }
  } else {
    throw field_error(n.label(), "must be a string (run by sh -c) or an array of strings (argv)");
  }
  return c;
}

// A part of the webhook given by a flag of its own (--method, --header, …).
void webhook_part(Draft& d, const char* part, const json& v) { d.webhook[part] = v; }

std::string duration_text(int64_t us) { return util::format_duration(util::Micros(us)); }

constexpr unsigned kEverywhere = kLine | kDagNode | kSubmit | kUpdate;
constexpr unsigned kRetry = kLine | kDagNode | kSubmit | kUpdate | kQueueSet;
constexpr unsigned kTiming = kLine | kSubmit;  // a DAG node runs when its parents are done

const Field kFields[] = {
    {.key = "command",
     .where = kLine | kDagNode,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.spec.command = command_from_json(v, n);
       d.has_command = true;
     }},
    {.key = "name",
     .where = kEverywhere,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.name = text(v, n); },
     .flag = "--name",
     .help = "A name for people to recognise the job by",
     .update_help = "New name (\"\" removes it)",
     .update_empty_means_none = true},
    {.key = "queue",
     .where = kEverywhere,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.queue = text(v, n); },
     .flag = "--queue",
     .help = "Queue the job waits in",
     .update_help = "Move it to this queue",
     .shown_default = [] { return model::JobSpec{}.queue; }},
    {.key = "priority",
     .where = kEverywhere,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.priority = model::parse_priority(text(v, n)); },
     .flag = "--priority",
     .help = "{choices}",
     .shown_default = [] { return std::string(model::to_string(model::JobSpec{}.priority)); },
     .choices = [] { return model::names_of(model::kPriorityNames); },
     .aliases = [] { return model::aliases_of(model::kPriorityNames); }},
    {.key = "timeout",
     .where = kEverywhere,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.timeout_us = v == "0" ? 0 : duration(v, n); },
     .flag = "--timeout",
     .help = "Kill the job after this long (e.g. 90s, 10m, 1h30m; 0: never)",
     .update_help = "New timeout (e.g. 30m; 0 removes it)"},
    {.key = "env",
     .where = kEverywhere,
     .apply = [](Draft& d, const json& v, const Name& n) {
       if (!v.is_object()) throw field_error(n.label(), "must be an object of strings");
       for (const auto& [k, ev] : v.items()) d.spec.env[k] = want_string(ev, fmt::format("field 'env.{}'", k));
     },
     .flag = "--env",
     .kind = FlagKind::list,
     .help = "Environment variable NAME=VALUE for the job (repeatable)",
     .update_help = "Set NAME=VALUE in its environment (repeatable)"},
    {.key = "cwd",
     .where = kLine | kDagNode | kSubmit,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.spec.cwd = text(v, n);
       if (!d.spec.cwd.empty() && d.spec.cwd[0] != '/') throw field_error(n.label(), "must be an absolute path");
     },
     .flag = "--cwd",
     .help = "Working directory of the job on the agent's host"},
    {.key = "user",
     .where = kEverywhere,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.spec.user = text(v, n);
       model::validate_user_name(d.spec.user, n.label());
     },
     .flag = "--user",
     .help = "Run as this user (with its groups and home) on the agent's host, which must allow it "
             "(jobagent --allow-users)",
     .update_help = "Run as this user (\"\" runs it as the agent's --run-as, or the agent's own user)",
     .update_empty_means_none = true},
    {.key = "on",
     .where = kEverywhere,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.target = model::parse_labels(text(v, n), n.label()); },
     .flag = "--on",
     .help = "Only agents with all these labels run it: KEY=VALUE[,KEY=VALUE…], e.g. role=web",
     .update_help = "Only agents with all these labels run it (KEY=VALUE,…; \"\" lets any agent)",
     .update_empty_means_none = true},
    {.key = "concurrency_key",
     .where = kEverywhere,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.concurrency_key = text(v, n); },
     .flag = "--concurrency-key",
     .help = "Share a concurrency group with every job naming this key: at most --max-concurrent (default 1) of "
             "them run at once, fleet-wide",
     .update_help = "A new concurrency key (\"\" removes it: the job is a group of its own)",
     .update_empty_means_none = true},
    {.key = "tenant",
     .where = kEverywhere,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.tenant = text(v, n); },
     .flag = "--tenant",
     .help = "Who the job is for: tenants of a queue are served in turn within a priority",
     .update_help = "A new tenant (\"\" puts the job with those that have none)",
     .update_empty_means_none = true},
    {.key = "on_each",
     .where = kTiming,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.fan_out = model::parse_fan_out(text(v, n), n.label()); },
     .flag = "--on-each",
     .help = "Run once on every live agent with all these labels (KEY=VALUE,…; '*': every agent), each its own run"},
    {.key = "stagger",
     .where = kTiming,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.stagger_us = duration(v, n); },
     .flag = "--stagger",
     .help = "With --on-each: start each agent's run this long after the previous one"},
    {.key = "webhook",
     .where = kLine | kDagNode | kSubmit,
     .apply = [](Draft& d, const json& v, const Name& n) {
       if (n.source == Source::flag) webhook_part(d, "url", v);
       else d.webhook = v;
     },
     .flag = "--webhook",
     .help = "Make an HTTP request instead of running a command: http:// or https:// URL ({{secret:NAME}} allowed)"},
    {.key = "webhook.method",
     .where = kSubmit,
     .apply = [](Draft& d, const json& v, const Name&) { webhook_part(d, "method", v); },
     .flag = "--method",
     .help = "With --webhook: the HTTP method",
     .shown_default = [] { return model::Webhook{}.method; },
     .needs = "--webhook"},
    {.key = "webhook.headers",
     .where = kSubmit,
     .apply = [](Draft& d, const json& v, const Name&) { webhook_part(d, "headers", v); },
     .flag = "--header",
     .kind = FlagKind::list,
     .help = "With --webhook: a request header 'Name: value' (repeatable; {{secret:NAME}} allowed in the value)",
     .needs = "--webhook"},
    {.key = "webhook.data",
     .where = kSubmit,
     .apply = [](Draft& d, const json& v, const Name&) { webhook_part(d, "data", v); },
     .flag = "--data",
     .help = "With --webhook: the request body ({{secret:NAME}} allowed); @FILE reads a file",
     .needs = "--webhook"},
    {.key = "webhook.insecure",
     .where = kSubmit,
     .apply = [](Draft& d, const json& v, const Name&) { webhook_part(d, "insecure", v); },
     .flag = "--insecure",
     .kind = FlagKind::toggle,
     .help = "With --webhook: do NOT verify the server's TLS certificate (anyone on the path can read and alter the "
             "request)",
     .needs = "--webhook"},
    {.key = "webhook.sign_secret",
     .where = kSubmit,
     .apply = [](Draft& d, const json& v, const Name&) { webhook_part(d, "sign_secret", v); },
     .flag = "--sign-secret",
     .help = "With --webhook: sign each request with HMAC-SHA256 under the secret of this NAME (X-Job-Signature "
             "header)",
     .needs = "--webhook"},
    {.key = "notify",
     .where = kLine | kDagNode | kSubmit,
     .apply = [](Draft& d, const json& v, const Name& n) {
       if (v.is_string()) {
         d.spec.notify.urls = {v.get<std::string>()};
       } else if (v.is_array()) {
         for (const auto& u : v) d.spec.notify.urls.push_back(want_string(u, n.label()));
       } else {
         throw field_error(n.label(), "must be a URL or an array of URLs");
       }
     },
     .flag = "--notify",
     .kind = FlagKind::list,
     .help = "POST a JSON notification to this URL when a run succeeds, fails or dies (repeatable; see --notify-on)"},
    {.key = "notify_on",
     .where = kLine | kDagNode | kSubmit,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.notify.on = model::parse_notify_on(text(v, n)); },
     .flag = "--notify-on",
     .help = "With --notify: which ends to report: success, failure, dead (default {default})",
     .shown_default = [] { return model::notify_on_text(model::Notify{}.on); },
     .needs = "--notify"},
    {.key = "payload",
     .where = kLine | kDagNode | kSubmit,
     .apply = [](Draft& d, const json& v, const Name&) { d.spec.payload = v.dump(); },
     .flag = "--payload",
     .help = "JSON given to the job on stdin and in JOB_PAYLOAD; @FILE reads a file"},
    {.key = "idempotency_key",
     .where = kTiming,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.idempotency_key = text(v, n); },
     .flag = "--idempotency-key",
     .help = "Submit only once: a later submit with this key returns the existing job"},
    {.key = "at",
     .where = kTiming,
     .apply = [](Draft& d, const json& v, const Name& n) { d.at = text(v, n); },
     .flag = "--at",
     .help = "Run at this time: RFC 3339 (2026-12-24T18:00:00Z), or 'YYYY-MM-DD HH:MM[:SS]' in --tz"},
    {.key = "in",
     .where = kTiming,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.delay_us = duration(v, n); },
     .flag = "--in",
     .help = "Run this long from now (e.g. 90s, 10m, 1h30m)",
     .excludes = {"--at"}},
    {.key = "tz",
     .where = kTiming | kUpdate,
     .apply = [](Draft& d, const json& v, const Name& n) { d.tz = util::given_zone(text(v, n), n.label()); },
     .flag = "--tz",
     .help = "IANA time zone of --cron (default {default}), or of an --at without an offset (default: this host's "
             "zone)",
     .update_help = "A schedule: new IANA time zone",
     .shown_default = [] { return model::ScheduleSpec{}.tz; }},
    {.key = "cron",
     .where = kTiming | kUpdate,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.schedule.cron = text(v, n);
       d.has_cron = true;
     },
     .flag = "--cron",
     .help = "Make it a schedule: run on this cron expression in --tz (see `jobctl cron next`)",
     .update_help = "A schedule: new cron expression",
     .excludes = {"--at", "--in"}},
    {.key = "misfire",
     .where = kTiming | kUpdate,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.schedule.misfire = model::parse_misfire(text(v, n));
       d.has_schedule_field = true;
     },
     .flag = "--misfire",
     .help = "Occurrences missed while no scheduler ran: {choices} (default {default})",
     .shown_default = [] { return std::string(model::to_string(model::ScheduleSpec{}.misfire)); },
     .choices = [] { return model::names_of(model::kMisfireNames); },
     .needs = "--cron"},
    {.key = "catchup_window",
     .where = kTiming | kUpdate,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.schedule.catchup_window_us = duration(v, n);
       d.has_schedule_field = true;
     },
     .flag = "--catchup-window",
     .help = "How far back --misfire all reaches (default {default})",
     .shown_default = [] { return duration_text(model::ScheduleSpec{}.catchup_window_us); },
     .needs = "--cron"},
    {.key = "overlap",
     .where = kTiming | kUpdate,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.schedule.overlap = model::parse_overlap(text(v, n));
       d.has_schedule_field = true;
     },
     .flag = "--overlap",
     .help = "An occurrence due while the last still runs: {choices} (default {default})",
     .shown_default = [] { return std::string(model::to_string(model::ScheduleSpec{}.overlap)); },
     .choices = [] { return model::names_of(model::kOverlapNames); },
     .needs = "--cron"},
    {.key = "max_concurrent",
     .where = kEverywhere,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.max_concurrent = count(v, n); },
     .flag = "--max-concurrent",
     .kind = FlagKind::count,
     .help = "Runs of the job's concurrency group at once, fleet-wide (a schedule: default 1, allow: no limit; with "
             "--concurrency-key: default 1)",
     .min = 1,
     .max = model::kMaxConcurrentLimit},
    {.key = "jitter",
     .where = kTiming | kUpdate,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.schedule.jitter_us = duration(v, n);
       d.has_schedule_field = true;
     },
     .flag = "--jitter",
     .help = "Start each occurrence up to this much later, spreading a herd (e.g. 30s); no longer than the "
             "gap between two occurrences",
     .needs = "--cron"},
    {.key = "starts_at",
     .where = kTiming | kUpdate,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.starts_at = bound_time(v, n);
       d.has_schedule_field = true;
     },
     .flag = "--starts-at",
     .help = "Fire no occurrence before this time: RFC 3339, or 'YYYY-MM-DD HH:MM[:SS]' in --tz",
     .update_help = "A schedule: fire no occurrence before this time (\"\" removes the bound)",
     .needs = "--cron",
     .update_empty_means_none = true},
    {.key = "ends_at",
     .where = kTiming | kUpdate,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.ends_at = bound_time(v, n);
       d.has_schedule_field = true;
     },
     .flag = "--ends-at",
     .help = "Fire no occurrence after this time: RFC 3339, or 'YYYY-MM-DD HH:MM[:SS]' in --tz",
     .update_help = "A schedule: fire no occurrence after this time (\"\" removes the bound)",
     .needs = "--cron",
     .update_empty_means_none = true},
    {.key = "max_runs",
     .where = kTiming | kUpdate,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.schedule.max_runs = count(v, n);
       d.has_schedule_field = true;
     },
     .flag = "--max-runs",
     .kind = FlagKind::count,
     .help = "Fire at most this many occurrences, then end (triggers and backfills are extra)",
     .update_help = "A schedule: fire at most this many occurrences in all (0 removes the limit)",
     .min = 1,
     .max = model::kMaxRunsLimit,
     .needs = "--cron",
     .update_zero_means_none = true},
    {.key = "retries",
     .where = kRetry,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.retry_given.max_retries = count(v, n); },
     .flag = "--retries",
     .kind = FlagKind::count,
     .help = "Retries after a failed attempt (default {default})",
     .shown_default = [] { return std::to_string(model::RetryPolicy{}.max_retries); },
     .min = 0,
     .max = 1000},
    {.key = "backoff",
     .where = kRetry,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.spec.retry_given.backoff = model::parse_backoff(text(v, n));
     },
     .flag = "--backoff",
     .help = "Spacing of retries: {choices} (default {default})",
     .shown_default = [] { return std::string(model::to_string(model::RetryPolicy{}.backoff)); },
     .choices = [] { return model::names_of(model::kBackoffNames); }},
    {.key = "retry_delay",
     .where = kRetry,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.retry_given.delay_us = duration(v, n); },
     .flag = "--retry-delay",
     .help = "Base delay before the first retry (default {default})",
     .shown_default = [] { return duration_text(model::RetryPolicy{}.delay_us); }},
    {.key = "max_retry_delay",
     .where = kRetry,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.retry_given.max_delay_us = duration(v, n); },
     .flag = "--max-retry-delay",
     .help = "Cap on one retry delay (default {default})",
     .shown_default = [] { return duration_text(model::RetryPolicy{}.max_delay_us); }},
    {.key = "retry_for",
     .where = kRetry,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.retry_given.retry_for_us = duration(v, n); },
     .flag = "--retry-for",
     .help = "Start no retry later than this after the first attempt"},
    {.key = "no_retry_exit_codes",
     .where = kRetry,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.spec.retry_given.no_retry_exit_codes = model::ExitCodeSet::parse(text(v, n));
     },
     .flag = "--no-retry-exit-codes",
     .help = "Exit codes that fail permanently, straight to the dead-letter queue (e.g. 2,64-78)"},
    {.key = "max_deliveries",
     .where = kRetry,
     .apply = [](Draft& d, const json& v, const Name& n) { d.spec.retry_given.max_deliveries = count(v, n); },
     .flag = "--max-deliveries",
     .kind = FlagKind::count,
     .help = "Claims without any result before the run is dead as poison (default {default})",
     .shown_default = [] { return std::to_string(model::RetryPolicy{}.max_deliveries); },
     .min = 1,
     .max = 1000},
    {.key = "delivery",
     .where = kRetry,
     .apply = [](Draft& d, const json& v, const Name& n) {
       d.spec.retry_given.delivery = model::parse_delivery(text(v, n));
     },
     .flag = "--delivery",
     .help = "{choices}: at-most-once never runs a job twice (default {default})",
     .shown_default = [] { return std::string(model::to_string(model::RetryPolicy{}.delivery)); },
     .choices = [] { return model::names_of(model::kDeliveryNames); }},
};

void replace(std::string& text, std::string_view from, const std::string& to) {
  if (auto at = text.find(from); at != std::string::npos) text.replace(at, from.size(), to);
}

}  // namespace

std::string Name::label() const {
  return source == Source::flag ? std::string(field.flag) : fmt::format("field '{}'", field.key);
}

std::string Name::what() const { return std::string(source == Source::flag ? field.flag : field.key); }

std::span<const Field> job_fields() { return kFields; }

const Field& line_field(std::string_view key) {
  for (const auto& f : kFields)
    if ((f.where & kLine) && f.key == key) return f;
  std::string keys;
  for (const auto& f : kFields)
    if (f.where & kLine) keys += fmt::format("{}{}", keys.empty() ? "" : ", ", f.key);
  throw usage_error(fmt::format("unknown field '{}'", key),
                    fmt::format("fields are: {} (see jobctl(1), BATCH FORMAT)", keys));
}

const Field* flag_field(std::string_view flag) {
  for (const auto& f : kFields)
    if (!f.flag.empty() && f.flag == flag) return &f;
  return nullptr;
}

std::string help_of(const Field& f, unsigned where) {
  std::string out(where == kUpdate && !f.update_help.empty() ? f.update_help : f.help);
  if (f.shown_default) replace(out, "{default}", f.shown_default());
  if (f.choices) replace(out, "{choices}", model::join_or(f.choices()));
  return out;
}

namespace {

// A schedule's --starts-at and --ends-at, read in its zone. An end already
// past would make a schedule that never fires.
void read_bounds(Draft& d, bool flags) {
  auto& sc = d.schedule;
  if (!d.starts_at.empty())
    sc.starts_at_us = util::parse_at(d.starts_at, sc.tz, flags ? "--starts-at" : "starts_at", util::OwnOffset::wins);
  if (d.ends_at.empty()) return;
  sc.ends_at_us = util::parse_at(d.ends_at, sc.tz, flags ? "--ends-at" : "ends_at", util::OwnOffset::wins);
  if (*sc.ends_at_us <= util::now_micros())
    throw flags ? usage_error(fmt::format("--ends-at {} is in the past: the schedule would never fire", d.ends_at),
                              "give a later time, or leave --ends-at out")
                : key_error("ends_at", fmt::format("{} is in the past: the schedule would never fire", d.ends_at));
}

}  // namespace

namespace {

bool flag_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

std::string line_terms(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const Field* named = nullptr;
    if (text.compare(i, 2, "--") == 0 && (i == 0 || !flag_char(text[i - 1]))) {
      size_t end = i + 2;
      while (end < text.size() && flag_char(text[end])) ++end;
      named = flag_field(text.substr(i, end - i));
      if (named) {
        out += Name{*named, Source::line}.label();
        i = end;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

model::JobSpec finish_draft(Draft d) {
  auto& s = d.spec;  // returned by move: d is this call's own
  const bool flags = d.source == Source::flag;
  if (!d.webhook.is_null()) {
    if (d.has_command)
      throw usage_error(flags ? "give either --webhook URL or a command after --, not both"
                              : "give either 'command' or 'webhook', not both");
    s.command = model::Command{};
    s.command.webhook = model::webhook_from_json(d.webhook);
    d.has_command = true;
  }
  if (!d.has_command) {
    if (flags)
      throw usage_error("no command given",
                        "put the command after --, e.g. jobctl submit -- make test, or give --webhook URL");
    throw key_error("command", "is required (or 'webhook')");
  }
  if (d.has_schedule_field && !d.has_cron)
    throw flags ? usage_error("--misfire, --catchup-window, --overlap, --jitter, --starts-at, --ends-at and "
                              "--max-runs need --cron")
                : key_error("cron", "is required by misfire, catchup_window, overlap, jitter, starts_at, ends_at "
                                    "and max_runs");
  if (d.has_cron) {
    d.schedule.max_concurrent = std::exchange(s.max_concurrent, std::nullopt);
    if (!d.at.empty() || s.delay_us)
      throw flags ? usage_error("--cron cannot be combined with --at or --in")
                  : key_error("cron", "cannot be combined with 'at' or 'in'");
    if (!d.tz.empty()) d.schedule.tz = d.tz;
    read_bounds(d, flags);
    cron::validate_schedule(d.schedule, s.name);
    s.schedule = std::move(d.schedule);
    model::validate(s);
    return std::move(s);
  }
  if (!d.tz.empty() && d.at.empty()) {
    if (flags)
      throw usage_error("--tz goes with --at or --cron", "e.g. --at '2026-12-24 18:00' --tz Europe/Berlin");
    throw key_error("tz", "goes with 'at' or 'cron'");
  }
  if (!d.at.empty() && s.delay_us)
    throw flags ? usage_error("--in cannot be combined with --at") : key_error("in", "cannot be combined with 'at'");
  if (!d.at.empty()) s.run_at_us = util::parse_at(d.at, d.tz, flags ? "--at" : "at");
  model::validate(s);
  return std::move(s);
}

}  // namespace

Error in_line_terms(const Error& e) { return Error(e.code(), line_terms(e.what()), line_terms(e.hint())); }

model::JobSpec finish(Draft d) {
  if (d.source == Source::flag) return finish_draft(std::move(d));
  try {
    return finish_draft(std::move(d));
  } catch (const Error& e) {
    throw in_line_terms(e);
  }
}

}  // namespace jobctl::jobdef
