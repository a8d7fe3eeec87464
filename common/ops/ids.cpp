#include "common/ops/ids.hpp"

#include <fmt/format.h>

#include "common/store/dags.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "common/util/ulid.hpp"

namespace jobctl::ops {

std::string normalize_id(const std::string& raw) {
  if (!util::is_ulid(raw))
    throw usage_error(fmt::format("invalid id '{}': ids are 26-character ULIDs", raw),
                      "copy it from `jobctl ls`, `jobctl dag ls` or the output of `jobctl submit`");
  std::string id = raw;
  for (auto& c : id) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return id;
}

Resolved resolve_id(store::Store& store, const std::string& raw) {
  const std::string id = normalize_id(raw);
  if (auto job = store.jobs().get_job(id)) return Resolved{*job, job->latest_run, false};
  if (auto run = store.jobs().get_run(id)) return Resolved{*store.jobs().get_job(run->job_id), run, true};
  throw Error(ExitCode::not_found, fmt::format("no job or run with id '{}'", raw), "list jobs with `jobctl ls`");
}

Resolved resolve_schedule(store::Store& store, const std::string& id) {
  std::string job = store.dags().schedule_job_of(normalize_id(id));
  return resolve_id(store, job.empty() ? id : job);
}

}  // namespace jobctl::ops
