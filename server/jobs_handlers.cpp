// The API's jobs: submit (one, or a batch all or nothing), list, get,
// update, cancel, retry, pause, resume, delete, restore.
#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "common/jobdef/fields.hpp"
#include "common/jobdef/job_input.hpp"
#include "common/model/job.hpp"
#include "common/model/job_json.hpp"
#include "common/ops/ids.hpp"
#include "common/ops/job_actions.hpp"
#include "common/ops/job_update.hpp"
#include "common/ops/job_views.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "common/util/json_input.hpp"
#include "common/util/strings.hpp"
#include "common/util/ulid.hpp"
#include "common/util/utf8.hpp"
#include "server/handlers.hpp"
#include "server/problem.hpp"

namespace jobctl::server {
namespace {

constexpr const char* kBodyHint =
    "the body is a job as one line of `jobctl submit --file` takes, or an array of them; see jobctl(1), SERVE";

// The jobs of a request body: an object is one job, an array a batch.
std::vector<model::JobSpec> specs_of(const Call& c, bool& batch) {
  auto body = util::parse_json_input(c.request.body, "the request body", kBodyHint);
  batch = body.is_array();
  return from_body([&]() -> std::vector<model::JobSpec> {
    if (!batch) return {jobdef::job_spec_from_json(body)};
    if (body.empty()) throw usage_error("the request body is an empty array", kBodyHint);
    std::vector<model::JobSpec> specs;
    for (size_t i = 0; i < body.size(); ++i) {
      try {
        specs.push_back(jobdef::job_spec_from_json(body[i]));
      } catch (const Error& e) {
        throw jobdef::refused_in_batch(e, fmt::format("job {}", i + 1));
      }
    }
    return specs;
  });
}

}  // namespace

void apply_idempotency_header(const Call& c, model::JobSpec& spec) {
  if (!c.request.has_header("Idempotency-Key")) return;
  const std::string key = c.request.get_header_value("Idempotency-Key");
  // Checked as the body's key is: it goes to the store as one.
  model::validate_idempotency_key(key, "the Idempotency-Key header");
  if (!spec.idempotency_key.empty() && spec.idempotency_key != key)
    throw usage_error("the Idempotency-Key header and the body's \"idempotency_key\" differ",
                      "give the key once, in either");
  spec.idempotency_key = key;
}

Reply submit_jobs(Call& c) {
  bool batch = false;
  auto specs = specs_of(c, batch);
  if (batch && c.request.has_header("Idempotency-Key"))
    throw usage_error("the Idempotency-Key header goes with one job, not a batch",
                      "give each job of the array its own \"idempotency_key\"");
  apply_idempotency_header(c, specs[0]);
  store::Submitted s;
  try {
    s = c.submissions.submit(c.token.name, std::move(specs));
  } catch (const store::JobRefused& e) {  // what the body asks, as a bad item of it is (422, its keys named)
    if (!batch) throw BodyError(jobdef::in_line_terms(e));
    throw BodyError(jobdef::in_line_terms(jobdef::refused_in_batch(e, fmt::format("job {}", e.index() + 1))));
  }
  bool all_existed = std::all_of(s.results.begin(), s.results.end(), [](const auto& r) { return r.existed; });
  Reply reply{all_existed ? 200 : 201, ops::submitted_json(s.views, batch), {}};
  if (!batch) reply.headers.emplace_back("Location", fmt::format("{}/jobs/{}", kApiPrefix, s.results[0].job_id));
  return reply;
}

Reply list_jobs(Call& c) {
  store::JobFilter filter;
  if (auto status = c.query("status"); !status.empty()) filter.status = model::parse_run_status(status);
  if (auto queue = c.query("queue"); !queue.empty()) filter.queue = queue;
  filter.deleted = query_bool(c, "deleted");
  filter.before = c.query("before");
  // The cursor is the last job's id of a page (the Link header's), in
  // either case as every id is (lower case, compared as it was, listed the
  // first page again: a client paging so never ended).
  if (!filter.before.empty() && !util::is_ulid(filter.before))
    throw usage_error(fmt::format("the cursor before='{}' is not a job id", util::show_bytes(filter.before)),
                      "list again from the first page, without before");
  if (!filter.before.empty()) filter.before = ops::normalize_id(c.store, filter.before, {store::Jobs::IdKind::job});
  filter.limit = query_int(c, "limit", filter.limit, 1, 100000);
  auto jobs = c.store.jobs().list_jobs(filter);
  Reply reply{200, ops::job_list_json(c.store, jobs), {}};
  if (!jobs.empty()) link_next(c, reply, "/jobs", jobs.size(), filter.limit, jobs.back().job.id);
  return reply;
}

// A job's version as an entity tag, for If-Match on PATCH.
std::string etag_of(const nlohmann::json& job) { return fmt::format("\"{}\"", job["version"].get<int>()); }

Reply get_job(Call& c) {
  auto j = ops::job_json(c.store, c.path_param(1));
  return {200, j, {{"ETag", etag_of(j)}}};
}

namespace {

// The version If-Match asks the update of job `id`, now at `current`, to
// apply at (the store checks it again, in the update's transaction); none
// for `*`, any version. As RFC 9110 (13.1.1) has it, the header is a list
// of entity tags, any of which may match: "3", W/"3" or a bare 3 name the
// version GET answered in its ETag; a tag naming no version matches none
// (412); what is no list of tags is 400.
std::optional<int> if_match_version(const std::string& header, const std::string& id, int current) {
  const auto trimmed = [](std::string_view t) {
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    return t;
  };
  if (trimmed(header) == "*") return std::nullopt;
  std::optional<int> named;
  for (const auto& part : util::split(header, ',')) {
    std::string_view tag = trimmed(part);
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    const bool quoted = tag.size() >= 2 && tag.front() == '"' && tag.back() == '"';
    if (quoted) tag = tag.substr(1, tag.size() - 2);
    int version = 0;
    auto [end, ec] = std::from_chars(tag.data(), tag.data() + tag.size(), version);
    if (ec == std::errc() && end == tag.data() + tag.size() && version >= 1) {
      if (version == current) return version;
      if (!named) named = version;
    } else if (!quoted || tag.find('"') != std::string_view::npos) {
      throw usage_error("If-Match '" + header + "' is not a list of entity tags",
                        "send the ETag that GET /api/v1/jobs/{id} answered, e.g. If-Match: \"3\"");
    }
  }
  if (named) return named;  // not the job's version: the store answers 412, naming it
  throw Error(ExitCode::conflict,
              fmt::format("If-Match '{}' names no version of job {}, which is at version {}; nothing was updated",
                          header, id, current),
              fmt::format("send the ETag that GET /api/v1/jobs/{} answers, e.g. If-Match: \"{}\"", id, current));
}

}  // namespace

Reply update_job(Call& c) {
  const char* hint = R"(the body is an object of the fields to change, e.g. {"priority": "high", "retries": 5})";
  auto body = util::parse_json_input(c.request.body, "the request body", hint);
  auto u = from_body([&] { return ops::job_update_from_json(body); });
  // The id's mistakes are the path's; what the update asks is the body's.
  const auto job = ops::resolve_id(c.store, c.path_param(1)).job.job;
  const std::string& id = job.id;
  if (c.request.has_header("If-Match"))
    u.if_version = if_match_version(c.request.get_header_value("If-Match"), id, job.version);
  auto j = from_body([&] { return ops::update_job(c.store, id, u); });
  return {200, j, {{"ETag", etag_of(j)}}};
}
Reply cancel_job(Call& c) { return {200, ops::cancel_job(c.store, c.path_param(1)), {}}; }
Reply retry_job(Call& c) { return {200, ops::retry_job(c.store, c.path_param(1)), {}}; }
Reply pause_job(Call& c) { return {200, ops::pause_job(c.store, c.path_param(1), true), {}}; }
Reply resume_job(Call& c) { return {200, ops::pause_job(c.store, c.path_param(1), false), {}}; }

Reply delete_job(Call& c) {
  return {200, ops::delete_job(c.store, c.path_param(1), query_bool(c, "cancel_running")), {}};
}

Reply restore_job(Call& c) { return {200, ops::restore_job(c.store, c.path_param(1)), {}}; }

}  // namespace jobctl::server
