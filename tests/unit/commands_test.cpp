// jobctl builds only the command group a line names: every command must be
// found in its group, so the line builds less than the whole tree and
// still has the command.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli/context.hpp"

using jobctl::cli::build_app;
using jobctl::cli::Context;
using jobctl::cli::Groups;

namespace {

std::vector<std::string> commands_of(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

size_t commands_for(const std::vector<std::string>& argv, const std::string& wanted, bool& found) {
  Context ctx;
  ctx.argv = argv;
  auto app = build_app(ctx, Groups::named);
  auto names = commands_of(*app);
  found = std::find(names.begin(), names.end(), wanted) != names.end();
  return names.size();
}

}  // namespace

TEST_CASE("commands: a line naming a command builds its group alone, and every command is in the table") {
  Context all_ctx;
  auto all = build_app(all_ctx);
  const auto every = commands_of(*all);
  REQUIRE(every.size() > 20);
  for (const auto& name : every) {
    if (name == "__complete") continue;  // it completes any command: the whole tree
    CAPTURE(name);
    bool found = false;
    CHECK(commands_for({"jobctl", name}, name, found) < every.size());
    CHECK(found);
    // After global options, in both their forms.
    CHECK(commands_for({"jobctl", "--db", "x.db", "-ojson", "--actor=me", name, "--help"}, name, found) < every.size());
    CHECK(found);
  }
  bool found = false;
  // --help before the command, an unknown command, no command: the whole tree.
  CHECK(commands_for({"jobctl", "--help", "ls"}, "ls", found) == every.size());
  CHECK(commands_for({"jobctl", "lss"}, "ls", found) == every.size());
  // An empty word names no command (the table's short rows are padded
  // with empty names: it built init's group, and the error offered only
  // init and grant).
  CHECK(commands_for({"jobctl", ""}, "ls", found) == every.size());
  CHECK(commands_for({"jobctl"}, "ls", found) == every.size());
  CHECK(commands_for({"jobctl", "__complete", "--", "l"}, "ls", found) == every.size());
  // --version alone needs no command.
  CHECK(commands_for({"jobctl", "--version"}, "ls", found) == 0);
}
