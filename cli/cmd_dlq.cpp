// jobctl dlq: browse, replay, dismiss and purge the dead-letter queue.
#include <cstdio>

#include <fmt/format.h>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/output.hpp"
#include "common/ops/dead_letter.hpp"
#include "common/ops/ids.hpp"
#include "common/model/job_json.hpp"
#include "common/store/dead_letter.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "common/util/option_values.hpp"
#include "common/util/strings.hpp"
#include "common/util/time.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::cli {
namespace {

struct FilterFlags {
  std::string queue, since, until;
  int limit = 100;
};

void add_filter_flags(CLI::App* cmd, FilterFlags& f) {
  cmd->add_option("--queue", f.queue, "Only runs of this queue");
  cmd->add_option("--since", f.since, "Only runs that died at or after this time (RFC 3339, or a duration ago: 2h)");
  cmd->add_option("--until", f.until, "Only runs that died before this time (RFC 3339, or a duration ago)");
}

store::DeadFilter to_filter(const FilterFlags& f) { return ops::dead_filter(f.queue, f.since, f.until, f.limit); }

void register_dlq_ls(CLI::App& dlq, Context& ctx) {
  auto f = std::make_shared<FilterFlags>();
  auto* cmd = dlq.add_subcommand("ls", "List dead runs, newest first");
  add_filter_flags(cmd, *f);
  cmd->add_option("--limit", f->limit, "At most this many")->check(util::whole_number(1, 100000))->capture_default_str();
  cmd->callback([f, &ctx] {
    if (ctx.format() == OutputFormat::json) {
      print_json(ops::dead_runs_json(ctx.store(), to_filter(*f)));
      return;
    }
    auto dead = ctx.store().dead_letter().dead_runs(to_filter(*f));
    std::vector<TableRow> rows;
    int64_t now = util::now_micros();
    for (const auto& v : dead) {
      const auto& r = *v.latest_run;
      // The queue it died in, which --queue matches (the job may have moved since).
      rows.push_back({v.job.id, r.id, cell(v.job.spec.name, 20), r.queue,
                      util::format_age(r.finished_at.value_or(r.created_at), now), std::to_string(r.attempts),
                      cell(r.error, 60)});
    }
    print_table({"JOB", "RUN", "NAME", "QUEUE", "DIED", "ATTEMPTS", "REASON"}, rows);
  });
}

// How many of an attempt's last output lines `dlq show` prints.
constexpr size_t kTailLines = 20;

// The last lines of an attempt's output, each kept to its line
// (util::one_line): what a dead run printed last is most often why it
// died. The tail flattened to one line showed its start, and its escape
// sequences reached the terminal (a tester).
void print_tail(const char* stream, const std::string& tail) {
  if (tail.empty()) return;
  auto lines = util::split(tail, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  const size_t from = lines.size() > kTailLines ? lines.size() - kTailLines : 0;
  const size_t shown = lines.size() - from;
  std::printf("--- %s (last %zu %s)\n", stream, shown, shown == 1 ? "line" : "lines");
  for (size_t i = from; i < lines.size(); ++i) std::printf("%s\n", cell(util::one_line(lines[i]), 2000).c_str());
}

void register_dlq_show(CLI::App& dlq, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* cmd = dlq.add_subcommand("show", "Show a dead run: reason, payload, every attempt with its output");
  completes(cmd->add_option("id", *id, "Run id (or job id)"), Completes::job_id)->required();
  cmd->callback([id, &ctx] {
    if (ctx.format() == OutputFormat::json) {
      print_json(ops::dead_run_json(ctx.store(), *id));
      return;
    }
    auto r = ops::resolve_id(ctx.store(), *id);
    if (!r.run || r.run->status != model::RunStatus::dead)
      throw Error(ExitCode::invalid_state, fmt::format("{} is not a dead run", *id), "list them with `jobctl dlq ls`");
    auto attempts = ctx.store().jobs().attempts(r.run->id);
    print_fields({{"job", r.job.job.id},
                  {"run", r.run->id},
                  {"name", r.job.job.spec.name.empty() ? "-" : r.job.job.spec.name},
                  {"command", r.job.job.spec.command.display()},
                  {"queue", r.job.job.spec.queue},
                  {"died", time_or_dash(r.run->finished_at)},
                  {"reason", r.run->error},
                  {"payload", r.job.job.spec.payload.value_or("-")},
                  {"replayed", r.run->replayed_at ? util::format_time(*r.run->replayed_at) : "no"},
                  {"dismissed", r.run->dismissed_at ? util::format_time(*r.run->dismissed_at) : "no"}});
    for (const auto& a : attempts) {
      std::printf("\nattempt %d on %s at %s: %s%s\n", a.number, (a.worker_name.empty() ? a.worker_id : a.worker_name).c_str(),
                  util::format_time(a.started_at).c_str(), a.outcome.c_str(),
                  a.error.empty() ? "" : (" — " + util::one_line(a.error)).c_str());
      print_tail("stdout", a.stdout_tail);
      print_tail("stderr", a.stderr_tail);
    }
  });
}

// `dlq replay` and `dlq dismiss`: the runs named, or --all that the
// filters cover.
struct BulkAction {
  const char* name;    // "replay"
  const char* title;   // "Replay": the name beginning a sentence
  const char* done;    // "replayed": the JSON's count and the summary's verb
  const char* help;
  nlohmann::json (*named)(store::Store&, const std::vector<std::string>&);
  nlohmann::json (*all)(store::Store&, const store::DeadFilter&);
};

void register_bulk(CLI::App& dlq, Context& ctx, const BulkAction& action) {
  struct Flags {
    std::vector<std::string> ids;
    bool all = false;
    FilterFlags filter;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = dlq.add_subcommand(action.name, action.help);
  completes(cmd->add_option("ids", f->ids, fmt::format("Run ids (or job ids) to {}", action.name)), Completes::job_id);
  auto* all = cmd->add_flag("--all", f->all,
                            fmt::format("{} every dead run the filters cover, in one transaction", action.title));
  add_filter_flags(cmd, f->filter);
  all->excludes(cmd->get_option("ids"));
  for (const char* name : {"--queue", "--since", "--until"}) cmd->get_option(name)->needs(all);
  cmd->callback([f, &ctx, action] {
    if (f->all) {
      auto j = action.all(ctx.store(), to_filter(f->filter));
      int n = j[action.done];
      if (ctx.output == "json") print_json(j);
      else std::printf("%s %d dead run%s\n", action.done, n, n == 1 ? "" : "s");
      return;
    }
    if (f->ids.empty())
      throw usage_error(fmt::format("name the runs to {}, or pass --all", action.name),
                        fmt::format("e.g. jobctl dlq {} RUN_ID", action.name));
    auto j = action.named(ctx.store(), f->ids);
    if (ctx.output == "json") {
      print_json(j);
      return;
    }
    for (const auto& id : j["runs"]) std::printf("%s\n", id.get<std::string>().c_str());
    size_t n = j["runs"].size();
    std::fprintf(stderr, "%s %zu dead run%s\n", action.done, n, n == 1 ? "" : "s");
  });
}

void register_purge(CLI::App& dlq, Context& ctx) {
  auto older = std::make_shared<std::string>();
  auto* cmd = dlq.add_subcommand(
      "purge", "Delete dead runs (and their attempts) older than a duration; a one-off job left with no run goes too");
  cmd->add_option("--older-than", *older, "Age, e.g. 7d")->required();
  cmd->callback([older, &ctx] {
    auto j = ops::purge_json(ctx.store(), *older, "--older-than");
    int n = j["purged"];
    if (ctx.output == "json") print_json(j);
    else std::printf("purged %d dead run%s\n", n, n == 1 ? "" : "s");
  });
}

}  // namespace

void register_dlq(CLI::App& app, Context& ctx) {
  auto* dlq = app.add_subcommand("dlq", "The dead-letter queue: runs that failed for good");
  dlq->require_subcommand(1);
  register_dlq_ls(*dlq, ctx);
  register_dlq_show(*dlq, ctx);
  register_bulk(*dlq, ctx,
                {"replay", "Replay", "replayed",
                 "Run dead runs again with a fresh retry budget: ID... or --all [filters]", ops::replay_json,
                 ops::replay_all_json});
  register_bulk(*dlq, ctx,
                {"dismiss", "Dismiss", "dismissed",
                 "Take dead runs out of the queue without running them again (they stay in history): ID... or --all "
                 "[filters]",
                 ops::dismiss_json, ops::dismiss_all_json});
  register_purge(*dlq, ctx);
}

}  // namespace jobctl::cli
