// jobctl serve (issue 19): the real server on 127.0.0.1, on both backends,
// called with a real HTTP client. Its answers are compared with what the
// CLI prints for the same store, since both come from common/ops.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/support/fixtures.hpp"

using namespace jobctl;
using nlohmann::json;

namespace {

const std::string kReader = "reader-token-0123456789abcdef";
const std::string kSubmitter = "submitter-token-0123456789abcdef";
const std::string kOperator = "operator-token-0123456789abcdef";
const std::string kAdmin = "admin-token-0123456789abcdef";
const std::string kUnknownId = "01J00000000000000000000000";

std::string write_tokens(const test::TempDir& dir, mode_t mode = 0600) {
  const std::string path = dir.file("tokens");
  std::ofstream(path) << "# name role token\n"
                      << "reader read " << kReader << "\n"
                      << "ci-bot submit " << kSubmitter << "\n"
                      << "on-call operate " << kOperator << "\n"
                      << "root admin " << kAdmin << "\n";
  chmod(path.c_str(), mode);
  return path;
}

// A running `jobctl serve` on a free port of 127.0.0.1; with `ca`, over
// TLS with a certificate that CA file vouches for.
struct Server {
  std::unique_ptr<test::Process> process;
  int port = 0;
  std::string ca;

  Server(const test::TestDb& db, const test::TempDir& dir, std::vector<std::string> extra = {},
         std::string ca_file = "")
      : ca(std::move(ca_file)) {
    std::vector<std::string> argv{JOBCTL_BIN, "--db", db.dsn(), "serve", "--listen", "127.0.0.1:0", "--tokens-file",
                                  write_tokens(dir)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    process = std::make_unique<test::Process>(argv, std::vector<std::string>{}, dir, "serve");
    const std::regex listening(std::string("listening on ") + (ca.empty() ? "http" : "https") +
                               "://127\\.0\\.0\\.1:([0-9]+)/api/v1");
    test::eventually(
        [&] {
          std::smatch m;
          const std::string err = process->err();
          if (std::regex_search(err, m, listening)) port = std::stoi(m[1]);
          REQUIRE_MESSAGE(process->running(), "jobctl serve exited: " << err);
          return port != 0;
        },
        "jobctl serve listens");
  }

  httplib::Client client(const std::string& token = "") const {
    httplib::Client c((ca.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") + std::to_string(port));
    if (!ca.empty()) {
      c.set_ca_cert_path(ca.c_str());
      c.enable_server_certificate_verification(true);
    }
    c.set_read_timeout(60, 0);
    if (!token.empty()) c.set_bearer_token_auth(token.c_str());
    return c;
  }
};

json body_of(const httplib::Result& r) {
  REQUIRE(r);
  return json::parse(r->body);
}

// The CLI's JSON for the same question.
json cli_json(const test::TestDb& db, const test::TempDir& dir, std::vector<std::string> args) {
  args.push_back("-o");
  args.push_back("json");
  auto r = test::run_jobctl(db, dir, args);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  return json::parse(r.out);
}

void check_problem(const httplib::Result& r, int status, const std::string& detail_has) {
  REQUIRE(r);
  CHECK(r->status == status);
  CHECK(r->get_header_value("Content-Type") == "application/problem+json");
  auto j = json::parse(r->body);
  CHECK(j["status"] == status);
  CAPTURE(r->body);
  CHECK(j["detail"].get<std::string>().find(detail_has) != std::string::npos);
}

const char* kDag = R"({"name": "etl", "jobs": {"extract": {"command": "true"},
                       "load": {"command": "true", "depends_on": ["extract"]}}})";

}  // namespace

TEST_CASE("serve: the seeds' eight endpoints answer with the JSON the CLI prints, and record the token's name") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto submitter = server.client(kSubmitter), reader = server.client(kReader), op = server.client(kOperator);

  // POST /jobs, GET /jobs/{id}
  auto created = submitter.Post("/api/v1/jobs", R"({"command": ["sleep", "60"], "name": "nightly"})",
                                "application/json");
  REQUIRE(created);
  CHECK(created->status == 201);
  const std::string id = body_of(created)["id"];
  CHECK(created->get_header_value("Location") == "/api/v1/jobs/" + id);
  CHECK(body_of(reader.Get("/api/v1/jobs/" + id)) == cli_json(db, dir, {"get", id}));
  auto shown = cli_json(db, dir, {"get", id});
  shown.erase("waiting");  // as `submit -o json` shows a new job
  CHECK(body_of(created) == shown);
  auto listed = body_of(reader.Get("/api/v1/jobs?limit=10"));
  CHECK(listed == cli_json(db, dir, {"ls", "--limit", "10"}));

  // DELETE /jobs/{id} cancels; POST /jobs/{id}/retry runs it again.
  auto cancelled = op.Delete("/api/v1/jobs/" + id);
  CHECK(cancelled->status == 200);
  CHECK(body_of(cancelled) == json{{"id", id}, {"result", "cancelled"}});
  auto retried = body_of(op.Post("/api/v1/jobs/" + id + "/retry"));
  CHECK(retried["id"] == id);
  CHECK(retried["run"] == test::get(db, dir, id)["run"]["id"]);
  CHECK(body_of(op.Post("/api/v1/jobs/" + id + "/pause")) == json{{"id", id}, {"result", "paused"}, {"changed", true}});
  CHECK(body_of(op.Post("/api/v1/jobs/" + id + "/resume")) == json{{"id", id}, {"result", "resumed"}, {"changed", true}});

  // POST /schedules, GET /schedules/{id}/runs
  auto schedule = submitter.Post("/api/v1/schedules", R"({"command": "true", "cron": "0 3 * * *"})", "application/json");
  CHECK(schedule->status == 201);
  const std::string sid = body_of(schedule)["id"];
  CHECK(body_of(schedule)["schedule"]["cron"] == "0 3 * * *");
  CHECK(body_of(reader.Get("/api/v1/schedules/" + sid + "/runs")) == cli_json(db, dir, {"schedule", "runs", sid}));
  check_problem(submitter.Post("/api/v1/schedules", R"({"command": "true"})", "application/json"), 400, "cron");

  // POST /dags, GET /dags/{id}/status
  auto dag = submitter.Post("/api/v1/dags", kDag, "application/json");
  CHECK(dag->status == 201);
  const std::string dag_run = body_of(dag)["dag_run_id"];
  CHECK(body_of(reader.Get("/api/v1/dags/" + dag_run + "/status")) == cli_json(db, dir, {"dag", "status", dag_run}));

  // Who did what: the token's name is the audit actor.
  auto history = cli_json(db, dir, {"history", id});
  std::set<std::string> actors;
  for (const auto& e : history) actors.insert(e["actor"].get<std::string>());
  CHECK(actors.count("ci-bot") == 1);
  CHECK(actors.count("on-call") == 1);
}

TEST_CASE("serve: a job submitted over HTTP runs on an agent") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  auto created = server.client(kSubmitter).Post("/api/v1/jobs", R"({"command": "echo from-http"})", "application/json");
  const std::string id = body_of(created)["id"];
  CHECK(test::run_jobctl(db, dir, {"wait", id}).code == 0);
  auto job = body_of(server.client(kReader).Get("/api/v1/jobs/" + id));
  CHECK(job["run"]["status"] == "succeeded");
}

TEST_CASE("serve: no token is 401, the wrong role 403, and neither writes anything") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  const std::string job = R"({"command": "true"})";
  auto none = server.client().Post("/api/v1/jobs", job, "application/json");
  check_problem(none, 401, "Authorization: Bearer");
  CHECK(none->get_header_value("WWW-Authenticate") == "Bearer");
  check_problem(server.client("not-a-token-of-this-server").Get("/api/v1/jobs"), 401, "token");
  // The scheme is case-insensitive.
  auto lower = server.client().Get("/api/v1/jobs", httplib::Headers{{"Authorization", "bearer " + kReader}});
  REQUIRE(lower);
  CHECK(lower->status == 200);
  check_problem(server.client(kReader).Post("/api/v1/jobs", job, "application/json"), 403, "needs submit");
  const std::string id = test::submit(db, dir, {"--", "true"});
  check_problem(server.client(kSubmitter).Delete("/api/v1/jobs/" + id), 403, "needs operate");
  check_problem(server.client(kSubmitter).Post("/api/v1/jobs/" + id + "/pause"), 403, "needs operate");
  CHECK(test::get(db, dir, id)["run"]["status"] == "pending");
  CHECK(cli_json(db, dir, {"ls"}).size() == 1);
  // Higher roles can do what lower ones can.
  CHECK(server.client(kAdmin).Get("/api/v1/jobs/" + id)->status == 200);
  CHECK(server.client(kOperator).Post("/api/v1/jobs", job, "application/json")->status == 201);
}

TEST_CASE("serve: errors are problem details with the CLI's message, and the status of its exit code") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir, {"--max-body", "4096"});
  auto c = server.client(kAdmin);
  // Exit 2 → 400, with the message `submit --file` gives for the same line.
  const std::string line = R"({"command": "true", "retries": -1})";
  auto cli = test::run_jobctl(db, dir, {"submit", "--file", "-"}, line + "\n");
  REQUIRE(cli.code == 2);
  auto r = c.Post("/api/v1/jobs", line, "application/json");
  check_problem(r, 400, "retries");
  auto problem = json::parse(r->body);
  CHECK(problem["exit_code"] == 2);
  CHECK(cli.err.find(problem["detail"].get<std::string>()) != std::string::npos);
  check_problem(c.Post("/api/v1/jobs", "{not json", "application/json"), 400, "not valid JSON");
  check_problem(c.Post("/api/v1/jobs", R"({"command": "true", "command": "false"})", "application/json"), 400,
                "twice");
  // A batch is all or nothing.
  check_problem(c.Post("/api/v1/jobs", R"([{"command": "true"}, {"command": 5}])", "application/json"), 400, "job 2");
  CHECK(cli_json(db, dir, {"ls"}).empty());
  // Exit 3 → 404, exit 4 → 409.
  auto missing = c.Get("/api/v1/jobs/" + kUnknownId);
  check_problem(missing, 404, "no job or run");
  CHECK(json::parse(missing->body)["exit_code"] == 3);
  check_problem(c.Get("/api/v1/jobs/not-an-id"), 400, "invalid id");
  const std::string id = test::submit(db, dir, {"--", "true"});
  CHECK(c.Delete("/api/v1/jobs/" + id)->status == 200);
  check_problem(c.Delete("/api/v1/jobs/" + id), 409, "");
  check_problem(c.Get("/api/v1/jobs?limit=0"), 400, "limit");
  // What no route answers, and a body over --max-body.
  check_problem(c.Get("/api/v1/nothing-here"), 404, "no route GET /api/v1/nothing-here");
  check_problem(c.Post("/api/v1/jobs", std::string(8192, ' '), "application/json"), 413, "--max-body");
  CHECK(cli_json(db, dir, {"ls"}).size() == 1);
}

TEST_CASE("serve: the Idempotency-Key header makes a retried POST one job") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto c = server.client(kSubmitter);
  httplib::Headers key{{"Idempotency-Key", "order-42"}};
  auto first = c.Post("/api/v1/jobs", key, R"({"command": "true"})", "application/json");
  auto again = c.Post("/api/v1/jobs", key, R"({"command": "true"})", "application/json");
  CHECK(first->status == 201);
  CHECK(again->status == 200);
  CHECK(body_of(first)["id"] == body_of(again)["id"]);
  CHECK(body_of(first)["idempotency_key"] == "order-42");
  CHECK(cli_json(db, dir, {"ls"}).size() == 1);
  check_problem(c.Post("/api/v1/jobs", key, R"({"command": "true", "idempotency_key": "other"})", "application/json"),
                400, "differ");
  check_problem(c.Post("/api/v1/jobs", key, R"([{"command": "true"}])", "application/json"), 400, "not a batch");
  auto batch = c.Post("/api/v1/jobs", R"([{"command": "true"}, {"command": "false"}])", "application/json");
  CHECK(batch->status == 201);
  CHECK(body_of(batch).size() == 2);
  CHECK(cli_json(db, dir, {"ls"}).size() == 3);
}

TEST_CASE("serve: openapi.json documents routes that are all served") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto doc = body_of(server.client().Get("/api/v1/openapi.json"));
  CHECK(doc["openapi"] == "3.1.0");
  size_t operations = 0;
  auto c = server.client(kAdmin);
  for (const auto& [path, methods] : doc["paths"].items()) {
    const std::string url =
        "/api/v1" + std::regex_replace(std::regex_replace(path, std::regex("\\{id\\}"), kUnknownId),
                                       std::regex("\\{name\\}"), "default");
    for (const auto& [method, op] : methods.items()) {
      CAPTURE(method);
      CAPTURE(url);
      ++operations;
      CHECK(op.contains("x-jobctl-role"));
      httplib::Result r = method == "get"      ? c.Get(url)
                          : method == "delete" ? c.Delete(url)
                          : method == "patch"  ? c.Patch(url, "{}", "application/json")
                                               : c.Post(url, "{}", "application/json");
      REQUIRE(r);
      CHECK(r->body.find("no route") == std::string::npos);  // served: answered by its handler
      CHECK(r->status != 405);
    }
  }
  CHECK(operations >= 11);  // the seeds' eight and list, pause, resume
  for (const char* seed : {"/jobs", "/jobs/{id}", "/jobs/{id}/retry", "/schedules", "/schedules/{id}/runs", "/dags",
                           "/dags/{id}/status"})
    CHECK_MESSAGE(doc["paths"].contains(seed), seed);
  CHECK(doc["paths"]["/jobs"].contains("post"));
  CHECK(doc["paths"]["/jobs/{id}"].contains("delete"));
}

TEST_CASE("serve: SIGTERM stops it with exit 0, and the access log never holds a token") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  CHECK(server.client(kReader).Get("/api/v1/jobs")->status == 200);
  CHECK(server.client("wrong-token-but-long-enough").Get("/api/v1/jobs")->status == 401);
  server.process->signal(SIGTERM);
  CHECK(server.process->wait() == 0);
  const std::string log = server.process->err();
  CHECK(log.find("path=/api/v1/jobs") != std::string::npos);
  CHECK(log.find("token=reader") != std::string::npos);
  CHECK(log.find(kReader) == std::string::npos);
  CHECK(log.find("wrong-token") == std::string::npos);
}

TEST_CASE("serve: a tokens file others may read, or a bad line, is refused before it listens") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto open = write_tokens(dir, 0644);
  auto r = test::run_jobctl(db, dir, {"serve", "--listen", "127.0.0.1:0", "--tokens-file", open});
  CHECK(r.code == 2);
  CHECK(r.err.find("readable or writable by others") != std::string::npos);
  const std::string bad = dir.file("bad-tokens");
  std::ofstream(bad) << "ci-bot superuser " << kSubmitter << "\n";
  chmod(bad.c_str(), 0600);
  r = test::run_jobctl(db, dir, {"serve", "--listen", "127.0.0.1:0", "--tokens-file", bad});
  CHECK(r.code == 2);
  CHECK(r.err.find("unknown role 'superuser'") != std::string::npos);
  CHECK(r.err.find(kSubmitter) == std::string::npos);  // never the token
  r = test::run_jobctl(db, dir, {"serve", "--listen", "nowhere", "--tokens-file", write_tokens(dir)});
  CHECK(r.code == 2);
  CHECK(r.err.find("invalid --listen") != std::string::npos);
}

TEST_CASE("serve: --tls-cert and --tls-key serve HTTPS that a client verifies") {
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string cert = dir.file("cert.pem"), key = dir.file("key.pem");
  const std::string make = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
                           "-addext subjectAltName=IP:127.0.0.1 -keyout '" + key + "' -out '" + cert + "' 2>/dev/null";
  REQUIRE(std::system(make.c_str()) == 0);
  Server server(db, dir, {"--tls-cert", cert, "--tls-key", key}, cert);
  auto r = server.client(kReader).Get("/api/v1/jobs");
  REQUIRE(r);
  CHECK(r->status == 200);
  // Plain HTTP to the TLS port gets no answer.
  httplib::Client plain("127.0.0.1", server.port);
  plain.set_read_timeout(5, 0);
  auto p = plain.Get("/api/v1/jobs");
  CHECK((!p || p->status != 200));
  // A key that does not load is refused before it listens.
  auto bad = test::run_jobctl(db, dir, {"serve", "--listen", "127.0.0.1:0", "--tokens-file", write_tokens(dir),
                                        "--tls-cert", cert, "--tls-key", cert});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("cannot load the TLS certificate") != std::string::npos);
}

TEST_CASE("serve: attempts, output, history, workers and the dead-letter queue answer as the CLI shows them") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto reader = server.client(kReader), op = server.client(kOperator);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  std::vector<std::string> ids;
  for (const char* queue : {"default", "default", "default"}) {
    auto r = server.client(kSubmitter)
                 .Post("/api/v1/jobs",
                       json{{"command", "echo out-$JOB_RUN_ID; echo err >&2; exit 3"}, {"retries", 0}, {"queue", queue}}
                           .dump(),
                       "application/json");
    ids.push_back(body_of(r)["id"]);
  }
  for (const auto& id : ids) CHECK(test::run_jobctl(db, dir, {"wait", id}).code == 1);
  const std::string id = ids[0];
  CHECK(body_of(reader.Get("/api/v1/jobs/" + id + "/attempts")) == cli_json(db, dir, {"runs", id}));
  auto logs = body_of(reader.Get("/api/v1/jobs/" + id + "/logs"));
  CHECK(logs == cli_json(db, dir, {"logs", id}));
  CHECK(logs["stderr"] == "err\n");
  check_problem(reader.Get("/api/v1/jobs/" + id + "/logs?attempt=2"), 404, "has 1 attempt");
  CHECK(body_of(reader.Get("/api/v1/jobs/" + id + "/history")) == cli_json(db, dir, {"history", id}));
  auto workers = body_of(reader.Get("/api/v1/workers"));
  REQUIRE(workers.size() == 1);
  CHECK(workers[0]["name"] == cli_json(db, dir, {"workers"})[0]["name"]);

  // The dead-letter queue: list and show as the CLI does; replay one, then
  // the rest by a filter, with the agent stopped so they stay pending.
  agent->signal(SIGTERM);
  CHECK(agent->wait() == 0);
  CHECK(body_of(reader.Get("/api/v1/dead-letter")) == cli_json(db, dir, {"dlq", "ls"}));
  CHECK(body_of(reader.Get("/api/v1/dead-letter")).size() == 3);
  CHECK(body_of(reader.Get("/api/v1/dead-letter/" + id)) == cli_json(db, dir, {"dlq", "show", id}));
  check_problem(reader.Post("/api/v1/dead-letter/" + id + "/replay"), 403, "needs operate");
  auto one = body_of(op.Post("/api/v1/dead-letter/" + id + "/replay"));
  CHECK(one["replayed"] == 1);
  CHECK(test::get(db, dir, id)["run"]["status"] == "pending");
  check_problem(op.Post("/api/v1/dead-letter/" + id + "/replay"), 409, "not in the dead-letter queue");
  check_problem(op.Post("/api/v1/dead-letter/replay", R"({"ids": []})", "application/json"), 400, "non-empty");
  check_problem(op.Post("/api/v1/dead-letter/replay", R"({"all": true, "ids": ["x"]})", "application/json"), 400,
                "either");
  auto rest = body_of(op.Post("/api/v1/dead-letter/replay", R"({"all": true, "queue": "default"})", "application/json"));
  CHECK(rest["replayed"] == 2);
  CHECK(cli_json(db, dir, {"dlq", "ls"}).empty());
  CHECK(body_of(op.Delete("/api/v1/dead-letter?older_than=30d")) == json{{"purged", 0}});
  check_problem(op.Delete("/api/v1/dead-letter"), 400, "older_than");
}

TEST_CASE("serve: delete and restore a job, and list, pause and resume queues, as the CLI does") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto reader = server.client(kReader), op = server.client(kOperator);
  const std::string id = test::submit(db, dir, {"--queue", "reports", "--", "true"});
  check_problem(server.client(kSubmitter).Post("/api/v1/jobs/" + id + "/delete"), 403, "needs operate");
  auto deleted = body_of(op.Post("/api/v1/jobs/" + id + "/delete"));
  CHECK(deleted == json{{"id", id}, {"result", "deleted"}, {"runs_cancelled", 1}});
  CHECK(cli_json(db, dir, {"ls", "--deleted"}).size() == 1);
  check_problem(op.Post("/api/v1/jobs/" + id + "/delete?cancel_running=maybe"), 400, "cancel_running");
  CHECK(body_of(op.Post("/api/v1/jobs/" + id + "/restore")) == json{{"id", id}, {"result", "restored"}});
  CHECK(cli_json(db, dir, {"ls", "--deleted"}).empty());

  CHECK(body_of(reader.Get("/api/v1/queues")) == cli_json(db, dir, {"queue", "ls"}));
  check_problem(reader.Post("/api/v1/queues/reports/pause"), 403, "needs operate");
  CHECK(body_of(op.Post("/api/v1/queues/reports/pause")) ==
        json{{"queue", "reports"}, {"result", "paused"}, {"changed", true}});
  CHECK(body_of(op.Post("/api/v1/queues/reports/pause"))["changed"] == false);
  bool paused = false;
  for (const auto& q : cli_json(db, dir, {"queue", "ls"}))
    if (q["name"] == "reports") paused = q["paused"];
  CHECK(paused);
  CHECK(body_of(op.Post("/api/v1/queues/reports/resume"))["result"] == "resumed");
  check_problem(op.Post("/api/v1/queues/no%20spaces/pause"), 400, "queue");
}

TEST_CASE("serve: stats and check answer as the CLI does") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto reader = server.client(kReader);
  test::submit(db, dir, {"--queue", "reports", "--", "true"});
  auto stats = body_of(reader.Get("/api/v1/stats?since=1h"));
  auto cli = cli_json(db, dir, {"stats", "--since", "1h"});
  REQUIRE(stats.size() == cli.size());
  for (size_t i = 0; i < stats.size(); ++i) {
    // The same store read twice: only the age of the oldest ready run moves.
    stats[i].erase("oldest_ready_s");
    cli[i].erase("oldest_ready_s");
  }
  CHECK(stats == cli);
  auto ok = body_of(reader.Get("/api/v1/check?max_dlq=0"));
  CHECK(ok == json{{"ok", true}, {"breaches", json::array()}});
  auto breached = body_of(reader.Get("/api/v1/check?min_workers=1&queue=reports"));
  CHECK(breached["ok"] == false);
  REQUIRE(breached["breaches"].size() == 1);
  auto r = test::run_jobctl(db, dir, {"check", "--min-workers", "1", "--queue", "reports"});
  CHECK(r.code == 1);
  CHECK(r.out.find(breached["breaches"][0].get<std::string>()) != std::string::npos);
  check_problem(reader.Get("/api/v1/check"), 400, "no threshold");
  check_problem(reader.Get("/api/v1/stats?since=0s"), 400, "since");
  check_problem(reader.Get("/api/v1/check?max_dlq=-1"), 400, "max_dlq");
}

TEST_CASE("serve: PATCH changes a job as update does, and If-Match with a stale ETag is 412") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto op = server.client(kOperator);
  const std::string id = test::submit(db, dir, {"--name", "etl", "--", "true"});
  auto got = server.client(kReader).Get("/api/v1/jobs/" + id);
  const std::string etag = got->get_header_value("ETag");
  CHECK(etag == "\"1\"");
  check_problem(server.client(kSubmitter).Patch("/api/v1/jobs/" + id, R"({"priority": "high"})", "application/json"),
                403, "needs operate");
  httplib::Headers match{{"If-Match", etag}};
  auto changed = op.Patch("/api/v1/jobs/" + id, match,
                          R"({"priority": "high", "retries": 5, "env": {"A": "1"}, "command": ["echo", "hi"]})",
                          "application/json");
  REQUIRE(changed);
  CHECK(changed->status == 200);
  CHECK(body_of(changed) == json{{"id", id}, {"version", 2}, {"changed", true}, {"dropped", 0}});
  CHECK(changed->get_header_value("ETag") == "\"2\"");
  auto job = test::get(db, dir, id);
  CHECK(job["priority"] == "high");
  CHECK(job["retry"]["retries"] == 5);
  CHECK(job["command"] == json::array({"echo", "hi"}));
  // The same If-Match again is stale: 412, exit code 6, nothing changed.
  auto stale = op.Patch("/api/v1/jobs/" + id, match, R"({"priority": "low"})", "application/json");
  check_problem(stale, 412, "");
  CHECK(json::parse(stale->body)["exit_code"] == 6);
  CHECK(test::get(db, dir, id)["priority"] == "high");
  // "" removes a name, as update --name "" does; other mistakes are 400.
  CHECK(body_of(op.Patch("/api/v1/jobs/" + id, R"({"name": ""})", "application/json"))["version"] == 3);
  CHECK(test::get(db, dir, id)["name"] == "");
  check_problem(op.Patch("/api/v1/jobs/" + id, "{}", "application/json"), 400, "nothing to update");
  check_problem(op.Patch("/api/v1/jobs/" + id, R"({"cwd": "/tmp"})", "application/json"), 400, "cannot be changed");
  check_problem(op.Patch("/api/v1/jobs/" + id, R"({"bogus": 1})", "application/json"), 400, "bogus");
  check_problem(op.Patch("/api/v1/jobs/" + id, httplib::Headers{{"If-Match", "soon"}}, R"({"retries": 1})",
                         "application/json"),
                400, "If-Match");
  bool by_on_call = false;
  for (const auto& e : cli_json(db, dir, {"history", id}))
    if (e["action"] == "update" && e["actor"] == "on-call") by_on_call = true;
  CHECK(by_on_call);
}
