#pragma once
// Shell completion from the command table. Each option says where it is
// registered what Tab offers for its value (completes, suggests); offer_for
// reads the table and the words typed so far and answers for the word under
// the cursor. `jobctl __complete` prints the answer and the three shells'
// scripts only show it, so they cannot drift from the CLI or from each other.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace jobctl::cli {

// What an option's value (or a positional argument) is, for Tab.
enum class Completes {
  job_id,           // a job id (a run id works too): recent ones from the store
  dag_run,          // a DAG run id: recent ones from the store
  dag_run_or_file,  // a DAG run id, or a DAG document's file name
  file,             // a file name
  directory,        // a directory name
  dsn,              // a store: file names, after sqlite: too; nothing for postgres://… or key=value
  command,          // a command line of its own (`submit -- CMD ARGS`)
};

// Tags `o` with what its value is and returns it. An untagged option offers
// its fixed choices (CLI::IsMember) if it has some, else nothing: its value
// is free text (a name, a duration, an expression) and Tab cannot guess it.
CLI::Option* completes(CLI::Option* o, Completes what);

// The usual values of a free-text option (--method: GET, POST, …); with
// Separated::comma its value is a comma-separated list of them (--notify-on).
enum class Separated { no, comma };
CLI::Option* suggests(CLI::Option* o, const std::vector<std::string>& words, Separated separated = Separated::no);

struct Candidate {
  std::string word;
  std::string description;  // the help text of a command or flag; may be empty
};

// What Tab offers for the last of `words`.
struct Offer {
  enum class Kind {
    words,        // the candidates, and nothing else
    files,        // file names, besides the candidates
    stores,       // file names but SQLite's own beside a store (FILE-wal, FILE-shm, FILE-journal)
    directories,  // directory names
    command,      // a command line that starts at word `command_at`
  };
  Kind kind = Kind::words;
  // The start of the current word that is not being completed (`--db=`,
  // `sqlite:`): candidates and file names complete what follows it.
  std::string prefix;
  std::vector<Candidate> candidates;
  // Ids from the store to add to the candidates (the caller reads them).
  enum class Ids { none, jobs, dag_runs };
  Ids ids = Ids::none;
  // Kind::command: the index in `words` of the command's first word.
  size_t command_at = 0;
  // The --db given on the line (`--db X` or `--db=X`), for the ids.
  std::optional<std::string> db;
};

// Reads `words` — what follows the program's name on the command line, the
// last one being the word under the cursor, possibly empty — as CLI11
// would: subcommands, flags and the values they take, positionals. Never
// throws on any input.
Offer offer_for(CLI::App& root, const std::vector<std::string>& words);

}  // namespace jobctl::cli
