// The table of jobctl's command groups and the one place errors are caught.
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/standard_streams.hpp"
#include "common/config/dsn.hpp"
#include "common/util/error.hpp"
#include "common/model/names.hpp"
#include "common/util/host.hpp"
#include "common/util/option_values.hpp"
#include "common/util/strings.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::cli {
namespace {

// Each group with the commands it adds (unit test "commands: each group
// adds the commands the table names" keeps the two in step): a line that
// names one of them builds only its group.
struct Group {
  Registrar registrar;
  std::array<std::string_view, 5> commands;
};
constexpr std::array<Group, 18> kCommandGroups{{
    {register_init, {"init", "grant"}},
    {register_submit, {"submit"}},
    {register_run, {"run"}},
    {register_inspect, {"get", "ls", "runs", "logs"}},
    {register_control, {"cancel", "wait", "retry", "pause", "resume"}},
    {register_schedule, {"cron", "schedules", "schedule"}},
    {register_dag, {"dag"}},
    {register_lifecycle, {"update", "delete", "restore", "history"}},
    {register_dlq, {"dlq"}},
    {register_queue, {"queue"}},
    {register_workers, {"workers"}},
    {register_health, {"stats", "check", "doctor"}},
    {register_top, {"top"}},
    {register_gc, {"gc"}},
    {register_progress, {"progress"}},
    {register_serve, {"serve"}},
    {register_crontab, {"crontab"}},
    // __complete answers for any command: it names none, so it builds all.
    {register_complete, {}},
}};

// A global option given with its value in one word (--db=PATH, -ojson).
bool global_with_value(std::string_view arg) {
  return arg.rfind("--db=", 0) == 0 || arg.rfind("--output=", 0) == 0 || arg.rfind("--actor=", 0) == 0 ||
         (arg.rfind("-o", 0) == 0 && arg.size() > 2 && arg[2] != '-');
}

// A global option whose value is the next word.
bool global_before_value(std::string_view arg) {
  return arg == "--db" || arg == "-o" || arg == "--output" || arg == "--actor";
}

// The group whose command `args` names after nothing but global options,
// or null: then every group is built (--help lists them, an unknown
// command is matched against them). `only_version`: nothing but --version
// and global options.
const Group* named_group(const std::vector<std::string>& args, bool& only_version) {
  only_version = false;
  bool version = false, other = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--version") {
      version = true;
    } else if (global_before_value(a)) {
      ++i;
    } else if (global_with_value(a)) {
    } else if (a.rfind('-', 0) == 0) {
      other = true;  // --help, or a mistake: the whole tree answers it
    } else {
      // An empty word is no command (the table's rows are padded with empty names).
      if (version || other || a.empty()) return nullptr;
      for (const Group& g : kCommandGroups)
        if (std::find(g.commands.begin(), g.commands.end(), a) != g.commands.end()) return &g;
      return nullptr;
    }
  }
  only_version = version && !other;
  return nullptr;
}

constexpr const char* kFooter = R"(Exit codes:
  0  success                    1  the job failed, died or was cancelled (wait, submit --wait);
                                   a threshold is breached (check); a finding is not ok (doctor)
  2  usage error or bad value   3  no such job or run
  4  the job is in the wrong state for this command
  5  store unreachable or silent past $JOBCTL_STORE_TIMEOUT (30s), or its schema missing, too old or too new
  6  the job changed since you read it (update --if-version)
  70 internal error (a bug)     124  wait --timeout elapsed
jobctl run exits with the job's own status instead (124 its timeout, 128+N its signal).
See jobctl(1) for every command, the batch format and the JSON output shape.)";

void add_global_options(CLI::App& app, Context& ctx) {
  completes(app.add_option("--db", ctx.db,
                           "Store DSN: postgres://…, key=value, sqlite:PATH or PATH (default: $JOBCTL_DB, else "
                           "~/.local/share/jobctl/jobs.db)"),
            Completes::dsn);
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

// The deepest command the parse reached (`jobctl dlq ls` → ls).
const CLI::App& reached(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) return reached(*sub);
  return app;
}

// "jobctl dlq": the words a user types to reach `app`.
std::string command_path(const CLI::App& app) {
  return app.get_parent() ? command_path(*app.get_parent()) + " " + app.get_name() : app.get_name();
}

// A CLI11 parse error in the project's words: an unknown command with the
// one meant, a group given no command with its commands, anything else
// with where its options are listed.
Error usage_error_of(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App& at = reached(app);
  const std::string path = command_path(at);
  std::vector<std::string> commands;
  for (const CLI::App* sub : at.get_subcommands({}))
    if (!sub->get_group().empty()) commands.push_back(sub->get_name());
  if (!commands.empty() && at.get_subcommands().empty()) {
    const auto rest = at.remaining();
    if (rest.empty() || rest.front().rfind('-', 0) == 0)  // a group's few commands are worth listing
      return usage_error(commands.size() <= 12 ? fmt::format("`{}` needs a command: {}", path, model::join_or(commands))
                                               : fmt::format("`{}` needs a command", path),
                         fmt::format("`{} --help` says what each does", path));
    const std::string meant = util::closest(rest.front(), commands);
    return usage_error(fmt::format("unknown command '{}'{}", rest.front(),
                                   meant.empty() ? "" : fmt::format("; did you mean '{}'?", meant)),
                       fmt::format("`{} --help` lists the commands", path));
  }
  std::string message = e.what();
  std::replace(message.begin(), message.end(), '\n', ' ');
  return usage_error(message, fmt::format("`{} --help` lists its options", path));
}

// Prints an error as one line and a hint; returns its exit code.
int report(const Error& e) {
  std::fprintf(stderr, "jobctl: error: %s\n", util::one_line(e.what()).c_str());
  if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", util::one_line(e.hint()).c_str());
  return static_cast<int>(e.code());
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

std::unique_ptr<CLI::App> build_app(Context& ctx, Groups groups) {
  auto app = std::make_unique<CLI::App>("jobctl: submit, inspect and control jobs run by jobagent.", "jobctl");
  app->set_version_flag("--version", std::string("jobctl ") + JOBCTL_VERSION);
  app->footer(kFooter);
  app->require_subcommand(1);
  add_global_options(*app, ctx);
  // A script calls jobctl in a loop: building the commands it does not
  // name is most of what jobctl's own code costs at start.
  bool only_version = false;
  const Group* named = groups == Groups::named ? named_group(ctx.argv, only_version) : nullptr;
  if (named) named->registrar(*app, ctx);
  else if (!only_version)
    for (const Group& g : kCommandGroups) g.registrar(*app, ctx);
  // Global flags are accepted after any subcommand too (`jobctl dlq ls -o json`).
  add_global_options_below(*app, ctx);
  util::check_option_values(*app);
  return app;
}

int run(int argc, char** argv) {
  guard_standard_streams();
  Context ctx;
  ctx.argv.assign(argv, argv + argc);
  // Parsed from a copy: the arguments themselves are for ps to show, the
  // password of --db's DSN taken out (a long jobctl serve, a wait in CI).
  std::vector<char*> arg_pointers;
  for (auto& a : ctx.argv) arg_pointers.push_back(a.data());
  config::hide_dsn_passwords(argc, argv);
  auto app = build_app(ctx, Groups::named);
  try {
    util::require_utf8_arguments(argc, arg_pointers.data(), "--db");  // what a command is given may be stored
    app->parse(argc, arg_pointers.data());
    return with_output_checked(ctx.exit_code);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return with_output_checked(app->exit(e));  // --help, --version
    return report(usage_error_of(*app, e));
  } catch (const Error& e) {
    return with_output_checked(report(e));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jobctl: internal error: %s\n", e.what());
    return static_cast<int>(ExitCode::internal);
  }
}

}  // namespace jobctl::cli
