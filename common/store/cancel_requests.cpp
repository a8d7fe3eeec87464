#include "common/store/cancel_requests.hpp"

#include <fmt/format.h>

#include "common/store/wakeups.hpp"

namespace jobctl::store {
namespace {

struct ReasonText {
  CancelReason reason;
  const char* error;  // a SQL string literal's content: no quotes
};
constexpr ReasonText kReasons[] = {
    {CancelReason::user, "cancelled by user"},
    {CancelReason::job_deleted, "cancelled: the job was deleted"},
    {CancelReason::dag, "cancelled by user (dag cancel)"},
    {CancelReason::overlap, "cancelled: a newer occurrence is due (overlap cancel-other)"},
};

}  // namespace

std::vector<std::string> ask_to_stop(Connection& c, CancelReason why, const std::string& where, const Params& params) {
  auto rows = c.query(fmt::format("UPDATE runs SET cancel_requested = {} WHERE ({}) AND status = 'running' "
                                  "AND cancel_requested = 0 RETURNING id",
                                  static_cast<int64_t>(why), where),
                      params);
  std::vector<std::string> ids;
  for (const auto& row : rows) {
    ids.push_back(row.text(0));
    wake_cancel(c, ids.back());
  }
  return ids;
}

std::string cancelled_error(int64_t request) {
  for (const auto& r : kReasons)
    if (static_cast<int64_t>(r.reason) == request) return r.error;
  return kReasons[0].error;
}

std::string recorded_status_sql(const std::string& reported, const std::string& request) {
  return fmt::format("CASE WHEN {0} = 'pending' AND {1} <> 0 THEN 'cancelled' ELSE {0} END", reported, request);
}

std::string cancelled_error_sql(const std::string& status, const std::string& request, const std::string& reported) {
  std::string sql = fmt::format("CASE WHEN {} = 'cancelled' THEN CASE {}", status, request);
  for (const auto& r : kReasons) sql += fmt::format(" WHEN {} THEN '{}'", static_cast<int64_t>(r.reason), r.error);
  return sql + fmt::format(" ELSE {} END ELSE {} END", reported, reported);
}

}  // namespace jobctl::store
