#pragma once
// The store: every read and write of jobs, runs, attempts and workers,
// over one connection to SQLite (one host) or PostgreSQL (a fleet).
//
// A Store owns the connection and hands out its roles, each a small class
// of its own header over that connection: jobs() (jobs.hpp), agent()
// (agent.hpp), scheduler() (scheduler.hpp), schedules() (schedules.hpp),
// dead_letter() (dead_letter.hpp), dags() (dags.hpp), queues()
// (queues.hpp) and admin() (admin.hpp). A program includes the headers of
// the roles it uses: jobctl never sees the agent's, jobagent never the
// CLI's. A role is cheap to make; it must not outlive its Store.
//
// Contract for every method of every role:
// * Each call is one transaction: it happens entirely or not at all.
// * "Not found" is an empty optional (or, for commands that need the row,
//   Error(ExitCode::not_found) naming the id).
// * Failures throw jobctl::Error (see util/error.hpp).
// * Times are the database clock, microseconds since the epoch.
// * A Store, and its roles, are not thread-safe: one per thread.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "common/config/dsn.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

class Jobs;
class Agent;
class Scheduler;
class Schedules;
class DeadLetter;
class Dags;
class Queues;
class Admin;

class Store {
 public:
  // Opens the database. A SQLite store that `create` allows to be made
  // (`jobctl init`, and the default file on first use) gets its file and
  // schema at once: zero set-up. Any other SQLite path must exist already,
  // else Error(ExitCode::store) "no store at PATH". The schema must then be
  // current (require_schema).
  static std::unique_ptr<Store> open(const config::Dsn& dsn, Create create);
  explicit Store(std::unique_ptr<Connection> conn);
  Connection& connection() { return *conn_; }
  // Throws Error(ExitCode::store) with "run jobctl init" when the schema is
  // missing or older than this build, or "upgrade" when it is newer.
  void require_schema();
  int64_t now();  // the database clock
  // The migrations open() applied to a new SQLite file (0 otherwise).
  int created_with() const { return created_with_; }
  // Who the changes this Store makes are recorded as (jobctl: --actor,
  // JOBCTL_ACTOR or user@host). Default "unknown".
  void set_actor(std::string actor) { actor_ = std::move(actor); }

  // The roles, recorded as this Store's actor.
  Jobs jobs();
  Agent agent();
  Scheduler scheduler();
  Schedules schedules();
  DeadLetter dead_letter();
  Dags dags();
  Queues queues();
  Admin admin();

 private:
  std::unique_ptr<Connection> conn_;
  std::string actor_ = "unknown";
  int created_with_ = 0;
};

// Forgets `store` when its SQLite file was deleted or replaced since it
// was opened (an operator reset or restored the store), so that a holder
// that opens one when it has none opens the file the path names now. One
// stat(2); nothing for PostgreSQL.
inline void forget_if_replaced(std::unique_ptr<Store>& store) {
  if (store && store->connection().file_replaced()) store.reset();
}

}  // namespace jobctl::store
