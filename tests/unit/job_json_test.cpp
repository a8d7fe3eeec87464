#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

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
  CHECK(refused(R"({"webhook":{"url":"http://x/","method":"GE T"}})") == "invalid --method 'GE T'");
  CHECK(refused(R"({"webhook":{"url":"http://x/","data":"{{secret:A"}})").find("unclosed secret reference") !=
        std::string::npos);
  CHECK(refused(R"({"command":"true","notify":"ftp://x"})").find("invalid --notify URL") != std::string::npos);
  CHECK(refused(R"({"command":"true","notify_on":"sometimes"})").find("unknown event 'sometimes'") != std::string::npos);
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
