#include <doctest/doctest.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/jobdef/fields.hpp"
#include "common/jobdef/job_input.hpp"
#include "common/model/job_json.hpp"
#include "common/util/error.hpp"

using jobctl::jobdef::job_spec_from_json;
using nlohmann::json;

TEST_CASE("job json: every documented field is read") {
  auto s = job_spec_from_json(json::parse(R"({"command":["make","test"],"name":"n","queue":"q1","priority":"high",
    "timeout":"10m","env":{"A":"1"},"cwd":"/tmp","payload":{"k":[1,2]},"idempotency_key":"key-1"})"));
  CHECK(s.command.argv == std::vector<std::string>{"make", "test"});
  CHECK_FALSE(s.command.via_shell);
  CHECK(s.name == "n");
  CHECK(s.queue == "q1");
  CHECK(s.priority == jobctl::model::Priority::high);
  CHECK(s.timeout_us == 600'000'000);
  CHECK(s.env.at("A") == "1");
  CHECK(s.cwd == "/tmp");
  CHECK(json::parse(*s.payload) == json::parse(R"({"k":[1,2]})"));
  CHECK(s.idempotency_key == "key-1");
}

TEST_CASE("job json: a timeout of 0 is no timeout, as `update --timeout 0` has it") {
  CHECK(job_spec_from_json(json::parse(R"({"command":"true","timeout":"0"})")).timeout_us == 0);
  CHECK_THROWS_AS(job_spec_from_json(json::parse(R"({"command":"true","timeout":"5"})")), jobctl::Error);
}

TEST_CASE("names: read in any case, with aliases accepted and never shown") {
  using jobctl::model::Priority;
  CHECK(jobctl::model::parse_priority("HIGH") == Priority::high);
  CHECK(jobctl::model::parse_priority("medium") == Priority::normal);
  CHECK(jobctl::model::parse_priority("Medium") == Priority::normal);
  CHECK(jobctl::model::to_string(Priority::normal) == "normal");
  CHECK(jobctl::model::names_of(jobctl::model::kPriorityNames) ==
        std::vector<std::string>{"critical", "high", "normal", "low"});
  CHECK(jobctl::model::aliases_of(jobctl::model::kPriorityNames) ==
        std::map<std::string, std::string>{{"medium", "normal"}});
  CHECK(job_spec_from_json(json::parse(R"({"command":"true","priority":"MEDIUM"})")).priority == Priority::normal);
  CHECK_THROWS_AS(jobctl::model::parse_priority("urgent"), jobctl::Error);
}

TEST_CASE("job json: a string command runs through sh -c") {
  auto s = job_spec_from_json(json::parse(R"({"command":"echo hi | wc -c"})"));
  CHECK(s.command.via_shell);
  CHECK(s.command.exec_argv() == std::vector<std::string>{"/bin/sh", "-c", "echo hi | wc -c"});
}

TEST_CASE("job json: bad lines are rejected naming the field") {
  struct Case {
    const char* line;
    const char* mentions;
  };
  for (const Case& c : {Case{R"({"command":["x"],"retires":3})", "retires"},
                        Case{R"({"name":"no command"})", "command"},
                        Case{R"({"command":[1,2]})", "command"},
                        Case{R"({"command":[]})", "empty"},
                        Case{R"({"command":["x"],"priority":"urgent"})", "urgent"},
                        Case{R"({"command":["x"],"timeout":"10"})", "timeout"},
                        Case{R"({"command":["x"],"queue":"bad queue"})", "bad queue"},
                        Case{R"({"command":["x"],"env":{"A":1}})", "env.A"},
                        Case{R"({"command":["x"],"cwd":"rel/path"})", "cwd"},
                        Case{R"({"command":["x"],"max_concurrent":100001})", "1 to 100000"},
                        Case{R"({"command":["x"],"cron":"@hourly","max_concurrent":100001})", "1 to 100000"},
                        Case{R"(["x"])", "object"}}) {
    CAPTURE(c.line);
    try {
      job_spec_from_json(json::parse(c.line));
      FAIL("accepted");
    } catch (const jobctl::Error& e) {
      CHECK(e.code() == jobctl::ExitCode::usage);
      CHECK(std::string(e.what()).find(c.mentions) != std::string::npos);
    }
  }
}

TEST_CASE("job json: a line's errors name its keys, never the CLI's flags, even from the model's own checks") {
  auto refused = [](const char* text) {
    try {
      job_spec_from_json(json::parse(text));
    } catch (const jobctl::Error& e) {
      return std::string(e.what()) + " | " + e.hint();
    }
    return std::string("accepted");
  };
  CHECK(refused(R"({"command":"true","cron":"@hourly","max_runs":0})") ==
        "field 'max_runs' must be 1 to 1000000, not 0 | leave it out for no limit");
  CHECK(refused(R"({"command":"true","stagger":"5s"})").rfind("field 'stagger' goes with field 'on_each' | e.g. field "
                                                            "'on_each' role=web field 'stagger' 30s", 0) == 0);
  CHECK(refused(R"({"command":"true","retry_delay":"10s","max_retry_delay":"1s"})")
            .rfind("field 'max_retry_delay' 1s is shorter than field 'retry_delay' 10s", 0) == 0);
  // A delay against a maximum not given is checked when the job is
  // written, with its queue's defaults (e2e "cli: a retry delay past the
  // longest..."): a queue may allow it.
  CHECK(refused(R"({"command":"true","retry_delay":"10m"})") == "accepted");
  // Only whole flags of fields are renamed.
  const auto e = jobctl::jobdef::in_line_terms(jobctl::usage_error("--to is before --from; --retries-x, x--retries",
                                                                     "--retries 3"));
  CHECK(std::string(e.what()) == "--to is before --from; --retries-x, x--retries");
  CHECK(e.hint() == "field 'retries' 3");
}

TEST_CASE("job json: a webhook, its stored form, and notifications") {
  using namespace jobctl::model;
  auto s = job_spec_from_json(json::parse(R"({"webhook":{"url":"https://example.com/h","method":"PUT",
    "headers":{"Authorization":"Bearer {{secret:T}}"},"data":"{\"a\":1}","sign_secret":"K"},
    "notify":["https://n.example.com/1","http://127.0.0.1/2"],"notify_on":"success,dead"})"));
  REQUIRE(s.command.webhook);
  CHECK(s.command.argv.empty());
  CHECK(s.command.webhook->method == "PUT");
  CHECK(s.command.webhook->headers.at(0).second == "Bearer {{secret:T}}");
  CHECK(*s.command.webhook->body == R"({"a":1})");
  CHECK(s.command.webhook->sign_secret == "K");
  CHECK(s.command.display() == "PUT https://example.com/h");
  CHECK(s.notify.urls.size() == 2);
  CHECK(s.notify.on == (notify_success | notify_dead));
  // A URL alone is a webhook too.
  CHECK(job_spec_from_json(json::parse(R"({"webhook":"http://127.0.0.1:9/x"})")).command.webhook->method == "POST");
}

TEST_CASE("job json: webhook refusals name the problem") {
  auto refused = [](const char* text) {
    try {
      job_spec_from_json(json::parse(text));
    } catch (const jobctl::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused(R"({"command":"true","webhook":"http://x/"})") == "give either 'command' or 'webhook', not both");
  CHECK(refused(R"({"webhook":{"method":"POST"}})") == "field 'webhook.url': is required");
  CHECK(refused(R"({"webhook":{"url":"http://x/","verb":"GET"}})") == "unknown field 'webhook.verb'");
  CHECK(refused(R"({"webhook":"file:///etc/passwd"})").find("must start with http:// or https://") != std::string::npos);
  CHECK(refused(R"({"webhook":{"url":"http://x/","method":"GE T"}})") == "invalid field 'webhook.method' 'GE T'");
  // A server answers "post" with 405 or 501; a method of its own passes.
  CHECK(refused(R"({"webhook":{"url":"http://x/","method":"post"}})").find("HTTP methods are case-sensitive") !=
        std::string::npos);
  CHECK(refused(R"({"webhook":{"url":"http://x/","method":"Patch"}})").find("servers know PATCH") != std::string::npos);
  CHECK(refused(R"({"webhook":{"url":"http://x/","method":"purge"}})") == "accepted");
  CHECK(refused(R"({"webhook":{"url":"http://x/","data":"{{secret:A"}})").find("unclosed secret reference") !=
        std::string::npos);
  CHECK(refused(R"({"command":"true","notify":"ftp://x"})").find("invalid field 'notify' URL") != std::string::npos);
  CHECK(refused(R"({"command":"true","notify_on":"sometimes"})").find("unknown event 'sometimes'") != std::string::npos);
  // A command is never given a secret: the reference would reach it as text.
  CHECK(refused(R"({"command":"true","env":{"TOKEN":"Bearer {{secret:T}}"}})")
            .find("environment variable 'TOKEN' holds a {{secret:NAME}} reference") != std::string::npos);
}

TEST_CASE("notify: one notification per state change, the most specific event asked for") {
  using namespace jobctl::model;
  JobSpec job;
  job.notify.urls = {"http://127.0.0.1/a", "http://127.0.0.1/b"};
  NotificationFacts f{"J", "R", RunStatus::dead, 2, "exited with code 1", 1500, 1, std::nullopt, 0};
  // Default failure,dead: a death is "dead", one per URL.
  auto n = notification_jobs(job, f, true);
  REQUIRE(n.size() == 2);
  CHECK(json::parse(*n[0].command.webhook->body)["event"] == "dead");
  CHECK(n[1].command.webhook->url == "http://127.0.0.1/b");
  // Only failure asked for: a death still reports, as a failure.
  job.notify.on = notify_failure;
  n = notification_jobs(job, f, true);
  REQUIRE(n.size() == 2);
  CHECK(json::parse(*n[0].command.webhook->body)["event"] == "failure");
  // A success nobody asked for, a cancel, a release: nothing.
  f.status = RunStatus::succeeded;
  CHECK(notification_jobs(job, f, false).empty());
  f.status = RunStatus::cancelled;
  CHECK(notification_jobs(job, f, false).empty());
  f.status = RunStatus::pending;
  CHECK(notification_jobs(job, f, false).empty());
  CHECK(notification_jobs(job, f, true).size() == 2);
}

TEST_CASE("job fields: every key a batch line takes comes back under its name in -o json") {
  // Lines that together give every field a value (some fields exclude others).
  const char* lines[] = {
      R"({"command":"true","name":"n","queue":"q","priority":"high","timeout":"90s","env":{"A":"1"},"cwd":"/tmp","user":"nobody",
          "on":"role=web","concurrency_key":"k","max_concurrent":2,"tenant":"t","notify":"http://127.0.0.1/n",
          "notify_on":"success","payload":{"a":1},"idempotency_key":"key","retries":1,"backoff":"fixed",
          "retry_delay":"2s","max_retry_delay":"1m","retry_for":"1h","no_retry_exit_codes":"2",
          "max_deliveries":3,"delivery":"at-most-once"})",
      R"({"webhook":"http://127.0.0.1/hook","on_each":"role=web","stagger":"1s"})",
      R"({"command":"true","cron":"@hourly","tz":"Europe/Berlin","misfire":"all","catchup_window":"2h",
          "overlap":"allow","jitter":"5s","starts_at":"2030-01-01 09:00","ends_at":"2031-01-01T00:00:00Z",
          "max_runs":10})",
  };
  // What -o json shows in place of a key: the time a job runs at, and the
  // parts of a notification.
  const std::map<std::string, std::string> shown_as{{"at", ""}, {"in", ""}, {"notify", "notify.urls"},
                                                   {"notify_on", "notify.on"}};
  std::set<std::string> found;
  for (const char* line : lines) {
    auto given = json::parse(line);
    jobctl::model::Job job;
    job.spec = job_spec_from_json(given);
    job.spec.retry = job.spec.retry_given.resolve();  // as submit does (with no queue defaults)
    auto out = to_json(jobctl::model::JobView{job, std::nullopt});
    for (const auto& [key, value] : given.items()) {
      CAPTURE(key);
      std::string path = shown_as.count(key) ? shown_as.at(key) : key;
      if (path.empty()) continue;
      const json* at = nullptr;
      if (auto dot = path.find('.'); dot != std::string::npos) {
        at = &out.at(path.substr(0, dot)).at(path.substr(dot + 1));
      } else {
        for (const json* scope : {&out, &out.at("retry"), out["schedule"].is_null() ? &out : &out.at("schedule")})
          if (scope->contains(key) && !(*scope)[key].is_null()) at = &(*scope)[key];
      }
      REQUIRE(at != nullptr);
      CHECK_FALSE(at->is_null());
      found.insert(key);
    }
  }
  for (const auto& f : jobctl::jobdef::job_fields()) {
    auto shown = shown_as.find(std::string(f.key));
    if (!(f.where & jobctl::jobdef::kLine) || (shown != shown_as.end() && shown->second.empty())) continue;
    CAPTURE(f.key);
    CHECK(found.count(std::string(f.key)) == 1);
  }
}
