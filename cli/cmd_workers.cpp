// jobctl workers: the agents registered in the store.
#include "cli/context.hpp"
#include "cli/health_tables.hpp"
#include "cli/output.hpp"
#include "common/model/job_json.hpp"
#include "common/store/admin.hpp"
#include "common/util/time.hpp"

namespace jobctl::cli {

void register_workers(CLI::App& app, Context& ctx) {
  auto all = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("workers", "List agents: name, host, queues, slots, heartbeat, state, scheduler leader");
  cmd->add_flag("--all", *all, "Include agents that are gone");
  cmd->callback([all, &ctx] {
    auto workers = ctx.store().admin().list_workers();
    std::erase_if(workers, [&](const model::Worker& w) { return !*all && w.state == model::WorkerState::gone; });
    if (ctx.format() == OutputFormat::json) {
      print_json_list(workers, [](const model::Worker& w) { return model::to_json(w); });
      return;
    }
    print_workers_table(workers);
  });
}

void print_workers_table(const std::vector<model::Worker>& workers) {
  int64_t now = util::now_micros();
  std::vector<TableRow> rows;
  for (const auto& w : workers) {
    std::string queues;
    for (const auto& q : w.queues) queues += (queues.empty() ? "" : ",") + q;
    rows.push_back({w.name, w.host, std::to_string(w.pid), queues,
                    std::to_string(w.running) + "/" + std::to_string(w.capacity),
                    util::format_age(w.heartbeat_at, now), std::string(model::to_string(w.state)),
                    w.leader ? "leader" : "", w.version, cell(model::labels_display(w.labels), 60)});
  }
  print_table({"NAME", "HOST", "PID", "QUEUES", "SLOTS", "HEARTBEAT", "STATE", "SCHEDULER", "VERSION", "LABELS"}, rows);
}

}  // namespace jobctl::cli
