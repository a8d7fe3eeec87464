#include "common/ops/ids.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "common/store/dags.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "common/util/ulid.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::ops {

namespace {

constexpr std::string_view kCrockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool crockford(const std::string& upper_text) { return upper_text.find_first_not_of(kCrockford) == std::string::npos; }

// The least string of ULID characters above every id that begins `prefix`
// ("" when there is none): its last character that is not Z, plus one.
std::string after_prefix(std::string prefix) {
  while (!prefix.empty() && prefix.back() == 'Z') prefix.pop_back();
  if (prefix.empty()) return prefix;
  prefix.back() = kCrockford[kCrockford.find(prefix.back()) + 1];
  return prefix;
}

constexpr size_t kShown = 5;  // candidates an ambiguous prefix names
// Ids read per kind: enough to see past one job's own runs (a fan-out
// job's, one per agent) to another id the prefix names.
constexpr int kRead = 200;

// The ids of `kind` that begin with `raw` (a whole id: itself alone, of
// whatever kind), in the store's spelling; at most kRead.
std::vector<std::string> ids_beginning(store::Store& store, const std::string& raw, store::Jobs::IdKind kind) {
  if (util::is_ulid(raw)) return {upper(raw)};
  const std::string prefix = upper(raw);
  if (!crockford(prefix) || prefix.size() < kMinIdPrefix || prefix.size() > 25)
    throw usage_error(fmt::format("invalid id '{}': ids are 26-character ULIDs, or a prefix of at least {} of their "
                                  "characters",
                                  util::show_bytes(raw), kMinIdPrefix),
                      "copy it from `jobctl ls`, `jobctl dag ls` or the output of `jobctl submit`");
  return store.jobs().ids_between(kind, prefix, after_prefix(prefix), kRead);
}

[[noreturn]] void ambiguous(const std::string& raw, const std::vector<std::string>& found) {
  std::string names;
  for (size_t i = 0; i < found.size() && i < kShown; ++i) names += (i ? ", " : "") + found[i];
  throw usage_error(fmt::format("the id prefix '{}' is ambiguous: {}{}", raw, names, found.size() > kShown ? ", …" : ""),
                    "type more of the id");
}

}  // namespace

std::vector<std::string> ids_to_complete(store::Store& store, const std::string& typed, store::Jobs::IdKind kind,
                                         int limit) {
  const std::string prefix = upper(typed);
  if (prefix.size() > 26 || !crockford(prefix)) return {};
  return store.jobs().ids_between(kind, prefix, after_prefix(prefix), limit);
}

std::string normalize_id(store::Store& store, const std::string& raw,
                         std::initializer_list<store::Jobs::IdKind> kinds) {
  if (util::is_ulid(raw)) return upper(raw);
  std::vector<std::string> found;
  for (auto kind : kinds)
    for (auto& id : ids_beginning(store, raw, kind)) found.push_back(id);
  if (found.empty()) throw Error(ExitCode::not_found, fmt::format("no id begins with '{}'", raw), "list them with `jobctl ls`");
  if (found.size() > 1) ambiguous(raw, found);
  return found[0];
}

Resolved resolve_id(store::Store& store, const std::string& raw) {
  using Kind = store::Jobs::IdKind;
  auto not_found = [&] {
    return Error(ExitCode::not_found, fmt::format("no job or run with id '{}'", raw), "list jobs with `jobctl ls`");
  };
  std::string id = upper(raw);
  if (!util::is_ulid(raw)) {
    auto jobs = ids_beginning(store, raw, Kind::job);
    auto runs = ids_beginning(store, raw, Kind::run);
    if (jobs.empty() && runs.empty()) throw not_found();
    if (jobs.size() + runs.size() == 1) {
      id = jobs.empty() ? runs[0] : jobs[0];
    } else {
      // A job's first run is made in the same millisecond, its id the
      // job's plus one: a prefix of a job and only its own runs names the job.
      std::vector<std::string> all = jobs;
      all.insert(all.end(), runs.begin(), runs.end());
      if (jobs.size() != 1) ambiguous(raw, all);
      std::set<std::string> own;
      for (const auto& r : store.jobs().runs_of(jobs[0])) own.insert(r.id);
      if (!std::all_of(runs.begin(), runs.end(), [&](const auto& r) { return own.count(r) > 0; })) ambiguous(raw, all);
      id = jobs[0];
    }
  }
  if (auto job = store.jobs().get_job(id)) return Resolved{*job, job->latest_run, false};
  if (auto run = store.jobs().get_run(id)) return Resolved{*store.jobs().get_job(run->job_id), run, true};
  // A scheduled DAG's id (what dag submit --cron prints) names its
  // schedule's job: schedule trigger took it, and get, pause or delete
  // did not (a tester).
  if (util::is_ulid(id))
    if (auto job = store.dags().schedule_job_of(id); !job.empty()) return resolve_id(store, job);
  throw not_found();
}

namespace {

size_t common_prefix(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// Tables longer than this show whole ids: each shortened id costs two
// index reads per kind.
constexpr size_t kShortenAtMost = 200;

std::vector<std::string> shortened(store::Store& store, const std::vector<std::string>& ids,
                                   std::initializer_list<store::Jobs::IdKind> kinds) {
  if (ids.size() > kShortenAtMost) return ids;
  std::vector<std::string> out;
  for (const auto& id : ids) {
    size_t shared = 0;
    for (auto kind : kinds) {
      auto [before, after] = store.jobs().ids_around(kind, id);
      shared = std::max({shared, common_prefix(id, before), common_prefix(id, after)});
    }
    out.push_back(id.substr(0, std::max(kMinIdPrefix, shared + 1)));
  }
  return out;
}

}  // namespace

std::vector<std::string> short_job_ids(store::Store& store, const std::vector<std::string>& job_ids) {
  return shortened(store, job_ids, {store::Jobs::IdKind::job, store::Jobs::IdKind::run});
}

std::vector<std::string> short_dag_run_ids(store::Store& store, const std::vector<std::string>& ids) {
  return shortened(store, ids, {store::Jobs::IdKind::dag_run});
}

std::string dag_run_id(store::Store& store, const std::string& raw) {
  return normalize_id(store, raw, {store::Jobs::IdKind::dag_run});
}

std::string awaited_dag_run_id(store::Store& store, const std::string& raw) {
  const std::string dag_run = dag_run_id(store, raw);
  if (util::is_ulid(raw)) return dag_run;
  // Its node runs are made in the same millisecond, and the DAG's jobs too
  // when it was submitted with it: a prefix of those only names the DAG
  // run. One that another job or run begins is ambiguous (`jobctl wait`
  // took it for the DAG run, and reported it green for a failed job).
  std::vector<std::string> others;
  const auto runs_begun = ids_beginning(store, raw, store::Jobs::IdKind::run);
  for (const auto& id : runs_begun)
    if (auto run = store.jobs().get_run(id); run && run->dag_run_id != dag_run) others.push_back(id);
  // More runs than were read: one past them may be another's.
  if (runs_begun.size() >= static_cast<size_t>(kRead) && others.empty()) others.push_back(runs_begun.back());
  for (const auto& id : ids_beginning(store, raw, store::Jobs::IdKind::job)) {
    const auto runs = store.jobs().runs_of(id);
    if (!std::any_of(runs.begin(), runs.end(), [&](const model::Run& r) { return r.dag_run_id == dag_run; }))
      others.push_back(id);
  }
  if (!others.empty()) {
    others.insert(others.begin(), dag_run);
    ambiguous(raw, others);
  }
  return dag_run;
}

}  // namespace jobctl::ops
