#pragma once
// The agent's secrets: the values behind `{{secret:NAME}}` in a webhook's
// URL, header values and body. They come from the agent's environment
// (JOBAGENT_SECRET_NAME, taken out of it at start), from systemd's
// credentials ($CREDENTIALS_DIRECTORY) or from its --secrets-file
// (NAME=value lines that no other user may read), never from the store,
// and they are only ever put into the outgoing request. Whatever the
// agent records or logs about a request (response body, error text) goes
// through redact() first.
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace jobctl::agent {

class Secrets {
 public:
  using Values = std::map<std::string, std::string>;  // name → value

  Secrets() = default;

  // The JOBAGENT_SECRET_* variables of this process's environment, which
  // it then no longer holds: each value's bytes are overwritten where the
  // kernel shows them (/proc/PID/environ) and the variable is unset, so
  // neither a job nor a process forked later can read them. Call it first
  // thing in main, before any thread or child exists.
  static Values take_from_environment();

  // `environment` (from take_from_environment), over the credentials in
  // `credentials_dir` (systemd's $CREDENTIALS_DIRECTORY: a credential named
  // "secrets" holds NAME=value lines, any other whose name is a secret's
  // holds that secret's value), over the NAME=value lines of `file`.
  // Throws Error(ExitCode::usage) for a file that another user may read
  // or that anyone but its owner may write (a group may read it when it
  // is this process's own group), or that cannot be read or parsed,
  // naming the file and the line but never a value.
  static Secrets load(const Values& environment, const std::optional<std::string>& file,
                      const std::optional<std::string>& credentials_dir = std::nullopt);

  std::optional<std::string> get(const std::string& name) const;

  // `text` with every {{secret:NAME}} replaced by its value. A NAME with no
  // value comes back in `missing` (the first one) and the text is unusable.
  // `used` collects the names and values substituted (a request keeps
  // them: a reload while it is in flight must not change what is redacted).
  struct Resolved {
    std::string text;
    std::string missing;
  };
  Resolved resolve(std::string_view text, Values& used) const;

  // `text` with each of `values`, in each of its forms (secret_forms.hpp:
  // as sent, URL-encoded, JSON-escaped, base64, hex), replaced by
  // [secret:NAME], longest first (so a value inside another cannot leave
  // part of it behind). `cut`: the text is the tail of something longer,
  // so its start may be the end of a form; the bytes that could be are
  // dropped.
  enum class Cut { no, yes };
  static std::string redact(std::string text, const Values& values, Cut cut = Cut::no);
  // The longest form of any of `values`, in bytes.
  static size_t longest(const Values& values);

  size_t size() const { return values_.size(); }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace jobctl::agent
