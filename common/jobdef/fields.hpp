#pragma once
// The fields of a job definition, one table. Each field has its key (as a
// batch line and `-o json` spell it), its flag, which inputs take it, its
// help, and the one function that applies a value of it. Batch lines, DAG
// nodes and the flags of submit, update and queue set are all read through
// it, and the rules between fields are in finish(), so a job definition
// has one parser.
//
// A flag's value reaches apply() in the batch line's form: text as a JSON
// string, a count as an integer, a repeatable flag as an array, a switch
// as a boolean. The few flags whose text is not the line's form (the
// command after --, --env NAME=VALUE, --cwd, --payload @FILE, --data
// @FILE) are turned into it by the CLI first.
#include <array>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/model/job.hpp"
#include "common/util/error.hpp"

namespace jobctl::jobdef {

// The inputs that take a field.
enum Where : unsigned {
  kLine = 1,       // a key of a batch line
  kDagNode = 2,    // a key of a DAG node (a node's timing is its DAG's)
  kSubmit = 4,     // a flag of `jobctl submit`
  kUpdate = 8,     // a flag of `jobctl update`
  kQueueSet = 16,  // a flag of `jobctl queue set` (the retry defaults of a queue)
};

// How a flag takes its value.
enum class FlagKind {
  text,    // one string
  count,   // one integer in [min, max]
  list,    // repeatable, or several values
  toggle,  // present or not
};

// Where a value came from, which is how messages name the field: a flag
// ("--timeout") or a batch line's key ("field 'timeout'").
enum class Source { line, flag };

// A definition being read: the fields applied so far, before the rules
// between them.
struct Draft {
  Source source = Source::line;
  model::JobSpec spec;
  model::ScheduleSpec schedule;
  bool has_command = false;
  bool has_cron = false;
  bool has_schedule_field = false;  // misfire, catchup_window, overlap, jitter or a bound: they need cron
  nlohmann::json webhook;           // a URL or an object of webhook_from_json; null when none
  std::string at, tz;
  std::string starts_at, ends_at;   // as typed: read in the schedule's zone ("" none)
};

struct Field;
// What apply() is told of the field it applies: its key and how to name it.
struct Name {
  const Field& field;
  Source source;
  std::string label() const;  // "--timeout" or "field 'timeout'"
  std::string what() const;   // "--timeout" or "timeout", as duration and label parsers name their input
};

struct Field {
  std::string_view key;  // a flag-only part of another field is "webhook.method"
  unsigned where;
  void (*apply)(Draft&, const nlohmann::json& value, const Name&);  // throws usage Error naming the field
  std::string_view flag = {};
  FlagKind kind = FlagKind::text;
  // The flag's help; "{default}" and "{choices}" stand for the model's
  // default and the accepted names. `update_help` replaces it for update.
  std::string_view help = {};
  std::string_view update_help = {};
  std::string (*shown_default)() = nullptr;        // shown in the help: as {default}, else as [default]
  std::vector<std::string> (*choices)() = nullptr;  // the only values the flag takes (in any case)
  std::map<std::string, std::string> (*aliases)() = nullptr;  // other words it takes, and the choice each means
  int min = 0, max = 0;                             // a count's range (a new job's)
  std::string_view needs = {};                      // a flag this one is meaningless without (submit)
  std::array<std::string_view, 2> excludes = {};    // flags this one cannot be given with
  // `update --flag ""` removes the value (a name, labels, a key, a tenant),
  // where any other option refuses an empty value.
  bool update_empty_means_none = false;
  // `update --flag 0` removes the value (--max-runs' limit): update's
  // range starts at 0, where a new job's starts at min.
  bool update_zero_means_none = false;
};

// Every field, in the order `jobctl submit --help` lists the flags.
std::span<const Field> job_fields();
// The batch-line field of `key`; throws usage Error listing the keys when none is.
const Field& line_field(std::string_view key);
// The field of a flag ("--retries"); nullptr when none is.
const Field* flag_field(std::string_view flag);

// A flag's help with its default and choices filled in.
std::string help_of(const Field& f, unsigned where);

// The definition the fields make, after the rules between them (one
// command or webhook; cron excludes at and in and is needed by the other
// schedule fields; tz goes with at or cron) and the checks of the whole
// (model::validate, cron::validate_schedule). Throws usage Error, naming
// the fields as the draft's source does.
model::JobSpec finish(Draft d);

// `e` with each field's flag named as a batch line's key ("--max-runs"
// becomes "field 'max_runs'"), for a reader of lines or of an API body:
// the model's own checks name flags.
Error in_line_terms(const Error& e);

}  // namespace jobctl::jobdef
