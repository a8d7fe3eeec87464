#pragma once
// A webhook action: the HTTP request a job makes instead of running a
// command, and the `{{secret:NAME}}` references its URL, header values and
// body may hold. The store keeps the references; only the agent that sends
// the request ever sees the values (agent/secrets.hpp).
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace jobctl::model {

struct Webhook {
  std::string url;                                            // http:// or https://
  std::string method = "POST";
  std::vector<std::pair<std::string, std::string>> headers;   // as given; values may reference secrets
  std::optional<std::string> body;                            // --data; none: an empty body
  bool insecure = false;                                      // --insecure: TLS certificates are not verified
  std::string sign_secret;                                    // --sign-secret: secret NAME; empty = unsigned
  bool literal_body = false;  // the body is sent as written, references and all (notifications)

  std::string display() const;  // "POST https://example.com/hook"
};

// Where an HTTP attempt's time went, in µs from its start (libcurl's
// phases): name lookup, TCP connect, TLS handshake, first response byte,
// and the whole request. Zero for a phase that did not happen.
struct HttpTimings {
  int64_t dns_us = 0;
  int64_t connect_us = 0;
  int64_t tls_us = 0;
  int64_t first_byte_us = 0;
  int64_t total_us = 0;
};
nlohmann::json to_json(const HttpTimings& t);        // {"dns_ms": …, …}

// A secret's name: 1 to 128 characters of A-Z a-z 0-9 _.
bool is_secret_name(std::string_view name);

// The names referenced by `{{secret:NAME}}` in text, in order. Throws
// usage Error for a malformed reference (unclosed, or a NAME that is not
// A-Z a-z 0-9 _).
std::vector<std::string> secret_references(std::string_view text, std::string_view where);

// Checks the URL (http or https, a host), the method (an HTTP token), the
// header names and values, and every secret reference. Throws usage Error
// naming the flag.
void validate(const Webhook& w);

// 'Name: value' (a --header flag) as a pair. Throws usage Error.
std::pair<std::string, std::string> parse_header(std::string_view text);

// The JSON form: in a batch line or DAG node (field "webhook") and in the
// store (the jobs.command column). Strict on input like job_json.hpp.
nlohmann::json to_json(const Webhook& w);
Webhook webhook_from_json(const nlohmann::json& j);

}  // namespace jobctl::model
