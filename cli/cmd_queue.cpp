// jobctl queue: queues and their retry-policy defaults.
#include <cstdio>

#include "cli/context.hpp"
#include "cli/output.hpp"
#include "cli/retry_flags.hpp"
#include "common/model/job_json.hpp"
#include "common/util/error.hpp"

namespace jobctl::cli {
namespace {

// The defaults a queue sets, "-" for those it leaves to the built-ins.
std::string describe(const model::RetryOverrides& o) {
  if (o.empty()) return "-";
  auto p = o.resolve();
  auto j = model::to_json(p);
  std::string out;
  auto add = [&](bool set, const char* key) {
    if (!set) return;
    if (!out.empty()) out += " ";
    out += std::string(key) + "=" + (j[key].is_string() ? j[key].get<std::string>() : j[key].dump());
  };
  add(o.max_retries.has_value(), "retries");
  add(o.backoff.has_value(), "backoff");
  add(o.delay_us.has_value(), "retry_delay");
  add(o.max_delay_us.has_value(), "max_retry_delay");
  add(o.retry_for_us.has_value(), "retry_for");
  add(o.no_retry_exit_codes.has_value(), "no_retry_exit_codes");
  add(o.max_deliveries.has_value(), "max_deliveries");
  add(o.delivery.has_value(), "delivery");
  return out;
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
      nlohmann::json out = nlohmann::json::array();
      for (const auto& q : queues) {
        nlohmann::json defaults = nlohmann::json::object();
        auto full = model::to_json(q.defaults.resolve());
        const auto& o = q.defaults;
        for (auto [set, key] : {std::pair{o.max_retries.has_value(), "retries"}, {o.backoff.has_value(), "backoff"},
                                {o.delay_us.has_value(), "retry_delay"}, {o.max_delay_us.has_value(), "max_retry_delay"},
                                {o.retry_for_us.has_value(), "retry_for"},
                                {o.no_retry_exit_codes.has_value(), "no_retry_exit_codes"},
                                {o.max_deliveries.has_value(), "max_deliveries"}, {o.delivery.has_value(), "delivery"}})
          if (set) defaults[key] = full[key];
        out.push_back({{"name", q.name}, {"pending", q.pending}, {"running", q.running}, {"dead", q.dead},
                       {"defaults", defaults}});
      }
      print_json(out);
      return;
    }
    std::vector<TableRow> rows;
    for (const auto& q : queues)
      rows.push_back({q.name, std::to_string(q.pending), std::to_string(q.running), std::to_string(q.dead),
                      describe(q.defaults)});
    print_table({"QUEUE", "PENDING", "RUNNING", "DEAD", "RETRY DEFAULTS"}, rows);
  });
}

}  // namespace

void register_queue(CLI::App& app, Context& ctx) {
  auto* queue = app.add_subcommand("queue", "Queues and their retry defaults");
  queue->require_subcommand(1);
  register_set(*queue, ctx);
  register_ls(*queue, ctx);
}

}  // namespace jobctl::cli
