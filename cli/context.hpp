#pragma once
// What every jobctl command shares: the global flags, the store (opened on
// first use, so `--help` never touches a database), and output helpers.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/store/store.hpp"

namespace jobctl::cli {

enum class OutputFormat { table, json };

class Context {
 public:
  std::optional<std::string> db;  // --db; else JOBCTL_DB; else the default SQLite file
  std::string output = "auto";    // -o/--output: table, json, or auto (table on a terminal, else json)
  std::optional<std::string> actor;  // --actor; else JOBCTL_ACTOR; else user@host: who changes are recorded as

  // The store, with its schema checked (doctor: any; init: any, and the
  // store may be made here, as the default file may be by any command).
  enum class Schema { require, any, create };
  store::Store& store(Schema schema = Schema::require);
  // Closes the store's connection: the next store() opens a new one.
  void drop_store() { store_.reset(); }
  // Closes it when its SQLite file was deleted or replaced since it was
  // opened (an operator reset or restored the store): the next store()
  // opens the file the path names now (store::forget_if_replaced).
  void forget_if_replaced() { store::forget_if_replaced(store_); }
  // Whether a store is open: it answered (its schema was read).
  bool store_open() const { return store_ != nullptr; }
  OutputFormat format() const;
  // Set by a command whose outcome is not plain success (wait: 1 or 124).
  int exit_code = 0;
  std::vector<std::string> argv;  // the command line as given (jobctl serve hands it to jobctl-serve)

 private:
  std::unique_ptr<store::Store> store_;
};

// One command group: adds its subcommands to `app`, with callbacks that
// throw jobctl::Error on failure. The table of them is in commands.cpp.
using Registrar = void (*)(CLI::App& app, Context& ctx);

void register_init(CLI::App& app, Context& ctx);
void register_submit(CLI::App& app, Context& ctx);
void register_run(CLI::App& app, Context& ctx);
void register_crontab(CLI::App& app, Context& ctx);
void register_inspect(CLI::App& app, Context& ctx);   // get, ls, runs, logs
void register_control(CLI::App& app, Context& ctx);   // cancel, wait, retry, pause, resume
void register_workers(CLI::App& app, Context& ctx);
void register_health(CLI::App& app, Context& ctx);    // stats, check
void register_gc(CLI::App& app, Context& ctx);
void register_progress(CLI::App& app, Context& ctx);
void register_top(CLI::App& app, Context& ctx);
void register_dlq(CLI::App& app, Context& ctx);       // dlq ls, show, replay, dismiss, purge
void register_queue(CLI::App& app, Context& ctx);     // queue set, ls
void register_schedule(CLI::App& app, Context& ctx);  // cron next, schedules ls, schedule …
void register_lifecycle(CLI::App& app, Context& ctx); // update, delete, restore, history
void register_dag(CLI::App& app, Context& ctx);        // dag submit, status, ls, cancel, pause, resume, retry, graph
void register_serve(CLI::App& app, Context& ctx);     // serve: the HTTP API
void register_complete(CLI::App& app, Context& ctx);  // hidden: word lists for shell completions

// Builds the jobctl command line: every command (the tests that check the
// man page and completions against it), or only the group of the command
// ctx.argv names (run: every group when it names none, none for a bare
// --version).
enum class Groups { all, named };
std::unique_ptr<CLI::App> build_app(Context& ctx, Groups groups = Groups::all);

// Parses and runs; returns the process exit code. Prints errors as
// "jobctl: error: …" with an optional "hint: …" line.
int run(int argc, char** argv);

}  // namespace jobctl::cli
