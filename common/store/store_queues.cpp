// Store: queues and their retry-policy defaults.
#include <fmt/format.h>

#include "common/store/internal.hpp"
#include "common/store/queues.hpp"
#include "common/store/rows.hpp"
#include "common/store/wakeups.hpp"
#include "common/util/error.hpp"

namespace jobctl::store {
namespace {

constexpr const char* kDefaultColumns =
    "q.name, q.max_retries, q.backoff, q.retry_delay_us, q.max_retry_delay_us, q.retry_for_us, "
    "q.no_retry_exit_codes, q.max_deliveries, q.delivery";

model::RetryOverrides defaults_from_row(const Row& row) {
  model::RetryOverrides o;
  if (auto v = row.opt_i64(1)) o.max_retries = static_cast<int>(*v);
  if (!row.is_null(2)) o.backoff = model::parse_backoff(row.text(2));
  o.delay_us = row.opt_i64(3);
  o.max_delay_us = row.opt_i64(4);
  o.retry_for_us = row.opt_i64(5);
  if (!row.is_null(6)) o.no_retry_exit_codes = model::ExitCodeSet::parse(row.text(6));
  if (auto v = row.opt_i64(7)) o.max_deliveries = static_cast<int>(*v);
  if (!row.is_null(8)) o.delivery = model::parse_delivery(row.text(8));
  return o;
}

}  // namespace

std::map<std::string, model::RetryOverrides> queue_defaults(Connection& c, const std::set<std::string>& queues) {
  std::map<std::string, model::RetryOverrides> out;
  if (queues.empty()) return out;
  std::vector<std::string> list(queues.begin(), queues.end());
  auto rows = c.query(fmt::format("SELECT {} FROM queues q WHERE {}", kDefaultColumns,
                                       c.in_list("q.name", 1)),
                           {c.list(list)});
  for (const auto& row : rows) out[row.text(0)] = defaults_from_row(row);
  return out;
}

void Queues::set_queue_defaults(const std::string& queue, const model::RetryOverrides& given, Clear clear) {
  Transaction tx(*conn_, TxMode::write);
  model::RetryOverrides merged;
  if (clear == Clear::no) merged = queue_defaults(*conn_, {queue})[queue];
  merged.merge(given);
  model::validate(merged);
  // An upsert, so that the queue keeps what else it has (paused).
  conn_->exec(
      "INSERT INTO queues (name, max_retries, backoff, retry_delay_us, max_retry_delay_us, retry_for_us, "
      "no_retry_exit_codes, max_deliveries, delivery, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NOW_US) "
      "ON CONFLICT (name) DO UPDATE SET max_retries = excluded.max_retries, backoff = excluded.backoff, "
      "retry_delay_us = excluded.retry_delay_us, max_retry_delay_us = excluded.max_retry_delay_us, "
      "retry_for_us = excluded.retry_for_us, no_retry_exit_codes = excluded.no_retry_exit_codes, "
      "max_deliveries = excluded.max_deliveries, delivery = excluded.delivery, updated_at = excluded.updated_at",
      {queue, nullable(merged.max_retries),
       merged.backoff ? Value(std::string(model::to_string(*merged.backoff))) : Value(nullptr),
       nullable(merged.delay_us), nullable(merged.max_delay_us), nullable(merged.retry_for_us),
       merged.no_retry_exit_codes ? Value(merged.no_retry_exit_codes->str()) : Value(nullptr),
       nullable(merged.max_deliveries),
       merged.delivery ? Value(std::string(model::to_string(*merged.delivery))) : Value(nullptr)});
  tx.commit();
}

std::vector<QueueInfo> Queues::list_queues() {
  std::map<std::string, QueueInfo> by_name;
  for (const auto& row : conn_->query(fmt::format(
           "SELECT {}, q.paused, q.max_concurrent, q.rate, q.tenant_max_concurrent FROM queues q", kDefaultColumns)))
    by_name[row.text(0)] = QueueInfo{row.text(0),
                                     defaults_from_row(row),
                                     0,
                                     0,
                                     0,
                                     row.i64(9) != 0,
                                     static_cast<int>(row.i64(10)),
                                     std::stod(row.text(11)),
                                     static_cast<int>(row.i64(12))};
  auto counts = conn_->query(
      "SELECT r.queue, "
      "SUM(CASE WHEN r.status = 'pending' THEN 1 ELSE 0 END), "
      "SUM(CASE WHEN r.status = 'running' THEN 1 ELSE 0 END), "
      "SUM(CASE WHEN " + std::string(kInDeadLetter) + " THEN 1 ELSE 0 END) "
      "FROM runs r GROUP BY r.queue");
  for (const auto& row : counts) {
    auto& q = by_name[row.text(0)];
    q.name = row.text(0);
    q.pending = row.i64(1);
    q.running = row.i64(2);
    q.dead = row.i64(3);
  }
  std::vector<QueueInfo> out;
  for (auto& [name, q] : by_name) out.push_back(std::move(q));
  return out;
}

std::set<std::string> Queues::paused_queues() {
  std::set<std::string> out;
  for (const auto& row : conn_->query("SELECT name FROM queues WHERE paused <> 0")) out.insert(row.text(0));
  return out;
}

void Queues::set_queue_limits(const std::string& queue, const QueueLimits& limits) {
  if ((limits.max_concurrent && *limits.max_concurrent < 0) || (limits.rate && !(*limits.rate >= 0)) ||
      (limits.tenant_max_concurrent && *limits.tenant_max_concurrent < 0))
    throw usage_error("a queue limit must not be negative", "0 removes the limit");
  Transaction tx(*conn_, TxMode::write);
  conn_->exec("INSERT INTO queues (name, updated_at) VALUES ($1, NOW_US) ON CONFLICT (name) DO NOTHING", {queue});
  if (limits.max_concurrent)
    conn_->exec("UPDATE queues SET max_concurrent = $2, updated_at = NOW_US WHERE name = $1",
                {queue, int64_t{*limits.max_concurrent}});
  if (limits.tenant_max_concurrent)
    conn_->exec("UPDATE queues SET tenant_max_concurrent = $2, updated_at = NOW_US WHERE name = $1",
                {queue, int64_t{*limits.tenant_max_concurrent}});
  // A new rate starts with a full burst.
  if (limits.rate)
    conn_->exec("UPDATE queues SET rate = CAST($2 AS DOUBLE PRECISION), tokens = 0, tokens_at = 0, updated_at = NOW_US "
                "WHERE name = $1",
                {queue, fmt::format("{}", *limits.rate)});
  // Raised limits may free runs at once.
  wake_queue(*conn_, queue);
  tx.commit();
}

bool Queues::set_queue_paused(const std::string& queue, bool paused) {
  Transaction tx(*conn_, TxMode::write);
  auto rows = conn_->query("SELECT paused FROM queues WHERE name = $1", {queue});
  if (!rows.empty() && (rows[0].i64(0) != 0) == paused) return false;
  if (rows.empty() && !paused) return false;
  conn_->exec("INSERT INTO queues (name, paused, updated_at) VALUES ($1, $2, NOW_US) "
              "ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at",
              {queue, int64_t{paused ? 1 : 0}});
  if (!paused) wake_queue(*conn_, queue);
  tx.commit();
  return true;
}

}  // namespace jobctl::store
