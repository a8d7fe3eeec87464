// jobctl serve: the HTTP API (server/) over this command's store, run by
// jobctl-serve (cli/serve_start.hpp).
#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/serve_start.hpp"
#include "common/config/dsn.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/log.hpp"
#include "common/util/option_values.hpp"

namespace jobctl::cli {

void register_serve(CLI::App& app, Context& ctx) {
  struct Flags {
    server::ServeOptions options;
    std::string tls_cert, tls_key, timeout = "30s", keep_alive = "5s", log_format = "text";
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("serve", "Serve the HTTP API under /api/v1 over this store, until SIGTERM");
  cmd->add_option("--listen", f->options.listen, "HOST:PORT to listen on ([::1]:PORT for IPv6; port 0: any free one)")
      ->capture_default_str();
  completes(cmd->add_option("--tokens-file", f->options.tokens_file,
                            "NAME ROLE TOKEN lines, mode 600; ROLE is read, submit, operate or admin"),
            Completes::file)
      ->required();
  completes(cmd->add_option("--tls-cert", f->tls_cert, "Serve HTTPS with this PEM certificate (chain)"), Completes::file);
  completes(cmd->add_option("--tls-key", f->tls_key, "The PEM private key of --tls-cert"), Completes::file);
  cmd->add_option("--max-body", f->options.max_body, "Largest request body, in bytes")
      ->capture_default_str()
      ->check(util::whole_number(size_t{1024}, size_t{1} << 30));
  cmd->add_option("--timeout", f->timeout, "How long a request may take to arrive whole (a slower client is cut off), and each write of an answer may wait")
      ->capture_default_str();
  cmd->add_option("--keep-alive", f->keep_alive,
                  "How long an idle connection is kept open for its next request (longer than a load balancer's idle "
                  "timeout in front of it)")
      ->capture_default_str();
  cmd->add_option("--threads", f->options.threads, "Requests served at once (each thread has its own store connection)")
      ->capture_default_str()
      ->check(util::whole_number(1, 256));
  cmd->add_flag("--metrics-token", f->options.metrics_need_token,
               "GET /metrics asks for a token too (of any role); without this flag it is open");
  cmd->add_option("--log-format", f->log_format, "Access and event log format, on stderr")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->footer("Tokens: each line of --tokens-file is NAME ROLE TOKEN; a request sends Authorization: Bearer TOKEN,\n"
              "and what it changes is recorded as done by NAME. The routes: GET /api/v1/openapi.json.\n"
              "The console: open /ui/?token=TOKEN once. Store-wide Prometheus metrics: GET /metrics.");
  cmd->callback([f, &ctx] {
    auto timeout = util::parse_duration(f->timeout, "--timeout");
    if (timeout < std::chrono::seconds(1)) throw usage_error("--timeout must be at least 1s");
    f->options.timeout_s = static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(timeout).count());
    auto keep_alive = util::parse_duration(f->keep_alive, "--keep-alive");
    if (keep_alive < std::chrono::seconds(1) || keep_alive > std::chrono::hours(1))
      throw usage_error("--keep-alive must be 1s to 1h", "5s is the default; a load balancer in front wants more than its idle timeout");
    f->options.keep_alive_s = static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(keep_alive).count());
    if (!f->tls_cert.empty()) f->options.tls_cert = f->tls_cert;
    if (!f->tls_key.empty()) f->options.tls_key = f->tls_key;
    util::setup_logging(f->log_format == "json" ? util::LogFormat::json : util::LogFormat::text, util::LogLevel::info);
    start_server(ctx.argv, config::resolve_dsn(ctx.db), f->options);
  });
}

}  // namespace jobctl::cli
