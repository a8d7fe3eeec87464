#pragma once
// How a command that waits (wait, logs -f, run) looks at the store: a
// store that answered before and then fails (a failover, a killed
// connection, a restart) is looked at again on a new connection, as the
// agents do, rather than ending a CI step that was waiting for a job that
// goes on; and no look waits past the command's own --timeout.
#include <functional>

#include "cli/context.hpp"
#include "cli/wait_display.hpp"

namespace jobctl::cli {

class PatientLook {
 public:
  // A store the command opened already has answered. While `interrupted`
  // says so (jobctl run's Ctrl-C, not yet acted on), no look waits.
  PatientLook(Context& ctx, const Backoff& backoff, std::function<bool()> interrupted = nullptr)
      : ctx_(ctx), backoff_(backoff), interrupted_(std::move(interrupted)), answered_(ctx.store_open()) {}

  // Runs `look` on the store. True once it ran; false when the wait's
  // timeout passed first (the caller times out, exit 124) or `interrupted`
  // stopped it (the caller acts on what interrupted it). A failure of
  // the first look, or failures for JOBCTL_STORE_TIMEOUT on end, are
  // thrown (exit 5). A look's answer is awaited until the timeout, or for
  // a second at least (the last look of a wait, or one that comes after
  // its time, as for the second of `wait A B`); none beyond the look.
  bool operator()(const std::function<void(store::Store&)>& look);

 private:
  Context& ctx_;
  const Backoff& backoff_;
  std::function<bool()> interrupted_;
  bool answered_;
};

}  // namespace jobctl::cli
