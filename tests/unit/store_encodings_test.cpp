#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "common/jobdef/job_input.hpp"
#include "common/model/job_json.hpp"
#include "common/store/encodings.hpp"
#include "common/store/sql.hpp"

using namespace jobctl;
using nlohmann::json;

TEST_CASE("store encodings: each stored form reads back what was written") {
  auto spec = jobdef::job_spec_from_json(json::parse(R"({"webhook":{"url":"https://example.com/h","method":"PUT",
    "headers":{"Authorization":"Bearer {{secret:T}}"},"data":"{\"a\":1}","sign_secret":"K"},
    "notify":["https://n.example.com/1","http://127.0.0.1/2"],"notify_on":"success,dead"})"));
  auto webhook = store::command_from_text(store::command_to_text(spec.command));
  REQUIRE(webhook.webhook);
  CHECK(model::to_json(*webhook.webhook) == model::to_json(*spec.command.webhook));
  auto notify = store::notify_from_text(*store::notify_to_text(spec.notify));
  CHECK(notify.urls == spec.notify.urls);
  CHECK(notify.on == spec.notify.on);
  CHECK_FALSE(store::notify_to_text(model::Notify{}));

  model::Command shell;
  shell.via_shell = true;
  shell.argv = {"echo 'a b' | wc -c"};
  auto back = store::command_from_text(store::command_to_text(shell));
  CHECK(back.via_shell);
  CHECK(back.argv == shell.argv);
  model::Command argv;
  argv.argv = {"make", "-C", "dir with space", "test"};
  back = store::command_from_text(store::command_to_text(argv));
  CHECK_FALSE(back.via_shell);
  CHECK(back.argv == argv.argv);

  std::map<std::string, std::string> env{{"A", "1"}, {"TOKEN", "{{secret:T}}"}, {"EMPTY", ""}};
  CHECK(store::env_from_text(store::env_to_text(env)) == env);
  CHECK(store::env_from_text("").empty());

  model::Labels labels{"dc=fra", "role=web"};
  CHECK(store::labels_from_text(store::labels_to_text(labels)) == labels);
  CHECK(store::labels_from_text("").empty());

  model::HttpTimings t{1, 2, 3, 4, 5};
  auto tb = store::timings_from_text(store::timings_to_text(t));
  CHECK(tb.dns_us == 1);
  CHECK(tb.connect_us == 2);
  CHECK(tb.tls_us == 3);
  CHECK(tb.first_byte_us == 4);
  CHECK(tb.total_us == 5);
}

TEST_CASE("statement_summary: a statement's first line, at most 80 characters, cut at a word") {
  CHECK(store::statement_summary("\n  SELECT 1 FROM runs\nWHERE x") == "SELECT 1 FROM runs");
  const std::string claim = "SELECT r.id, r.job_id FROM runs r WHERE " + std::string(2000, 'x');
  CHECK(store::statement_summary(claim) == "SELECT r.id, r.job_id FROM runs r WHERE …");
  const std::string words = "UPDATE runs SET " + std::string(40, 'a') + " = 1, " + std::string(40, 'b') + " = 2";
  const std::string summary = store::statement_summary(words);
  CHECK(summary == "UPDATE runs SET " + std::string(40, 'a') + " = 1, …");
}
