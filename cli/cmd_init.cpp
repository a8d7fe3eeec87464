// jobctl init: create or upgrade the schema.
#include <cstdio>

#include "cli/context.hpp"
#include "cli/output.hpp"
#include "common/store/admin.hpp"
#include "common/store/migrations.hpp"

namespace jobctl::cli {

void register_init(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("init", "Create or upgrade the store's schema (idempotent)");
  cmd->callback([&ctx] {
    auto& s = ctx.store(Context::Schema::create);
    int applied = s.admin().migrate();
    int version = s.admin().schema_version();
    if (ctx.format() == OutputFormat::json) {
      print_json({{"schema_version", version}, {"applied", applied}});
      return;
    }
    if (applied == 0) std::printf("schema is up to date (version %d)\n", version);
    else std::printf("schema upgraded to version %d (%d migration%s applied)\n", version, applied, applied == 1 ? "" : "s");
  });
}

}  // namespace jobctl::cli
