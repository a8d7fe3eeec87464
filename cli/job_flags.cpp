#include "cli/job_flags.hpp"

#include <fmt/format.h>

#include "cli/read_input.hpp"
#include "common/util/error.hpp"

namespace jobctl::cli {

model::Command command_from_args(const std::vector<std::string>& args) {
  model::Command c;
  c.via_shell = args.size() == 1;
  c.argv = args;
  return c;
}

std::map<std::string, std::string> env_from_flags(const std::vector<std::string>& assignments) {
  std::map<std::string, std::string> env;
  for (const auto& kv : assignments) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw usage_error(fmt::format("invalid --env '{}'", kv), "write it as --env NAME=VALUE");
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::vector<std::string> add_fleet_flags(CLI::App& cmd, FleetFlags& f, bool fan_out) {
  cmd.add_option("--concurrency-key", f.concurrency_key,
                 "Share a concurrency group with every job naming this key: at most --max-concurrent (default 1) "
                 "of them run at once, fleet-wide");
  cmd.add_option("--tenant", f.tenant, "Who the job is for: tenants of a queue are served in turn within a priority");
  if (!fan_out) return {"--concurrency-key", "--tenant"};
  cmd.add_option("--on-each", f.on_each,
                 "Run once on every live agent with all these labels (KEY=VALUE,…; '*': every agent), "
                 "each its own run");
  cmd.add_option("--stagger", f.stagger, "With --on-each: start each agent's run this long after the previous one");
  return {"--concurrency-key", "--tenant", "--on-each", "--stagger"};
}

std::vector<std::string> add_webhook_flags(CLI::App& cmd, WebhookFlags& f) {
  cmd.add_option("--webhook", f.url,
                 "Make an HTTP request instead of running a command: http:// or https:// URL "
                 "({{secret:NAME}} allowed)");
  cmd.add_option("--method", f.method, "With --webhook: the HTTP method")->capture_default_str();
  cmd.add_option("--header", f.headers,
                 "With --webhook: a request header 'Name: value' (repeatable; {{secret:NAME}} allowed in the value)");
  cmd.add_option("--data", f.data, "With --webhook: the request body ({{secret:NAME}} allowed); @FILE reads a file");
  cmd.add_flag("--insecure", f.insecure,
               "With --webhook: do NOT verify the server's TLS certificate (anyone on the path can read and alter "
               "the request)");
  cmd.add_option("--sign-secret", f.sign_secret,
                 "With --webhook: sign each request with HMAC-SHA256 under the secret of this NAME "
                 "(X-Job-Signature header)");
  cmd.add_option("--notify", f.notify,
                 "POST a JSON notification to this URL when a run succeeds, fails or dies (repeatable; see "
                 "--notify-on)");
  cmd.add_option("--notify-on", f.notify_on,
                 fmt::format("With --notify: which ends to report: success, failure, dead (default {})",
                             model::notify_on_text(model::Notify{}.on)));
  for (const char* name : {"--method", "--header", "--data", "--insecure", "--sign-secret"})
    cmd.get_option(name)->needs("--webhook");
  cmd.get_option("--notify-on")->needs("--notify");
  return {"--webhook", "--method", "--header", "--data", "--insecure", "--sign-secret", "--notify", "--notify-on"};
}

void apply_webhook_flags(const WebhookFlags& f, model::JobSpec& spec) {
  if (!f.url.empty()) {
    model::Webhook w;
    w.url = f.url;
    w.method = f.method;
    for (const auto& h : f.headers) w.headers.push_back(model::parse_header(h));
    if (!f.data.empty()) w.body = text_or_file(f.data, "--data");
    w.insecure = f.insecure;
    w.sign_secret = f.sign_secret;
    spec.command = model::Command{};
    spec.command.webhook = std::move(w);
  }
  spec.notify.urls = f.notify;
  if (!f.notify_on.empty()) spec.notify.on = model::parse_notify_on(f.notify_on);
}

}  // namespace jobctl::cli
