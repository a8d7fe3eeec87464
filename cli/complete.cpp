// Tab completion read from the command table.
//
// The words before the cursor are walked as CLI11 parses them: a word that
// names a visible subcommand descends into it; a flag that takes a value
// (CLI11 knows how many values each option expects) owns the next word, or
// what follows its `=`; `--` ends the flags; any other word fills the next
// positional argument. Where the walk stops decides what the word under the
// cursor is: the value of a flag, a positional argument, a flag, or a
// subcommand. What a value or a positional may be is told by the tag its
// option was given where it is registered (completes, suggests), else by its
// fixed choices, else it is free text and nothing is offered — never flags,
// since a flag there would be taken as the value.
#include "cli/complete.hpp"

#include <algorithm>
#include <string_view>

#include "common/util/strings.hpp"

namespace jobctl::cli {
namespace {

// A tag is a validator that accepts anything, found again by its name:
// "complete:KIND" or "complete:KIND:WORD,WORD,…". Its empty description
// keeps it out of --help.
constexpr std::string_view kTag = "complete:";

std::string kind_name(Completes what) {
  switch (what) {
    case Completes::job_id: return "job-id";
    case Completes::dag_run: return "dag-run";
    case Completes::dag_run_or_file: return "dag-run-or-file";
    case Completes::file: return "file";
    case Completes::directory: return "directory";
    case Completes::dsn: return "dsn";
    case Completes::command: return "command";
  }
  return "";
}

CLI::Option* tag(CLI::Option* o, const std::string& name) {
  return o->check(CLI::Validator([](std::string&) { return std::string(); }, "", std::string(kTag) + name));
}

// The tag of `o` without its "complete:", or "" when it has none. CLI11 2.1
// reaches an option's validators only through get_validator(index), which
// throws past the last one.
std::string tag_of(CLI::Option& o) {
  for (int i = 0;; ++i) {
    try {
      const std::string& name = o.get_validator(i)->get_name();
      if (name.rfind(kTag, 0) == 0) return name.substr(kTag.size());
    } catch (const CLI::OptionNotFound&) {
      return "";
    }
  }
}

bool starts_with(std::string_view text, std::string_view start) { return text.substr(0, start.size()) == start; }

// The fixed values an option accepts, from its IsMember check, whose
// description CLI11 renders as "{a,b,c}" in the option's type name.
std::vector<std::string> choices_of(const CLI::Option& o) {
  std::string desc = o.get_type_name();
  auto open = desc.find('{'), close = desc.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  return util::split(desc.substr(open + 1, close - open - 1), ',');
}

bool takes_value(const CLI::Option& o) { return o.get_items_expected_max() > 0; }

// The visible subcommand of `app` called `name`, if any.
CLI::App* visible_subcommand(CLI::App& app, const std::string& name) {
  for (CLI::App* sub : app.get_subcommands({}))
    if (!sub->get_group().empty() && sub->get_name() == name) return sub;
  return nullptr;
}

// The flag `word` names on `app` (`--db`, `-o`, the `--db` of `--db=X`).
CLI::Option* flag_named(CLI::App& app, const std::string& word) {
  std::string name = word.substr(0, word.find('='));
  for (CLI::Option* o : app.get_options())
    if (o->nonpositional() && o->check_name(name)) return o;
  return nullptr;
}

// The positional that the `filled`-th positional word of `app` goes to.
CLI::Option* positional_at(CLI::App& app, int filled) {
  for (CLI::Option* o : app.get_options()) {
    if (!o->get_positional()) continue;
    if (filled < o->get_items_expected_max()) return o;
    filled -= o->get_items_expected_max();
  }
  return nullptr;
}

// Where the walk over the typed words stopped.
struct Walk {
  CLI::App* node = nullptr;
  CLI::Option* pending = nullptr;    // the flag whose value the current word is
  int positionals = 0;               // positional words given to `node`
  std::optional<size_t> dashdash;    // the index of a `--`
  std::optional<std::string> db;
};

Walk walk(CLI::App& root, const std::vector<std::string>& words) {
  Walk w;
  w.node = &root;
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& word = words[i];
    if (w.pending) {
      if (w.pending->check_name("--db")) w.db = word;
      w.pending = nullptr;
    } else if (w.dashdash) {
      ++w.positionals;
    } else if (word == "--") {
      w.dashdash = i;
    } else if (word.size() > 1 && word[0] == '-') {
      CLI::Option* o = flag_named(*w.node, word);
      if (!o || !takes_value(*o)) continue;
      bool joined = word.find('=') != std::string::npos || (word[1] != '-' && word.size() > 2);  // --db=X, -ojson
      if (!joined) w.pending = o;
      else if (o->check_name("--db")) w.db = word.substr(word.find('=') + 1);
    } else if (CLI::App* sub = w.positionals == 0 ? visible_subcommand(*w.node, word) : nullptr) {
      w.node = sub;
    } else {
      ++w.positionals;
    }
  }
  return w;
}

void add_flags(Offer& offer, CLI::App& app) {
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& n : o->get_lnames()) offer.candidates.push_back({"--" + n, o->get_description()});
    for (const auto& n : o->get_snames()) offer.candidates.push_back({"-" + n, o->get_description()});
  }
}

void add_subcommands(Offer& offer, CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands({}))
    if (!sub->get_group().empty()) offer.candidates.push_back({sub->get_name(), sub->get_description()});
}

// A comma-separated list: the words not in it yet, after what is typed of it.
void add_list_items(Offer& offer, const std::string& value, const std::vector<std::string>& items) {
  size_t comma = value.rfind(',');
  std::string head = comma == std::string::npos ? "" : value.substr(0, comma + 1);
  auto given = util::split(head, ',');
  for (const auto& item : items)
    if (std::find(given.begin(), given.end(), item) == given.end()) offer.candidates.push_back({head + item, ""});
}

// What the value `value` of `o` (a flag's or a positional's) may be.
void add_values(Offer& offer, CLI::Option& o, const std::string& value) {
  const std::string tag = tag_of(o);
  const std::string kind = tag.substr(0, tag.find(':'));
  const std::string words = tag.find(':') == std::string::npos ? "" : tag.substr(tag.find(':') + 1);
  if (kind == "job-id") {
    offer.ids = Offer::Ids::jobs;
  } else if (kind == "dag-run") {
    offer.ids = Offer::Ids::dag_runs;
  } else if (kind == "dag-run-or-file") {
    offer.ids = Offer::Ids::dag_runs;
    offer.kind = Offer::Kind::files;
  } else if (kind == "file") {
    offer.kind = Offer::Kind::files;
  } else if (kind == "directory") {
    offer.kind = Offer::Kind::directories;
  } else if (kind == "dsn") {
    // sqlite:PATH and a bare PATH name a file; a PostgreSQL URL or
    // key=value string is nothing Tab can know.
    if (starts_with(value, "sqlite:")) offer.prefix += "sqlite:";
    else if (value.find("://") != std::string::npos || value.find('=') != std::string::npos) return;
    offer.kind = Offer::Kind::stores;
  } else if (kind == "words") {
    for (const auto& v : util::split(words, ',')) offer.candidates.push_back({v, ""});
  } else if (kind == "list") {
    add_list_items(offer, value, util::split(words, ','));
  } else {
    for (const auto& v : choices_of(o)) offer.candidates.push_back({v, ""});
  }
}

// The word under the cursor goes to positional `p` of `node` (or to none).
void add_positional(Offer& offer, CLI::App& node, CLI::Option* p, const std::string& cur, size_t at) {
  if (!p) {
    add_flags(offer, node);
  } else if (tag_of(*p) != "command") {
    add_values(offer, *p, cur);
  } else if (cur.empty()) {
    // `submit <Tab>`: the command usually follows flags and `--`.
    add_flags(offer, node);
    offer.candidates.push_back({"--", "The command to run follows"});
  } else {
    offer.kind = Offer::Kind::command;
    offer.command_at = at;
  }
}

}  // namespace

CLI::Option* completes(CLI::Option* o, Completes what) { return tag(o, kind_name(what)); }

CLI::Option* suggests(CLI::Option* o, const std::vector<std::string>& words, Separated separated) {
  std::string list;
  for (const auto& w : words) list += (list.empty() ? "" : ",") + w;
  return tag(o, std::string(separated == Separated::comma ? "list:" : "words:") + list);
}

Offer offer_for(CLI::App& root, const std::vector<std::string>& words) {
  Offer offer;
  if (words.empty()) return offer;
  Walk w = walk(root, words);
  offer.db = w.db;
  const std::string& cur = words.back();
  const size_t at = words.size() - 1;
  if (w.pending) {
    add_values(offer, *w.pending, cur);
  } else if (w.dashdash) {
    CLI::Option* p = positional_at(*w.node, w.positionals);
    if (p && tag_of(*p) == "command") {
      offer.kind = Offer::Kind::command;
      offer.command_at = *w.dashdash + 1;
    } else if (p) {
      add_values(offer, *p, cur);
    }
  } else if (starts_with(cur, "--") && cur.find('=') != std::string::npos) {
    CLI::Option* o = flag_named(*w.node, cur);
    if (!o || !takes_value(*o)) return offer;
    offer.prefix = cur.substr(0, cur.find('=') + 1);
    add_values(offer, *o, cur.substr(offer.prefix.size()));
  } else if (starts_with(cur, "-")) {
    add_flags(offer, *w.node);
    CLI::Option* p = positional_at(*w.node, w.positionals);
    if (p && tag_of(*p) == "command") offer.candidates.push_back({"--", "The command to run follows"});
  } else if (w.positionals == 0 && !w.node->get_subcommands({}).empty() && !positional_at(*w.node, 0)) {
    add_subcommands(offer, *w.node);
  } else {
    add_positional(offer, *w.node, positional_at(*w.node, w.positionals), cur, at);
  }
  return offer;
}

}  // namespace jobctl::cli
