// jobctl queue: queues and their retry-policy defaults.
#include <cstdio>

#include "cli/context.hpp"
#include "cli/output.hpp"
#include "cli/retry_flags.hpp"
#include "common/model/job_json.hpp"
#include "common/util/error.hpp"

namespace jobctl::cli {
namespace {

// The defaults a queue sets as "key=value …", "-" when it sets none.
std::string describe(const model::RetryOverrides& o) {
  const nlohmann::json set = model::to_json(o);
  std::string out;
  for (auto it = set.begin(); it != set.end(); ++it)
    out += (out.empty() ? "" : " ") + it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
  return out.empty() ? "-" : out;
}

void register_set(CLI::App& queue, Context& ctx) {
  struct Flags {
    std::string name;
    RetryFlags retry;
    bool clear = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = queue.add_subcommand("set", "Set a queue's retry defaults for jobs submitted from now on");
  cmd->add_option("queue", f->name, "Queue name")->required();
  add_retry_flags(*cmd, f->retry);
  cmd->add_flag("--clear", f->clear, "Reset every default first (then apply the flags given)");
  cmd->callback([f, &ctx] {
    auto given = to_overrides(f->retry);
    if (given.empty() && !f->clear)
      throw usage_error("nothing to set", "give at least one flag, e.g. jobctl queue set reports --retries 5");
    model::JobSpec probe;  // the queue name follows the job rules
    probe.queue = f->name;
    probe.command.argv = {"true"};
    model::validate(probe);
    ctx.store().set_queue_defaults(f->name, given,
                                   f->clear ? store::Store::Clear::yes : store::Store::Clear::no);
    std::fprintf(stderr, "queue %s: defaults updated\n", f->name.c_str());
  });
}

void register_ls(CLI::App& queue, Context& ctx) {
  auto* cmd = queue.add_subcommand("ls", "List queues: runs pending, running, dead, and retry defaults");
  cmd->callback([&ctx] {
    auto queues = ctx.store().list_queues();
    if (ctx.format() == OutputFormat::json) {
      print_json_list(queues, [](const store::QueueInfo& q) {
        return nlohmann::json{{"name", q.name},         {"pending", q.pending}, {"running", q.running},
                              {"dead", q.dead},         {"paused", q.paused},   {"defaults", model::to_json(q.defaults)}};
      });
      return;
    }
    std::vector<TableRow> rows;
    for (const auto& q : queues)
      rows.push_back({q.name, std::to_string(q.pending), std::to_string(q.running), std::to_string(q.dead),
                      q.paused ? "paused" : "", describe(q.defaults)});
    print_table({"QUEUE", "PENDING", "RUNNING", "DEAD", "STATE", "RETRY DEFAULTS"}, rows);
  });
}

void register_pause(CLI::App& queue, Context& ctx, bool pause) {
  auto name = std::make_shared<std::string>();
  auto* cmd = pause ? queue.add_subcommand("pause", "Pause a queue: no agent claims its runs until it is resumed")
                    : queue.add_subcommand("resume", "Resume a paused queue");
  cmd->add_option("queue", *name, "Queue name")->required();
  cmd->callback([name, pause, &ctx] {
    bool changed = ctx.store().set_queue_paused(*name, pause);
    const char* state = pause ? "paused" : "resumed";
    if (ctx.output == "json") print_json({{"queue", *name}, {"result", state}, {"changed", changed}});
    else std::fprintf(stderr, "queue %s %s%s\n", name->c_str(), changed ? "" : "was already ", state);
  });
}

}  // namespace

void register_queue(CLI::App& app, Context& ctx) {
  auto* queue = app.add_subcommand("queue", "Queues: retry defaults, pause and resume");
  queue->require_subcommand(1);
  register_set(*queue, ctx);
  register_ls(*queue, ctx);
  register_pause(*queue, ctx, true);
  register_pause(*queue, ctx, false);
}

}  // namespace jobctl::cli
