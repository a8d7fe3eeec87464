#include "cli/resolve.hpp"

#include <fmt/format.h>

#include "common/util/error.hpp"
#include "common/util/ulid.hpp"

namespace jobctl::cli {
namespace {

// Throws usage when `id` is not a ULID, naming what was expected.
void check_id(const std::string& id) {
  if (!util::is_ulid(id))
    throw usage_error(fmt::format("invalid id '{}': job and run ids are 26-character ULIDs", id),
                      "copy it from `jobctl ls` or the output of `jobctl submit`");
}

}  // namespace

Resolved resolve_id(Context& ctx, const std::string& raw) {
  check_id(raw);
  std::string id = raw;
  for (auto& c : id) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto& store = ctx.store();
  if (auto job = store.get_job(id)) return Resolved{*job, job->latest_run, false};
  if (auto run = store.get_run(id)) return Resolved{*store.get_job(run->job_id), run, true};
  throw Error(ExitCode::not_found, fmt::format("no job or run with id '{}'", raw), "list jobs with `jobctl ls`");
}

}  // namespace jobctl::cli
