#pragma once
// The agent's secrets: the values behind `{{secret:NAME}}` in a webhook's
// URL, header values and body. They come from the agent's environment
// (JOBAGENT_SECRET_NAME) or its --secrets-file (NAME=value lines, readable
// by its owner only), never from the store, and they are only ever put
// into the outgoing request. Whatever the agent records or logs about a
// request (response body, error text) goes through redact() first.
#include <map>
#include <optional>
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
  // `used` collects the names and values substituted (a request keeps
  // them: a reload while it is in flight must not change what is redacted).
  using Values = std::map<std::string, std::string>;
  struct Resolved {
    std::string text;
    std::string missing;
  };
  Resolved resolve(std::string_view text, Values& used) const;

  // `text` with each of `values` replaced by [secret:NAME], longest value
  // first (so a value inside another cannot leave part of it behind).
  // `cut`: the text is the tail of something longer, so its start may be
  // the end of a value; the bytes that could be are dropped.
  enum class Cut { no, yes };
  static std::string redact(std::string text, const Values& values, Cut cut = Cut::no);
  static size_t longest(const Values& values);

  size_t size() const { return values_.size(); }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace jobctl::agent
