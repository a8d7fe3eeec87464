#include "common/store/store.hpp"

#include <fmt/format.h>

#include "common/store/admin.hpp"
#include "common/store/agent.hpp"
#include "common/store/dags.hpp"
#include "common/store/dead_letter.hpp"
#include "common/store/internal.hpp"
#include "common/store/jobs.hpp"
#include "common/store/migrations.hpp"
#include "common/store/queues.hpp"
#include "common/store/scheduler.hpp"
#include "common/store/schedules.hpp"
#include "common/util/error.hpp"

namespace jobctl::store {

std::unique_ptr<Store> Store::open(const config::Dsn& dsn, Create create) {
  auto conn = dsn.backend == config::Backend::postgres ? open_postgres(dsn.target) : open_sqlite(dsn.target, create);
  auto store = std::make_unique<Store>(std::move(conn));
  // Zero set-up for the embedded default: a new SQLite file gets its schema.
  // PostgreSQL is shared, so changing it stays an explicit `jobctl init`.
  if (dsn.backend == config::Backend::sqlite && create == Create::yes &&
      store->connection().query("SELECT count(*) FROM sqlite_master").at(0).i64(0) == 0)
    store->created_with_ = store::migrate(store->connection());
  return store;
}

Store::Store(std::unique_ptr<Connection> conn) : conn_(std::move(conn)) {}

int Admin::schema_version() { return store::schema_version(*conn_); }

int Admin::migrate() { return store::migrate(*conn_); }

void Store::require_schema() {
  int v = store::schema_version(*conn_);
  if (v == 0) throw missing_schema(*conn_);
  if (v < kSchemaVersion)
    throw Error(ExitCode::store,
                fmt::format("the database schema is at version {}, this build needs version {}", v, kSchemaVersion),
                "run `jobctl init` to upgrade it");
  if (v > kSchemaVersion)
    throw Error(ExitCode::store,
                fmt::format("the database schema is at version {}, newer than this build understands ({})", v,
                            kSchemaVersion),
                "upgrade jobctl and jobagent");
}

int64_t now_us(Connection& c) { return c.query("SELECT NOW_US").at(0).i64(0); }

int64_t Store::now() { return now_us(*conn_); }

Jobs Store::jobs() { return Jobs(*conn_, actor_); }
Agent Store::agent() { return Agent(*conn_, actor_); }
Scheduler Store::scheduler() { return Scheduler(*conn_, actor_); }
Schedules Store::schedules() { return Schedules(*conn_, actor_); }
DeadLetter Store::dead_letter() { return DeadLetter(*conn_, actor_); }
Dags Store::dags() { return Dags(*conn_, actor_); }
Queues Store::queues() { return Queues(*conn_, actor_); }
Admin Store::admin() { return Admin(*conn_, actor_); }

}  // namespace jobctl::store
