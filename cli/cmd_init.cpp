// jobctl init and grant: the schema, and who may do what with it. Both are
// the schema owner's to run.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/output.hpp"
#include "common/store/admin.hpp"
#include "common/store/grants.hpp"
#include "common/store/migrations.hpp"

namespace jobctl::cli {
namespace {

void register_grant(CLI::App& app, Context& ctx) {
  struct Args {
    std::string kind, role;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "grant", "PostgreSQL: give ROLE exactly what a reader, submitter, operator or agent needs (none: nothing)");
  suggests(cmd->add_option("KIND", a->kind, "reader, submitter, operator, agent or none")->required(),
           {"reader", "submitter", "operator", "agent", "none"});
  cmd->add_option("ROLE", a->role, "An existing PostgreSQL role (CREATE ROLE … LOGIN first)")->required();
  cmd->callback([a, &ctx] {
    const auto kind = store::parse_grant_kind(a->kind);
    auto statements = store::grant(ctx.store().connection(), kind, a->role);
    if (ctx.format() == OutputFormat::json) {
      print_json({{"role", a->role}, {"kind", std::string(store::to_string(kind))}, {"statements", statements}});
      return;
    }
    for (const auto& s : statements) std::printf("%s;\n", s.c_str());
  });
}

}  // namespace

void register_init(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("init", "Create or upgrade the store's schema (idempotent)");
  cmd->callback([&ctx] {
    auto& s = ctx.store(Context::Schema::create);
    // A new SQLite file got its schema as it was opened; an empty schema
    // gets it here, unless a concurrent init made it first.
    const bool empty = s.admin().schema_version() == 0;
    const int migrated = s.admin().migrate();
    const bool created = s.created_with() > 0 || (empty && migrated > 0);
    int applied = s.created_with() + migrated;
    int version = s.admin().schema_version();
    if (ctx.format() == OutputFormat::json) {
      print_json({{"schema_version", version}, {"applied", applied}});
      return;
    }
    if (created) std::printf("schema created (version %d)\n", version);
    else if (applied == 0) std::printf("schema is up to date (version %d)\n", version);
    else std::printf("schema upgraded to version %d (%d migration%s applied)\n", version, applied, applied == 1 ? "" : "s");
  });
  register_grant(app, ctx);
}

}  // namespace jobctl::cli
