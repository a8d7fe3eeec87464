#include "common/model/webhook.hpp"

#include <fmt/format.h>

#include "common/model/limits.hpp"
#include "common/util/error.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::model {
namespace {

using nlohmann::json;

bool token_char(char c) {
  // RFC 9110 tchar.
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!token_char(c)) return false;
  return true;
}

bool has_control(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

Error webhook_field_error(std::string_view field, std::string_view why) {
  return usage_error(fmt::format("field 'webhook.{}': {}", field, why));
}

const std::string& want_webhook_string(const json& v, std::string_view field) {
  if (!v.is_string()) throw webhook_field_error(field, "must be a string");
  return v.get_ref<const std::string&>();
}

}  // namespace

bool is_secret_name(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

std::string Webhook::display() const { return method + " " + url; }

std::vector<std::string> secret_references(std::string_view text, std::string_view where) {
  static constexpr std::string_view kOpen = "{{secret:";
  std::vector<std::string> names;
  for (size_t at = text.find(kOpen); at != std::string_view::npos; at = text.find(kOpen, at)) {
    size_t start = at + kOpen.size();
    size_t end = text.find("}}", start);
    if (end == std::string_view::npos)
      throw usage_error(fmt::format("{}: unclosed secret reference '{}'", where, text.substr(at, 40)),
                        "write it as {{secret:NAME}}");
    std::string_view name = text.substr(start, end - start);
    if (!is_secret_name(name))
      throw usage_error(fmt::format("{}: invalid secret name '{}'", where, name),
                        "a secret name is 1 to 128 characters of A-Z a-z 0-9 _");
    names.emplace_back(name);
    at = end + 2;
  }
  return names;
}

void validate(const Webhook& w) {
  check_size(w.url.size(), kMaxUrlBytes, "the --webhook URL", "send long values in --data");
  size_t headers = 0;
  for (const auto& [name, value] : w.headers) headers += name.size() + value.size() + 4;
  check_size(headers, kMaxHeadersBytes, "the headers (--header)", "send long values in --data");
  if (w.body) check_size(w.body->size(), kMaxBodyBytes, "the body (--data)", "send a reference to the data instead");
  auto scheme_end = w.url.find("://");
  std::string scheme = scheme_end == std::string::npos ? "" : w.url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https")
    throw usage_error(fmt::format("invalid --webhook URL '{}': it must start with http:// or https://", util::show_bytes(w.url)),
                      "e.g. --webhook https://example.com/hooks/nightly");
  if (w.url.size() == scheme_end + 3 || w.url[scheme_end + 3] == '/')
    throw usage_error(fmt::format("invalid --webhook URL '{}': it has no host", util::show_bytes(w.url)));
  if (has_control(w.url) || w.url.find(' ') != std::string::npos)
    throw usage_error(fmt::format("invalid --webhook URL '{}': it holds a space or a control character", util::show_bytes(w.url)),
                      "percent-encode it (%20)");
  secret_references(w.url, "--webhook");
  if (!is_token(w.method))
    throw usage_error(fmt::format("invalid --method '{}'", util::show_bytes(w.method)), "e.g. --method POST, PUT, GET");
  // Methods are case-sensitive: a server answers "post" with 405 or 501.
  std::string upper;
  for (char c : w.method) upper += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  for (const char* known : {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"})
    if (upper == known && w.method != known)
      throw usage_error(fmt::format("invalid --method '{}': HTTP methods are case-sensitive, and servers know {}",
                                    w.method, known),
                        fmt::format("write --method {}", known));
  for (const auto& [name, value] : w.headers) {
    if (!is_token(name)) throw usage_error(fmt::format("invalid --header name '{}'", name), "write it as 'Name: value'");
    std::string lower;
    for (char c : name) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (lower == "idempotency-key" || lower.rfind("x-job-", 0) == 0)
      throw usage_error(fmt::format("--header '{}' is set by jobagent on every request", name),
                        "to choose the Idempotency-Key, give the job --idempotency-key");
    if (has_control(value))
      throw usage_error(fmt::format("--header '{}': the value holds a control character", name));
    secret_references(value, "--header " + name);
  }
  if (w.body && !w.literal_body) secret_references(*w.body, "--data");
  if (!w.sign_secret.empty() && !is_secret_name(w.sign_secret))
    throw usage_error(fmt::format("invalid --sign-secret '{}'", util::show_bytes(w.sign_secret)),
                      "give a secret's NAME (1 to 128 characters of A-Z a-z 0-9 _), not its value");
}

std::pair<std::string, std::string> parse_header(std::string_view text) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0)
    throw usage_error(fmt::format("invalid --header '{}'", text), "write it as --header 'Name: value'");
  std::string_view name = text.substr(0, colon), value = text.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return {std::string(name), std::string(value)};
}

json to_json(const HttpTimings& t) {
  return json{{"dns_ms", t.dns_us / 1000.0}, {"connect_ms", t.connect_us / 1000.0}, {"tls_ms", t.tls_us / 1000.0},
              {"first_byte_ms", t.first_byte_us / 1000.0}, {"total_ms", t.total_us / 1000.0}};
}

json to_json(const Webhook& w) {
  json headers = json::array();
  for (const auto& [k, v] : w.headers) headers.push_back(k + ": " + v);
  json j{{"url", w.url}, {"method", w.method}, {"headers", headers}};
  j["data"] = w.body ? json(*w.body) : json(nullptr);
  j["insecure"] = w.insecure;
  j["sign_secret"] = w.sign_secret.empty() ? json(nullptr) : json(w.sign_secret);
  if (w.literal_body) j["literal_body"] = true;
  return j;
}

Webhook webhook_from_json(const json& j) {
  if (j.is_string()) {
    Webhook w;
    w.url = j.get<std::string>();
    validate(w);
    return w;
  }
  if (!j.is_object()) throw usage_error("field 'webhook': must be a URL or an object with a \"url\"");
  Webhook w;
  bool has_url = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "url") {
      w.url = want_webhook_string(v, key);
      has_url = true;
    } else if (key == "method") {
      w.method = want_webhook_string(v, key);
    } else if (key == "headers") {
      // ["Name: value", …] or {"Name": "value", …}
      if (v.is_array()) {
        for (const auto& h : v) w.headers.push_back(parse_header(want_webhook_string(h, key)));
      } else if (v.is_object()) {
        for (const auto& [name, value] : v.items()) w.headers.emplace_back(name, want_webhook_string(value, "headers." + name));
      } else {
        throw webhook_field_error(key, "must be an array of \"Name: value\" strings or an object");
      }
    } else if (key == "data") {
      if (!v.is_null()) w.body = want_webhook_string(v, key);
    } else if (key == "insecure") {
      if (!v.is_boolean()) throw webhook_field_error(key, "must be true or false");
      w.insecure = v.get<bool>();
    } else if (key == "literal_body") {
      if (!v.is_boolean()) throw webhook_field_error(key, "must be true or false");
      w.literal_body = v.get<bool>();
    } else if (key == "sign_secret") {
      if (!v.is_null()) w.sign_secret = want_webhook_string(v, key);
    } else {
      throw usage_error(fmt::format("unknown field 'webhook.{}'", key),
                        "fields are: url, method, headers, data, insecure, sign_secret (see jobctl(1), BATCH FORMAT)");
    }
  }
  if (!has_url) throw webhook_field_error("url", "is required");
  validate(w);
  return w;
}

}  // namespace jobctl::model
