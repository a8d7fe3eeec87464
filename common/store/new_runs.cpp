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

// A run's cells, in kColumns' order.
void write_cells(NewRun r, std::span<Value> out) {
  std::array<Value, kColumns.size()> cells{std::move(r.id),
                                            std::move(r.job_id),
                                            std::move(r.queue),
                                            int64_t{r.priority},
                                            std::move(r.status),
                                            nullable(r.available_at),
                                            r.delay_us,
                                            nullable(r.occurrence),
                                            int64_t{r.version},
                                            std::move(r.origin),
                                            std::move(r.error),
                                            std::move(r.tenant),
                                            nullable(r.group_key),
                                            int64_t{r.group_max},
                                            nullable(r.pinned_to)};
  std::move(cells.begin(), cells.end(), out.begin());
}

}  // namespace

std::optional<std::string> group_of(const model::JobSpec& s, const std::string& job_id) {
  if (model::group_limit(s) == 0) return std::nullopt;
  return s.concurrency_key.empty() ? job_id : s.concurrency_key;
}

int64_t insert_runs(Connection& c, size_t count, const std::function<NewRun(size_t)>& run, Connection::Send when) {
  const std::string sql = fmt::format(
      "INSERT INTO runs (id, job_id, queue, priority, status, available_at, created_at, occurrence, job_version, "
      "origin, error, finished_at, tenant, group_key, group_max, pinned_to) SELECT u.id, u.job_id, u.queue, "
      "u.priority, u.status, COALESCE(u.at, NOW_US + u.delay), NOW_US, u.occ, u.ver, u.origin, u.error, "
      "CASE WHEN u.status = 'skipped' THEN NOW_US END, u.tenant, u.group_key, u.group_max, u.pinned FROM {} "
      "WHERE true ON CONFLICT DO NOTHING",
      c.batch(kColumns, 1, "u"));
  return c.exec_batch(
      sql, {}, kColumns, count, [&](size_t i, std::span<Value> out) { write_cells(run(i), out); }, when);
}

int64_t insert_runs(Connection& c, const std::vector<NewRun>& runs) {
  return insert_runs(c, runs.size(), [&](size_t i) { return runs[i]; });
}

}  // namespace jobctl::store
