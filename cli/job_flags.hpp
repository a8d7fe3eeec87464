#pragma once
// The flags of a job definition, added to a command from the field table
// (common/jobdef/fields.hpp): submit takes them all, update those that
// change a job, queue set the retry defaults. Their values are applied to a
// definition by the same functions that read a batch line.
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/jobdef/fields.hpp"
#include "common/model/job.hpp"

namespace jobctl::cli {

class JobFlags {
 public:
  // Adds the flags of the fields `where` (jobdef::kSubmit, kUpdate or
  // kQueueSet) takes, in the table's order, with their checks: choices,
  // ranges and, for submit, what each needs and excludes.
  JobFlags(CLI::App& cmd, jobdef::Where where);
  JobFlags(const JobFlags&) = delete;
  JobFlags& operator=(const JobFlags&) = delete;

  // The flags added, for excludes().
  std::vector<std::string> names() const;
  // Whether the flag was on the command line (even as "").
  bool given(std::string_view flag) const;
  // The batch-line keys of the flags given (update reads the changes from them).
  std::set<std::string> given_keys() const;
  // A text flag's value ("" when not given).
  const std::string& text(std::string_view flag) const;
  // A list flag's values.
  const std::vector<std::string>& list(std::string_view flag) const;

  // Applies the given flags to `d`, in the table's order, skipping a text
  // flag given as "" (its default). Throws usage Error naming the flag.
  void apply_to(jobdef::Draft& d) const;

 private:
  struct Slot {
    const jobdef::Field* field = nullptr;
    CLI::Option* option = nullptr;
    std::string text;
    std::optional<int> count;
    std::vector<std::string> list;
    bool toggle = false;
  };
  const Slot& slot(std::string_view flag) const;

  std::deque<Slot> slots_;  // CLI11 writes into them: their addresses must not move
};

// The job that `submit` or `run` flags define (the arguments after `--`
// and `flags`), read by the batch line's field functions; warns on stderr
// of what it stores unsafely (--insecure, a credential written as is).
model::JobSpec spec_from_flags(const std::vector<std::string>& command_args, const JobFlags& flags);

// The arguments after `--`: one is a shell command line (run by sh -c, as
// ssh does), several an argv executed directly.
model::Command command_from_args(const std::vector<std::string>& args);

// --env NAME=VALUE values. Throws usage Error for one without a name or '='.
std::map<std::string, std::string> env_from_flags(const std::vector<std::string>& assignments);

}  // namespace jobctl::cli
