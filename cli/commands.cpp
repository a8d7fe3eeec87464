// The table of jobctl's command groups and the one place errors are caught.
#include <pwd.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "cli/context.hpp"
#include "common/util/error.hpp"
#include "common/util/host.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::cli {
namespace {

constexpr std::array<Registrar, 15> kCommandGroups{
    register_init,   register_submit,    register_inspect,  register_control, register_schedule,
    register_dag,    register_lifecycle, register_dlq,      register_queue,   register_workers,
    register_health, register_top,       register_gc,       register_progress, register_complete,
};

constexpr const char* kFooter = R"(Exit codes:
  0  success                    1  the job failed, died or was cancelled (wait, submit --wait);
                                   a threshold is breached (check); a finding is not ok (doctor)
  2  usage error or bad value   3  no such job or run
  4  the job is in the wrong state for this command
  5  store unreachable or silent past $JOBCTL_STORE_TIMEOUT (30s), or its schema missing, too old or too new
  6  the job changed since you read it (update --if-version)
  70 internal error (a bug)     124  wait --timeout elapsed
See jobctl(1) for every command, the batch format and the JSON output shape.)";

void add_global_options(CLI::App& app, Context& ctx) {
  app.add_option("--db", ctx.db,
                 "Store DSN: postgres://…, key=value, sqlite:PATH or PATH (default: $JOBCTL_DB, else "
                 "~/.local/share/jobctl/jobs.db)");
  app.add_option("-o,--output", ctx.output, "Output format: table, json, or auto (table on a terminal, else json)")
      ->check(CLI::IsMember({"auto", "table", "json"}))
      ->capture_default_str();
  app.add_option("--actor", ctx.actor,
                 "Who changes are recorded as in the audit trail (default: $JOBCTL_ACTOR, else user@host)");
}

// --actor, else JOBCTL_ACTOR, else the OS user and host running jobctl.
std::string actor_of(const Context& ctx) {
  if (ctx.actor && !ctx.actor->empty()) return *ctx.actor;
  if (const char* env = std::getenv("JOBCTL_ACTOR"); env && *env) {
    if (!util::is_utf8(env))
      throw usage_error(fmt::format("JOBCTL_ACTOR '{}' is not valid UTF-8", util::show_bytes(env)),
                        "set it to a UTF-8 name, or pass --actor");
    return env;
  }
  std::string user = "uid " + std::to_string(geteuid());
  if (const passwd* pw = getpwuid(geteuid())) user = pw->pw_name;
  return user + "@" + util::host_name();
}

void add_global_options_below(CLI::App& app, Context& ctx) {
  for (CLI::App* sub : app.get_subcommands({})) {
    add_global_options(*sub, ctx);
    add_global_options_below(*sub, ctx);
  }
}

}  // namespace

store::Store& Context::store(Schema schema) {
  if (!store_) {
    const auto dsn = config::resolve_dsn(db);
    const bool may_create = schema == Schema::create || dsn.is_default;
    store_ = store::Store::open(dsn, may_create ? store::Create::yes : store::Create::no);
    store_->set_actor(actor_of(*this));
    if (schema == Schema::require) store_->require_schema();
  }
  return *store_;
}

OutputFormat Context::format() const {
  if (output == "json") return OutputFormat::json;
  if (output == "table") return OutputFormat::table;
  return isatty(STDOUT_FILENO) ? OutputFormat::table : OutputFormat::json;
}

std::unique_ptr<CLI::App> build_app(Context& ctx) {
  auto app = std::make_unique<CLI::App>("jobctl: submit, inspect and control jobs run by jobagent.", "jobctl");
  app->set_version_flag("--version", std::string("jobctl ") + JOBCTL_VERSION);
  app->footer(kFooter);
  app->require_subcommand(1);
  add_global_options(*app, ctx);
  for (Registrar r : kCommandGroups) r(*app, ctx);
  // Global flags are accepted after any subcommand too (`jobctl dlq ls -o json`).
  add_global_options_below(*app, ctx);
  return app;
}

int run(int argc, char** argv) {
  Context ctx;
  auto app = build_app(ctx);
  try {
    util::require_utf8_arguments(argc, argv, "--db");  // what a command is given may be stored
    app->parse(argc, argv);
    return ctx.exit_code;
  } catch (const CLI::ParseError& e) {
    int rc = app->exit(e);
    return rc == 0 ? 0 : static_cast<int>(ExitCode::usage);
  } catch (const Error& e) {
    std::fprintf(stderr, "jobctl: error: %s\n", e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jobctl: internal error: %s\n", e.what());
    return static_cast<int>(ExitCode::internal);
  }
}

}  // namespace jobctl::cli
