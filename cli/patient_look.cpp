#include "cli/patient_look.hpp"

#include <algorithm>
#include <optional>
#include <thread>

#include "common/store/sql.hpp"
#include "common/util/error.hpp"

namespace jobctl::cli {

bool PatientLook::operator()(const std::function<void(store::Store&)>& look) {
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> failing_since;
  for (;;) {
    const auto started = Clock::now();
    try {
      // An SQLite file deleted or replaced since the command opened it: the
      // file the path names now is read, as jobctl serve does, not the old
      // one for ever.
      ctx_.forget_if_replaced();
      auto& store = ctx_.store();
      auto due = backoff_.deadline();
      if (due) due = std::max(*due, Clock::now() + std::chrono::seconds(1));
      // What the command does next is not the wait's, however the look ends.
      struct Bounded {
        store::Connection& c;
        ~Bounded() {
          c.answer_by(std::nullopt);
          c.give_up_when(nullptr);
        }
      } bounded{store.connection()};
      store.connection().answer_by(due);
      store.connection().give_up_when(interrupted_);
      look(store);
      answered_ = true;
      return true;
    } catch (const Error& e) {
      if (e.code() != ExitCode::store) throw;
      ctx_.drop_store();
      if (backoff_.expired() || (interrupted_ && interrupted_())) return false;
      // A store that never answered is not one that fails for a moment
      // (a wrong DSN, a missing schema): said at once.
      if (!answered_) throw;
      if (!failing_since) failing_since = started;
      if (Clock::now() - *failing_since >= store::store_timeout()) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace jobctl::cli
