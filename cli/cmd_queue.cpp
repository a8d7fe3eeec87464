// jobctl queue: queues and their retry-policy defaults.
#include <cstdio>
#include <optional>

#include <fmt/format.h>

#include "cli/context.hpp"
#include "cli/output.hpp"
#include "cli/job_flags.hpp"
#include "common/ops/queues.hpp"
#include "common/model/job_json.hpp"
#include "common/store/queues.hpp"
#include "common/util/error.hpp"
#include "common/util/option_values.hpp"

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

std::string format_rate(double rate) {
  if (rate <= 0) return "-";
  if (rate >= 1) return fmt::format("{:g}/s", rate);
  if (rate * 60 >= 1) return fmt::format("{:g}/m", rate * 60);
  return fmt::format("{:g}/h", rate * 3600);
}

// A queue's limits as "max=2 rate=5/s tenant-max=1", "-" when it has none.
std::string describe_limits(const store::QueueInfo& q) {
  std::string out;
  if (q.max_concurrent > 0) out += fmt::format("max={}", q.max_concurrent);
  if (q.rate > 0) out += fmt::format("{}rate={}", out.empty() ? "" : " ", format_rate(q.rate));
  if (q.tenant_max_concurrent > 0) out += fmt::format("{}tenant-max={}", out.empty() ? "" : " ", q.tenant_max_concurrent);
  return out.empty() ? "-" : out;
}

void register_queue_set(CLI::App& queue, Context& ctx) {
  struct Flags {
    std::string name, rate;
    std::unique_ptr<JobFlags> retry;
    std::optional<int> max_concurrent, tenant_max_concurrent;
    bool clear = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = queue.add_subcommand("set", "Set a queue's limits, and its retry defaults for jobs submitted from now on");
  cmd->add_option("queue", f->name, "Queue name")->required();
  cmd->add_option("--max-concurrent", f->max_concurrent, "Runs of the queue at once, fleet-wide (0: no limit)")
      ->check(util::whole_number(0, 1000000));
  cmd->add_option("--rate", f->rate, "Runs started at most this often: N/s, N/m or N/h (0: no limit)");
  cmd->add_option("--tenant-max-concurrent", f->tenant_max_concurrent,
                  "Runs of any one tenant in the queue at once (0: no limit)")
      ->check(util::whole_number(0, 1000000));
  f->retry = std::make_unique<JobFlags>(*cmd, jobdef::kQueueSet);
  cmd->add_flag("--clear", f->clear, "Reset every retry default first (then apply the flags given)");
  cmd->callback([f, &ctx] {
    jobdef::Draft retry;
    f->retry->apply_to(retry);
    const auto& given = retry.spec.retry_given;
    ops::QueueSettings settings{given, {f->max_concurrent, std::nullopt, f->tenant_max_concurrent}, f->clear};
    if (!f->rate.empty()) settings.limits.rate = ops::parse_rate(f->rate);
    if (given.empty() && !f->clear && settings.limits.empty())
      throw usage_error("nothing to set", "give at least one flag, e.g. jobctl queue set reports --retries 5");
    auto q = ops::set_queue(ctx.store(), f->name, settings);
    if (ctx.output == "json") print_json(q);
    else std::fprintf(stderr, "queue %s: updated\n", f->name.c_str());
  });
}

void register_queue_ls(CLI::App& queue, Context& ctx) {
  auto* cmd = queue.add_subcommand("ls", "List queues: runs pending, running, dead, limits and retry defaults");
  cmd->callback([&ctx] {
    if (ctx.format() == OutputFormat::json) {
      print_json(ops::queues_json(ctx.store()));
      return;
    }
    auto queues = ctx.store().queues().list_queues();
    std::vector<TableRow> rows;
    for (const auto& q : queues)
      rows.push_back({q.name, std::to_string(q.pending), std::to_string(q.running), std::to_string(q.dead),
                      q.paused ? "paused" : "", describe_limits(q), describe(q.defaults)});
    print_table({"QUEUE", "PENDING", "RUNNING", "DEAD", "STATE", "LIMITS", "RETRY DEFAULTS"}, rows);
  });
}

void register_queue_pause(CLI::App& queue, Context& ctx, bool pause) {
  auto name = std::make_shared<std::string>();
  auto* cmd = pause ? queue.add_subcommand("pause", "Pause a queue: no agent claims its runs until it is resumed")
                    : queue.add_subcommand("resume", "Resume a paused queue");
  cmd->add_option("queue", *name, "Queue name")->required();
  cmd->callback([name, pause, &ctx] {
    auto j = ops::pause_queue(ctx.store(), *name, pause);
    if (ctx.output == "json") print_json(j);
    else std::fprintf(stderr, "queue %s %s%s\n", name->c_str(), j["changed"] ? "" : "was already ",
                      j["result"].get<std::string>().c_str());
  });
}

}  // namespace

void register_queue(CLI::App& app, Context& ctx) {
  auto* queue = app.add_subcommand("queue", "Queues: limits, retry defaults, pause and resume");
  queue->require_subcommand(1);
  register_queue_set(*queue, ctx);
  register_queue_ls(*queue, ctx);
  register_queue_pause(*queue, ctx, true);
  register_queue_pause(*queue, ctx, false);
}

}  // namespace jobctl::cli
