#pragma once
// Wake-up hints for agents: a file descriptor that becomes readable when
// the store may have news (new runs, cancel requests), so an idle agent
// sleeps in poll() instead of polling the database.
//
// * PostgreSQL: a second connection LISTENing on jobctl_wake (payload: the
//   queue) and jobctl_cancel (payload: the run id). Submit, release and
//   rescue NOTIFY in their transaction.
// * SQLite: inotify on the database's -wal file, which every commit writes.
//
// Hints only: a lost notification costs latency, never work, because the
// agent keeps a polling fallback. `--no-listen` (PgBouncer transaction
// pooling, where LISTEN does not work) turns them off.
#include <memory>
#include <string>
#include <vector>

#include "common/config/dsn.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

// The two hints, sent in the caller's transaction (Connection::notify).
inline constexpr const char* kWakeChannel = "jobctl_wake";      // payload: the queue with new work
inline constexpr const char* kCancelChannel = "jobctl_cancel";  // payload: the run asked to stop
inline void wake_queue(Connection& c, const std::string& queue) { c.notify(kWakeChannel, queue); }
inline void wake_cancel(Connection& c, const std::string& run_id) { c.notify(kCancelChannel, run_id); }

struct WakeReasons {
  bool work = false;    // a run may have become claimable in one of our queues
  bool cancel = false;  // a cancel may have been requested
};

class Wakeups {
 public:
  virtual ~Wakeups() = default;
  // The descriptor to poll for POLLIN, or -1 while there is none.
  virtual int fd() const = 0;
  // Consumes what arrived. Never throws: a broken LISTEN connection is
  // re-opened (at most every 5 s; call drain() now and then while fd() is
  // -1) and reported as a wake so nothing waits on it.
  virtual WakeReasons drain() = 0;

  // Never null: a source that never fires when listening is off or
  // impossible.
  static std::unique_ptr<Wakeups> open(const config::Dsn& dsn, const std::vector<std::string>& queues, bool listen);
};

}  // namespace jobctl::store
