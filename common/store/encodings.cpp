#include "common/store/encodings.hpp"

#include <nlohmann/json.hpp>


namespace jobctl::store {

using nlohmann::json;

std::string command_to_text(const model::Command& c) {
  if (c.webhook) return json{{"webhook", model::to_json(*c.webhook)}}.dump();
  if (c.via_shell) return json(c.argv.at(0)).dump();
  return json(c.argv).dump();
}

model::Command command_from_text(const std::string& text) {
  auto j = json::parse(text);
  model::Command c;
  if (j.is_object()) {
    c.webhook = model::webhook_from_json(j.at("webhook"));
  } else if (j.is_string()) {
    c.via_shell = true;
    c.argv = {j.get<std::string>()};
  } else {
    c.argv = j.get<std::vector<std::string>>();
  }
  return c;
}

std::string env_to_text(const std::map<std::string, std::string>& env) { return json(env).dump(); }

std::map<std::string, std::string> env_from_text(const std::string& text) {
  if (text.empty()) return {};
  return json::parse(text).get<std::map<std::string, std::string>>();
}

std::string labels_to_text(const model::Labels& labels) { return json(labels).dump(); }

model::Labels labels_from_text(const std::string& text) {
  if (text.empty()) return {};
  return json::parse(text).get<model::Labels>();
}

std::optional<std::string> notify_to_text(const model::Notify& n) {
  if (n.empty()) return std::nullopt;
  return model::to_json(n).dump();
}

model::Notify notify_from_text(const std::string& text) {
  model::Notify n;
  if (text.empty()) return n;
  auto j = json::parse(text);
  n.urls = j.at("urls").get<std::vector<std::string>>();
  n.on = model::parse_notify_on(j.at("on").get<std::string>());
  return n;
}

std::string timings_to_text(const model::HttpTimings& t) {
  return json{t.dns_us, t.connect_us, t.tls_us, t.first_byte_us, t.total_us}.dump();
}

model::HttpTimings timings_from_text(const std::string& text) {
  auto a = json::parse(text).get<std::vector<int64_t>>();
  a.resize(5);
  return model::HttpTimings{a[0], a[1], a[2], a[3], a[4]};
}

}  // namespace jobctl::store
