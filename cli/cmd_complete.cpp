// jobctl __complete: the word lists shell completions read, taken from the
// command table itself so completions cannot drift from the CLI.
//
//   jobctl __complete                 subcommands and global flags
//   jobctl __complete SUBCOMMAND      that subcommand's own subcommands and flags
//   jobctl __complete SUBCOMMAND --flag   the values the flag accepts (if a fixed set)
//   jobctl __complete ids             recent job ids from the store
//   jobctl __complete dag-runs        recent DAG run ids from the store
//
// SUBCOMMAND may be a path of nested ones (`dlq ls`). A `--` before the
// words lets the first one be a flag: `jobctl __complete -- -o` gives the
// values of the global -o.
#include <cstdio>
#include <filesystem>

#include "cli/context.hpp"
#include "common/config/dsn.hpp"
#include "common/store/dags.hpp"
#include "common/store/jobs.hpp"

namespace jobctl::cli {
namespace {

void print_flags(const CLI::App& app) {
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& n : o->get_lnames()) std::printf("--%s\n", n.c_str());
    for (const auto& n : o->get_snames()) std::printf("-%s\n", n.c_str());
  }
}

// The fixed values a flag accepts, from the IsMember check's description,
// which CLI11 renders as "{a,b,c}".
void print_values(const CLI::Option& o) {
  std::string desc = o.get_type_name();
  auto open = desc.find('{'), close = desc.find('}');
  if (open == std::string::npos || close == std::string::npos) return;
  std::string list = desc.substr(open + 1, close - open - 1);
  size_t start = 0;
  while (start < list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::printf("%s\n", list.substr(start, end - start).c_str());
    start = end + 1;
  }
}

// The visible subcommand of `app` called `name`, if any.
const CLI::App* visible_subcommand(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands({}))
    if (!sub->get_group().empty() && sub->get_name() == name) return sub;
  return nullptr;
}

// Recent job ids (`ids`) or DAG run ids (`dag-runs`) from the store.
void print_ids(Context& ctx, const std::string& what) {
  // A completion must not create a database: no SQLite file, no ids.
  auto dsn = config::resolve_dsn(ctx.db);
  if (dsn.backend == config::Backend::sqlite && !std::filesystem::exists(dsn.target)) return;
  if (what == "dag-runs") {
    for (const auto& v : ctx.store().dags().list_dag_runs(200)) std::printf("%s\n", v.id.c_str());
    return;
  }
  store::JobFilter filter;
  filter.limit = 200;
  for (const auto& v : ctx.store().jobs().list_jobs(filter)) std::printf("%s\n", v.job.id.c_str());
}

}  // namespace

void register_complete(CLI::App& app, Context& ctx) {
  auto words = std::make_shared<std::vector<std::string>>();
  auto* cmd = app.add_subcommand("__complete", "Print completion words (used by the shell completions)");
  cmd->group("");  // hidden from --help
  // Everything after the first word is a word too: `__complete submit
  // --priority` asks about --priority rather than passing it to CLI11.
  cmd->positionals_at_end();
  cmd->add_option("words", *words);
  CLI::App* root = &app;
  cmd->callback([words, root, &ctx] {
    if (!words->empty() && ((*words)[0] == "ids" || (*words)[0] == "dag-runs")) {
      print_ids(ctx, (*words)[0]);
      return;
    }
    // Follow the words down the tree of subcommands as far as they name one.
    const CLI::App* node = root;
    size_t used = 0;
    while (used < words->size()) {
      const CLI::App* sub = visible_subcommand(*node, (*words)[used]);
      if (!sub) break;
      node = sub;
      ++used;
    }
    if (used == words->size()) {
      for (const CLI::App* sub : node->get_subcommands({}))
        if (!sub->get_group().empty()) std::printf("%s\n", sub->get_name().c_str());
      print_flags(*node);
      return;
    }
    for (const CLI::Option* o : node->get_options())
      if (o->check_name((*words)[used])) print_values(*o);
  });
}

}  // namespace jobctl::cli
