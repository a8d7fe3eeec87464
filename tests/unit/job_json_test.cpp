#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "common/model/job_json.hpp"
#include "common/util/error.hpp"

using jobctl::model::job_spec_from_json;
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
