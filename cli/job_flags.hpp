#pragma once
// Flag values shared by `submit` (a new job) and `update` (changing one),
// so both read them the same way.
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/model/job.hpp"

namespace jobctl::cli {

// The arguments after `--`: one is a shell command line (run by sh -c, as
// ssh does), several an argv executed directly.
model::Command command_from_args(const std::vector<std::string>& args);

// --env NAME=VALUE values. Throws usage Error for one without a name or '='.
std::map<std::string, std::string> env_from_flags(const std::vector<std::string>& assignments);

// The fleet flags of submit and update: --concurrency-key and --tenant
// (and, for submit, --on-each and --stagger). Returns their names.
struct FleetFlags {
  std::string concurrency_key, tenant, on_each, stagger;
};
std::vector<std::string> add_fleet_flags(CLI::App& cmd, FleetFlags& f, bool fan_out);

// The webhook and notification flags of submit: --webhook, --method,
// --header, --data, --insecure, --sign-secret, --notify, --notify-on.
struct WebhookFlags {
  std::string url, method = model::Webhook{}.method, data, sign_secret, notify_on;
  std::vector<std::string> headers, notify;
  bool insecure = false;
};
std::vector<std::string> add_webhook_flags(CLI::App& cmd, WebhookFlags& f);
// Sets spec.command.webhook (when --webhook was given) and spec.notify
// from the flags (--data @FILE reads the file). Throws usage Error.
void apply_webhook_flags(const WebhookFlags& f, model::JobSpec& spec);

}  // namespace jobctl::cli
