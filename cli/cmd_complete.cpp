// jobctl __complete: what Tab offers, for the shell completions
// (completions/jobctl.{bash,zsh,fish}), read from the command table
// (cli/complete.hpp) so that they cannot drift from the CLI.
//
//   jobctl __complete -- WORD... CURRENT
//
// The words are those after `jobctl` on the line, as the user typed them,
// CURRENT the one under the cursor (up to the cursor; "" for a new word).
// The answer's first line says how to complete, tab-separated:
//
//   words     PREFIX   the lines that follow, and nothing else
//   files     PREFIX   file names, and the lines that follow
//   dirs      PREFIX   directory names
//   command   N        a command line of its own, from word N (jobctl is word 0)
//
// PREFIX is the start of CURRENT that is not completed (`--db=`, `sqlite:`):
// what follows complete the rest. Every further line is a candidate, then a
// tab and its description (possibly empty). Job and DAG run ids come from the
// store a --db on the line names, else the usual one; a completion never
// creates a store, and waits for one at most JOBCTL_STORE_TIMEOUT, 2s unless
// set.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "common/config/dsn.hpp"
#include "common/ops/ids.hpp"
#include "common/store/dags.hpp"
#include "common/store/jobs.hpp"

namespace jobctl::cli {
namespace {

// A description on one line (the answer has one candidate a line), and
// short when it is a job's: the shells fit the rest to the screen.
std::string one_line(std::string text, size_t max = std::string::npos) {
  for (char& c : text)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  if (text.size() > max) text = text.substr(0, max - 3) + "...";
  return text;
}

// A job for the eye: its name, else its command, and its latest status.
std::string describe(const model::JobView& v) {
  std::string what = v.job.spec.name.empty() ? v.job.spec.command.display() : v.job.spec.name;
  if (v.latest_run) what += " (" + std::string(model::to_string(v.latest_run->status)) + ")";
  return one_line(what, 60);
}

// Job or DAG run ids from the store, with what they are: those that begin
// with what is typed, else the newest.
std::vector<Candidate> ids(Context& ctx, Offer::Ids which, const std::string& typed) {
  // The store is asked what it has; a mistyped path must not become one.
  auto dsn = config::resolve_dsn(ctx.db);
  if (dsn.backend == config::Backend::sqlite && !std::filesystem::exists(dsn.target)) return {};
  std::vector<Candidate> out;
  if (which == Offer::Ids::dag_runs) {
    for (const auto& v : ctx.store().dags().list_dag_runs(200))
      out.push_back({v.id, one_line(v.name.empty() ? v.status : v.name + " (" + v.status + ")", 60)});
    return out;
  }
  // Every job the typed word begins, of any age, when they are few (the
  // newest 200 alone left older ones out); else the newest 200 it begins.
  constexpr int kMost = 200;
  if (!typed.empty()) {
    auto found = ops::ids_to_complete(ctx.store(), typed, store::Jobs::IdKind::job, kMost);
    if (found.size() < static_cast<size_t>(kMost)) {
      for (const auto& v : ctx.store().jobs().get_jobs(found))
        if (v.job.kind != "node" && !v.job.deleted_at) out.push_back({v.job.id, describe(v)});  // as ls lists them
      return out;
    }
  }
  store::JobFilter filter;  // the shell keeps those that match the word
  filter.limit = kMost;
  for (const auto& v : ctx.store().jobs().list_jobs(filter)) out.push_back({v.job.id, describe(v)});
  return out;
}

// `~/x.db` as typed: the shell has not expanded it.
std::string expand_home(const std::string& path) {
  const char* home = std::getenv("HOME");
  if (path.rfind("~/", 0) != 0 || !home) return path;
  return home + path.substr(1);
}

void print(const Offer& offer) {
  switch (offer.kind) {
    case Offer::Kind::words: std::printf("words\t%s\n", offer.prefix.c_str()); break;
    case Offer::Kind::files: std::printf("files\t%s\n", offer.prefix.c_str()); break;
    case Offer::Kind::stores: std::printf("stores\t%s\n", offer.prefix.c_str()); break;
    case Offer::Kind::directories: std::printf("dirs\t%s\n", offer.prefix.c_str()); break;
    case Offer::Kind::command: std::printf("command\t%zu\n", offer.command_at + 1); return;
  }
  for (const auto& c : offer.candidates) std::printf("%s\t%s\n", c.word.c_str(), one_line(c.description).c_str());
}

}  // namespace

void register_complete(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("__complete", "Print what Tab offers (used by the shell completions)");
  cmd->group("");  // hidden from --help
  // Every word after `--` is a word of the line, even one that looks like a
  // flag. They are read raw from the option: CLI11 drops a last "" when it
  // fills the vector, and that is the word under the cursor after a space.
  // (The vector only makes the option take them all; the callback keeps it.)
  auto vector = std::make_shared<std::vector<std::string>>();
  auto* words = cmd->add_option("words", *vector);
  CLI::App* root = &app;
  cmd->callback([vector, words, root, &ctx] {
    const auto& typed = words->results();
    Offer offer = offer_for(*root, typed);
    // The word under the cursor, past what is not being completed (--db=).
    std::string cur = typed.empty() ? "" : typed.back();
    cur = cur.rfind(offer.prefix, 0) == 0 ? cur.substr(offer.prefix.size()) : "";
    if (offer.ids != Offer::Ids::none) {
      if (offer.db) ctx.db = expand_home(*offer.db);
      setenv("JOBCTL_STORE_TIMEOUT", "2s", 0);  // Tab must not hang on a store that is down
      try {
        auto found = ids(ctx, offer.ids, cur);
        offer.candidates.insert(offer.candidates.end(), found.begin(), found.end());
      } catch (const std::exception&) {
        // No store, or none reachable: the other candidates still stand.
      }
    }
    print(offer);
  });
}

}  // namespace jobctl::cli
