#include "common/ops/queues.hpp"

#include <fmt/format.h>

#include "common/jobdef/fields.hpp"
#include "common/model/job_json.hpp"
#include "common/util/error.hpp"
#include "common/util/strings.hpp"
#include "common/util/utf8.hpp"
#include "common/store/queues.hpp"

namespace jobctl::ops {

nlohmann::json queues_json(store::Store& store) {
  auto out = nlohmann::json::array();
  auto limit = [](auto v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
  for (const auto& q : store.queues().list_queues())
    out.push_back({{"name", q.name},
                   {"pending", q.pending},
                   {"running", q.running},
                   {"dead", q.dead},
                   {"paused", q.paused},
                   {"max_concurrent", limit(q.max_concurrent)},
                   {"rate_per_second", limit(q.rate)},
                   {"tenant_max_concurrent", limit(q.tenant_max_concurrent)},
                   {"defaults", model::to_json(q.defaults)}});
  return out;
}

namespace {

// A rate above 0 that is below store::kMinRate, refused: its next token
// could be years away, which no one means (and `n / per` of a tiny n
// would round to 0, no limit at all).
void refuse_slow_rate(double n, double per, const std::string& label) {
  if (n > 0 && !(n / per >= store::kMinRate))
    throw usage_error(fmt::format("{} is slower than 1 run a day", label),
                      "give at least 1 a day, e.g. 1/h or 0.05/h (0 or none: no limit)");
}

}  // namespace

double parse_rate(const std::string& text, const std::string& what) {
  if (text == "none") return 0;
  const auto slash = text.find('/');
  const std::string number = text.substr(0, slash);
  const std::string unit = slash == std::string::npos ? "s" : text.substr(slash + 1);
  double per = unit == "s" ? 1 : unit == "m" || unit == "min" ? 60 : unit == "h" ? 3600 : 0;
  const double n = util::parse_number(number).value_or(-1);
  const std::string label = fmt::format("{} '{}'", what, util::show_bytes(text));
  if (per == 0 || !(n >= 0) || n / per > store::kMaxRate)
    throw usage_error("invalid " + label,
                      "write runs per second, minute or hour, e.g. 5/s, 100/m, 1000/h (0 or none: no limit)");
  refuse_slow_rate(n, per, label);
  return n / per;
}

QueueSettings queue_settings_from_json(const nlohmann::json& body) {
  const char* hint = R"(the body is an object, e.g. {"max_concurrent": 4, "rate": "10/s", "retries": 5})";
  if (!body.is_object()) throw usage_error("the request body must be a JSON object", hint);
  QueueSettings out;
  auto limit = [&](const std::string& key, const nlohmann::json& v) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1'000'000)
      throw usage_error(fmt::format("field '{}' must be a whole number from 0 to 1000000 (0: no limit)", key), hint);
    return static_cast<int>(v.get<int64_t>());
  };
  jobdef::Draft d;
  d.source = jobdef::Source::line;
  for (const auto& [key, value] : body.items()) {
    if (key == "max_concurrent") {
      out.limits.max_concurrent = limit(key, value);
    } else if (key == "tenant_max_concurrent") {
      out.limits.tenant_max_concurrent = limit(key, value);
    } else if (key == "rate") {
      if (value.is_number() && value.get<double>() >= 0 && value.get<double>() <= store::kMaxRate) {
        refuse_slow_rate(value.get<double>(), 1, fmt::format("field 'rate' {}", value.dump()));
        out.limits.rate = value.get<double>();
      } else if (value.is_string()) {
        out.limits.rate = parse_rate(value.get<std::string>(), "field 'rate'");
      } else {
        throw usage_error("field 'rate' must be runs per second (0 to 1000000), or a text such as \"100/m\"", hint);
      }
    } else if (key == "clear") {
      if (!value.is_boolean()) throw usage_error("field 'clear' must be true or false", hint);
      out.clear = value.get<bool>();
    } else {
      const jobdef::Field& f = jobdef::line_field(key);  // throws for an unknown key, listing them
      if (!(f.where & jobdef::kQueueSet))
        throw usage_error(fmt::format("field '{}' is not a queue setting", key),
                          "a queue has limits (max_concurrent, rate, tenant_max_concurrent) and retry defaults");
      f.apply(d, value, jobdef::Name{f, jobdef::Source::line});
    }
  }
  out.retry = d.spec.retry_given;
  return out;
}

nlohmann::json set_queue(store::Store& store, const std::string& name, const QueueSettings& s) {
  model::validate_queue_name(name);
  if (s.retry.empty() && !s.clear && s.limits.empty())
    throw usage_error("nothing to set", "give at least one setting, e.g. a retry default or a limit");
  for (auto v : {s.limits.max_concurrent, s.limits.tenant_max_concurrent})
    if (v && *v < 0) throw usage_error("a limit cannot be negative", "0 removes a limit");
  if (s.limits.rate && *s.limits.rate < 0) throw usage_error("a rate cannot be negative", "0 removes the limit");
  if (!s.retry.empty() || s.clear)
    store.queues().set_queue_defaults(name, s.retry, s.clear ? store::Queues::Clear::yes : store::Queues::Clear::no);
  if (!s.limits.empty()) store.queues().set_queue_limits(name, s.limits);
  for (auto& q : queues_json(store))
    if (q["name"] == name) return q;
  return {{"name", name}};
}

nlohmann::json pause_queue(store::Store& store, const std::string& name, bool pause) {
  model::validate_queue_name(name);
  bool changed = store.queues().set_queue_paused(name, pause);
  return {{"queue", name}, {"result", pause ? "paused" : "resumed"}, {"changed", changed}};
}

}  // namespace jobctl::ops
