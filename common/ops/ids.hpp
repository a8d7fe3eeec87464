#pragma once
// Turning an id a user typed (on the command line or in a URL) into a job,
// a run or a schedule: one rule for every front door.
#include <initializer_list>
#include <optional>
#include <string>

#include "common/model/job.hpp"
#include "common/store/jobs.hpp"
#include "common/store/store.hpp"

namespace jobctl::ops {

struct Resolved {
  model::JobView job;
  std::optional<model::Run> run;  // the run named, or the job's latest
  bool named_run = false;         // the id given was a run id
};

// The shortest prefix a user may type for an id.
inline constexpr size_t kMinIdPrefix = 6;

// An id as typed, in the store's spelling (a ULID, upper-case): a whole id
// as it is, or a prefix of at least kMinIdPrefix characters expanded to the
// one id of `kinds` it begins. Throws usage Error for what is not an id or
// a prefix, and for a prefix several ids begin (naming some of them), and
// not_found for a prefix no id begins.
std::string normalize_id(store::Store& store, const std::string& raw,
                         std::initializer_list<store::Jobs::IdKind> kinds);

// Accepts a job id or a run id, or a prefix of one, or a scheduled DAG's
// id (its schedule's job). Throws usage (not an id, an ambiguous prefix)
// or not_found.
Resolved resolve_id(store::Store& store, const std::string& id);

// For tables: the shortest prefix (at least kMinIdPrefix characters) that
// names each job id, or DAG run id, and nothing else, today; whole ids for
// more than 200 (each costs two index reads per kind of id).
std::vector<std::string> short_job_ids(store::Store& store, const std::vector<std::string>& job_ids);
std::vector<std::string> short_dag_run_ids(store::Store& store, const std::vector<std::string>& ids);

// For Tab: up to `limit` ids of `kind` that begin with `typed` (any
// length, either case), oldest first; none when it cannot begin an id.
std::vector<std::string> ids_to_complete(store::Store& store, const std::string& typed, store::Jobs::IdKind kind,
                                         int limit);

// A DAG run's id, or a prefix of one (as normalize_id).
std::string dag_run_id(store::Store& store, const std::string& raw);
// The same, for a prefix that may also name jobs and runs: it names the
// DAG run when those are all its own (its node runs and their jobs), and
// is ambiguous (usage Error) when another job or run begins with it too.
std::string awaited_dag_run_id(store::Store& store, const std::string& raw);

}  // namespace jobctl::ops
