#pragma once
// The agent's secrets: the values behind `{{secret:NAME}}` in a webhook's
// URL, header values and body. They come from the agent's environment
// (JOBAGENT_SECRET_NAME) or its --secrets-file (NAME=value lines, readable
// by its owner only), never from the store, and they are only ever put
// into the outgoing request. Whatever the agent records or logs about a
// request (response body, error text) goes through redact() first.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace jobctl::agent {

class Secrets {
 public:
  Secrets() = default;
  // Reads JOBAGENT_SECRET_* from `env` and, when given, the file; the
  // environment wins over the file. Throws Error(ExitCode::usage) for a
  // file that others may read or write, or that cannot be read or parsed,
  // naming the file and the line.
  static Secrets load(char** env, const std::optional<std::string>& file);

  std::optional<std::string> get(const std::string& name) const;

  // `text` with every {{secret:NAME}} replaced by its value. A NAME with no
  // value comes back in `missing` (the first one) and the text is unusable.
  struct Resolved {
    std::string text;
    std::string missing;
    std::set<std::string> used;  // names substituted
  };
  Resolved resolve(std::string_view text) const;

  // `text` with each value of `names` replaced by [secret:NAME].
  std::string redact(std::string text, const std::set<std::string>& names) const;

  size_t size() const { return values_.size(); }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace jobctl::agent
