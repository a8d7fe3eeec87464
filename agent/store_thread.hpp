#pragma once
// The agent's store calls, made on a thread of their own, so a store that
// hangs (a frozen server, a lock held elsewhere, a network that drops
// packets) never stalls the loop: signals, job deadlines, cancels, output,
// metrics and the watchdog keep their timing while a call waits
// (DESIGN.md: nothing blocks the agent's loop). Each call is bounded
// anyway by the driver's store timeout.
//
// Calls run one at a time, in the order they were submitted, against the
// one Store this thread owns, and their results come back to the loop in
// that order: `work` runs on the store thread and touches nothing but the
// Store and what it captured; `done` runs on the loop's thread, inside
// deliver(), and may touch anything. fd() is readable while results wait.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "common/store/store.hpp"
#include "common/util/error.hpp"

namespace jobctl::agent {

class StoreThread {
 public:
  using Clock = std::chrono::steady_clock;
  using Work = std::function<void(store::Store&)>;
  // `error` is empty when the work returned, else the jobctl::Error it
  // threw. Any other exception is rethrown from deliver() (a bug).
  using Done = std::function<void(const std::optional<Error>& error)>;

  explicit StoreThread(std::unique_ptr<store::Store> store);
  // Waits until the call in flight returns, at most `leave_after`; a call
  // still stuck then is left behind with its Store (the process is on its
  // way out, and the thread owns what it uses).
  ~StoreThread();
  StoreThread(const StoreThread&) = delete;
  StoreThread& operator=(const StoreThread&) = delete;

  void submit(const char* step, Work work, Done done);
  // Readable while finished calls wait for deliver().
  int fd() const;
  // Runs done() of every finished call, in submission order.
  void deliver();
  // Calls submitted and not yet delivered.
  size_t outstanding() const;
  // The call running now, and since when.
  struct Running {
    const char* step;
    Clock::time_point since;
  };
  std::optional<Running> running() const;
  // Delivers until nothing is outstanding or `deadline` passes; true when
  // everything was delivered.
  bool settle(Clock::time_point deadline);

  std::chrono::milliseconds leave_after{5000};

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace jobctl::agent
