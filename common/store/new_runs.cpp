#include "common/store/new_runs.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace jobctl::store {
namespace {

constexpr std::array<BatchColumn, 15> kColumns{{
    {"id", ColumnType::text},
    {"job_id", ColumnType::text},
    {"queue", ColumnType::text},
    {"priority", ColumnType::integer},
    {"status", ColumnType::text},
    {"at", ColumnType::integer},
    {"delay", ColumnType::integer},
    {"occ", ColumnType::integer},
    {"ver", ColumnType::integer},
    {"origin", ColumnType::text},
    {"error", ColumnType::text},
    {"tenant", ColumnType::text},
    {"group_key", ColumnType::text},
    {"group_max", ColumnType::integer},
    {"pinned", ColumnType::text},
}};

std::vector<Value> cells(const NewRun& r) {
  return {r.id,         r.job_id,   r.queue,   int64_t{r.priority},  r.status,         nullable(r.available_at),
          r.delay_us,   nullable(r.occurrence),   int64_t{r.version},    r.origin,         r.error,
          r.tenant,     nullable(r.group_key),    int64_t{r.group_max},  nullable(r.pinned_to)};
}

}  // namespace

std::optional<std::string> group_of(const model::JobSpec& s, const std::string& job_id) {
  if (model::group_limit(s) == 0) return std::nullopt;
  return s.concurrency_key.empty() ? job_id : s.concurrency_key;
}

int64_t insert_runs(Connection& c, const std::vector<NewRun>& runs) {
  const std::string sql = fmt::format(
      "INSERT INTO runs (id, job_id, queue, priority, status, available_at, created_at, occurrence, job_version, "
      "origin, error, finished_at, tenant, group_key, group_max, pinned_to) SELECT u.id, u.job_id, u.queue, "
      "u.priority, u.status, COALESCE(u.at, NOW_US + u.delay), NOW_US, u.occ, u.ver, u.origin, u.error, "
      "CASE WHEN u.status = 'skipped' THEN NOW_US END, u.tenant, u.group_key, u.group_max, u.pinned FROM {} "
      "WHERE true ON CONFLICT DO NOTHING",
      c.batch(kColumns, 1, "u"));
  BatchRows rows;
  int64_t inserted = 0;
  for (size_t start = 0; start < runs.size(); start += kBatchRows) {
    rows.clear();
    for (size_t i = start; i < std::min(runs.size(), start + kBatchRows); ++i) rows.push_back(cells(runs[i]));
    inserted += c.exec_batch(sql, {}, kColumns, rows);
  }
  return inserted;
}

}  // namespace jobctl::store
