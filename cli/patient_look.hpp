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
  PatientLook(Context& ctx, const Backoff& backoff) : ctx_(ctx), backoff_(backoff) {}

  // Runs `look` on the store. True once it ran; false when the wait's
  // timeout passed first (the caller times out, exit 124). A failure of
  // the first look, or failures for JOBCTL_STORE_TIMEOUT on end, are
  // thrown (exit 5).
  bool operator()(const std::function<void(store::Store&)>& look);

 private:
  Context& ctx_;
  const Backoff& backoff_;
  bool answered_ = false;
};

}  // namespace jobctl::cli
