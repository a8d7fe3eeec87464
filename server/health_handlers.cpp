// The API's health: stats per queue and priority (and as a series), check's
// thresholds, and who the caller is.
#include "common/ops/health.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/strings.hpp"
#include "server/handlers.hpp"

namespace jobctl::server {
namespace {

std::optional<std::string> queue_of(const Call& c) {
  auto q = c.query("queue");
  return q.empty() ? std::nullopt : std::optional<std::string>(q);
}

}  // namespace

Reply stats(Call& c) {
  const std::string since = c.request.has_param("since") ? c.query("since") : "1h";
  return {200, ops::stats_json(c.store, queue_of(c), ops::window_of(since, "since")), {}};
}

Reply stats_series(Call& c) {
  const std::string since = c.request.has_param("since") ? c.query("since") : "1h";
  const std::string step = c.request.has_param("step") ? c.query("step") : "1m";
  return {200, ops::series_json(c.store, queue_of(c), ops::window_of(since, "since"), ops::window_of(step, "step")), {}};
}

Reply whoami(Call& c) {
  return {200, nlohmann::json{{"name", c.token.name}, {"role", std::string(to_string(c.token.role))}}, {}};
}

Reply check(Call& c) {
  ops::Thresholds t;
  t.queue = queue_of(c);
  t.window_us = ops::window_of(c.request.has_param("since") ? c.query("since") : "15m", "since");
  if (c.request.has_param("max_dlq")) t.max_dlq = query_int(c, "max_dlq", 0, 0, 1'000'000'000);
  if (c.request.has_param("min_workers")) t.min_workers = query_int(c, "min_workers", 0, 0, 1'000'000);
  t.max_lag = c.query("max_lag");
  t.max_oldest = c.query("max_oldest");
  if (c.request.has_param("max_failure_rate")) {
    const std::string text = c.query("max_failure_rate");
    const double pct = util::parse_number(text).value_or(-1);
    if (!(pct >= 0 && pct <= 100))
      throw usage_error("query parameter max_failure_rate='" + text + "' is not a percentage from 0 to 100");
    t.max_failure_rate = pct;
  }
  if (c.request.has_param("max_ready")) t.max_ready = query_int(c, "max_ready", 0, 0, 1'000'000'000);
  if (c.request.has_param("max_stuck")) t.max_stuck = query_int(c, "max_stuck", 0, 0, 1'000'000);
  if (c.request.has_param("stuck_after")) {
    if (!t.max_stuck) throw usage_error("query parameter stuck_after goes with max_stuck");
    t.stuck_after = c.query("stuck_after");
    util::parse_duration(t.stuck_after, "stuck_after");
  }
  if (!t.any())
    throw usage_error("no threshold given", "e.g. /api/v1/check?max_dlq=0&max_oldest=5m&min_workers=1");
  auto found = ops::breaches(c.store, t);
  return {200, nlohmann::json{{"ok", found.empty()}, {"breaches", found}}, {}};
}

}  // namespace jobctl::server
