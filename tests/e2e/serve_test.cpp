// jobctl serve (issue 19): the real server on 127.0.0.1, on both backends,
// called with a real HTTP client. Its answers are compared with what the
// CLI prints for the same store, since both come from common/ops.
#include <doctest/doctest.h>

#include <array>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/support/faults.hpp"
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
      : Server(db.dsn(), dir, std::move(extra), std::move(ca_file), {}) {}
  // On `dsn` (a StoreFreeze's), with `env` added.
  Server(const std::string& dsn, const test::TempDir& dir, std::vector<std::string> extra, std::string ca_file,
         std::vector<std::string> env)
      : ca(std::move(ca_file)) {
    std::vector<std::string> argv{JOBCTL_BIN, "--db", dsn, "serve", "--listen", "127.0.0.1:0", "--tokens-file",
                                  write_tokens(dir)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    process = std::make_unique<test::Process>(argv, env, dir, "serve");
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

// `url` with its cursor (?before=ID) in lower case, as ids may be given:
// the next page all the same (compared as given, it listed the first page
// again, and a client paging so never ended).
std::string lower_cursor(std::string url) {
  const size_t at = url.find("before=");
  if (at == std::string::npos) return url;
  for (size_t i = at + 7; i < url.size() && url[i] != '&'; ++i)
    url[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(url[i])));
  return url;
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

// A certificate for 127.0.0.1 and its key, made in `dir`: {cert, key}.
std::pair<std::string, std::string> self_signed(const test::TempDir& dir) {
  const std::string cert = dir.file("cert.pem"), key = dir.file("key.pem");
  const std::string make = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
                           "-addext subjectAltName=IP:127.0.0.1 -keyout '" + key + "' -out '" + cert + "' 2>/dev/null";
  REQUIRE(std::system(make.c_str()) == 0);
  return {cert, key};
}

// Sends `request` as it is over a new connection to 127.0.0.1:port, its
// sending side left open, and returns what comes back before the server
// closes or `wait_s` pass: a server waiting for more of the request
// answers nothing. It returns after the first answer, or with
// `until_close`, all the server sends before it closes.
std::string raw_exchange(int port, const std::string& request, int wait_s, bool until_close = false) {
  const int fd = test::connect_loopback(port);
  timeval tv{wait_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  std::string answer;
  char buf[4096];
  // Up to the end of the first answer's headers and its body, or a timeout.
  while (true) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
    const size_t end = answer.find("\r\n\r\n");
    std::smatch m;
    static const std::regex length("Content-Length: ([0-9]+)", std::regex::icase);
    if (!until_close && end != std::string::npos && std::regex_search(answer, m, length) &&
        answer.size() >= end + 4 + std::stoul(m[1]))
      break;
  }
  close(fd);
  return answer;
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
  CHECK(retried["runs"] == json::array({retried["run"]}));
  CHECK(body_of(op.Post("/api/v1/jobs/" + id + "/pause")) == json{{"id", id}, {"result", "paused"}, {"changed", true}});
  CHECK(body_of(op.Post("/api/v1/jobs/" + id + "/resume")) == json{{"id", id}, {"result", "resumed"}, {"changed", true}});

  // POST /schedules, GET /schedules/{id}/runs
  auto schedule = submitter.Post("/api/v1/schedules", R"({"command": "true", "cron": "0 3 * * *"})", "application/json");
  CHECK(schedule->status == 201);
  const std::string sid = body_of(schedule)["id"];
  CHECK(body_of(schedule)["schedule"]["cron"] == "0 3 * * *");
  CHECK(body_of(reader.Get("/api/v1/schedules/" + sid + "/runs")) == cli_json(db, dir, {"schedule", "runs", sid}));
  check_problem(submitter.Post("/api/v1/schedules", R"({"command": "true"})", "application/json"), 422, "cron");

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

TEST_CASE("serve: jobctl serve becomes jobctl-serve in its own process, and no other command loads the HTTP server") {
  // cpp-httplib and what it brings (OpenSSL, zlib, brotli) cost every
  // start-up about 7 ms: only jobctl-serve links them.
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  CHECK(std::filesystem::read_symlink(fmt::format("/proc/{}/exe", server.process->pid())).filename() == "jobctl-serve");
  CHECK(test::read_file(fmt::format("/proc/{}/maps", server.process->pid())).find("libcpp-httplib") != std::string::npos);

  const std::string id = test::submit(db, dir, {"--", "true"});  // no agent: it waits
  test::Process waiting({JOBCTL_BIN, "--db", db.dsn(), "wait", id, "--timeout", "60s"}, {}, dir, "wait");
  std::string maps;
  test::eventually(
      [&] {
        maps = test::read_file(fmt::format("/proc/{}/maps", waiting.pid()));
        return maps.find("libsqlite3.so") != std::string::npos;
      },
      "jobctl wait to be loaded");
  CHECK(maps.find("libcpp-httplib") == std::string::npos);
  CHECK(maps.find("libbrotlienc") == std::string::npos);

  // A jobctl without its jobctl-serve says so, with the store's exit code.
  std::filesystem::create_directory(dir.file("alone"));
  std::filesystem::copy_file(JOBCTL_BIN, dir.file("alone/jobctl"));
  test::Process alone({dir.file("alone/jobctl"), "--db", db.dsn(), "serve", "--tokens-file", write_tokens(dir)}, {}, dir,
                      "alone");
  CHECK(alone.wait() == 5);
  CHECK(alone.err().find("cannot run the HTTP server " + dir.file("alone/jobctl-serve")) != std::string::npos);
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

TEST_CASE("serve: after its SQLite file is deleted and made again, it reads and writes the new file") {
  if (test::test_backend() != config::Backend::sqlite) return;  // a file of its own
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir, {"--threads", "1"});  // one thread: its connection is the one that read the old file
  auto reader = server.client(kReader), submitter = server.client(kSubmitter);
  const std::string old_job = body_of(submitter.Post("/api/v1/jobs", R"({"command": "true"})", "application/json"))["id"];
  REQUIRE(reader.Get("/api/v1/jobs/" + old_job)->status == 200);
  // An operator resets the store: serve read and wrote on the deleted file.
  const std::string file = db.dsn().substr(std::string("sqlite:").size());
  for (const char* end : {"", "-wal", "-shm"}) std::filesystem::remove(file + end);
  REQUIRE(test::run_jobctl(db, dir, {"init"}).code == 0);
  CHECK(reader.Get("/api/v1/jobs/" + old_job)->status == 404);
  const std::string new_job = body_of(submitter.Post("/api/v1/jobs", R"({"command": "true"})", "application/json"))["id"];
  CHECK(cli_json(db, dir, {"get", new_job})["id"] == new_job);  // in the file the path names
  CHECK(body_of(reader.Get("/api/v1/jobs/" + new_job))["id"] == new_job);
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
  // Exit 2 → 422 for a body that is JSON, with the message `submit --file`
  // gives for the same line; 400 for one that is not, or a bad path or query.
  const std::string line = R"({"command": "true", "retries": -1})";
  auto cli = test::run_jobctl(db, dir, {"submit", "--file", "-"}, line + "\n");
  REQUIRE(cli.code == 2);
  auto r = c.Post("/api/v1/jobs", line, "application/json");
  check_problem(r, 422, "retries");
  auto problem = json::parse(r->body);
  CHECK(problem["exit_code"] == 2);
  CHECK(cli.err.find(problem["detail"].get<std::string>()) != std::string::npos);
  // The model's own checks name the body's keys too, not the CLI's flags.
  const std::string bounded = R"({"command": "true", "cron": "0 * * * *", "max_runs": 0})";
  auto cli_bounded = test::run_jobctl(db, dir, {"submit", "--file", "-"}, bounded + "\n");
  REQUIRE(cli_bounded.code == 2);
  CHECK(cli_bounded.err.find("field 'max_runs' must be 1 to") != std::string::npos);
  r = c.Post("/api/v1/jobs", bounded, "application/json");
  check_problem(r, 422, "field 'max_runs' must be 1 to");
  CHECK(cli_bounded.err.find(json::parse(r->body)["detail"].get<std::string>()) != std::string::npos);
  check_problem(c.Post("/api/v1/jobs", R"({"command": "true", "stagger": "5s"})", "application/json"), 422,
                "field 'stagger' goes with field 'on_each'");
  check_problem(c.Post("/api/v1/jobs", "{not json", "application/json"), 400, "not valid JSON");
  check_problem(c.Post("/api/v1/jobs", R"({"command": "true", "command": "false"})", "application/json"), 400,
                "twice");
  // A batch is all or nothing.
  check_problem(c.Post("/api/v1/jobs", R"([{"command": "true"}, {"command": 5}])", "application/json"), 422, "job 2");
  CHECK(cli_json(db, dir, {"ls"}).empty());
  // So is a job the store refuses, by its place: its retry delay is longer
  // than its queue's longest.
  REQUIRE(test::run_jobctl(db, dir, {"queue", "set", "slow", "--max-retry-delay", "1m"}).code == 0);
  check_problem(c.Post("/api/v1/jobs", R"([{"command": "true"}, {"command": "true", "queue": "slow", "retry_delay": "2m"}])",
                       "application/json"),
                422, "job 2: ");
  check_problem(c.Post("/api/v1/jobs", R"({"command": "true", "queue": "slow", "retry_delay": "2m"})", "application/json"),
                422, "field 'max_retry_delay' 1m is shorter than field 'retry_delay' 2m, with queue slow's retry defaults");
  CHECK(cli_json(db, dir, {"ls"}).empty());
  // An update's checks, made in the store, name the keys as well.
  const std::string scheduled = test::submit(db, dir, {"--cron", "0 * * * *", "--", "true"});
  check_problem(c.Patch("/api/v1/jobs/" + scheduled, R"({"starts_at": "2030-01-02 00:00", "ends_at": "2030-01-01 00:00"})",
                        "application/json"),
                422, "field 'ends_at' is before field 'starts_at'");
  // Exit 3 → 404, exit 4 → 409.
  auto missing = c.Get("/api/v1/jobs/" + kUnknownId);
  check_problem(missing, 404, "no job or run");
  CHECK(json::parse(missing->body)["exit_code"] == 3);
  check_problem(c.Get("/api/v1/jobs/not-an-id"), 400, "invalid id");
  check_problem(c.Get("/api/v1/jobs/%00"), 400, "the path is not UTF-8 text, or holds a NUL byte");
  const std::string id = test::submit(db, dir, {"--", "true"});
  CHECK(c.Delete("/api/v1/jobs/" + id)->status == 200);
  check_problem(c.Delete("/api/v1/jobs/" + id), 409, "");
  check_problem(c.Get("/api/v1/jobs?limit=0"), 400, "limit");
  // A bad path or query stays 400 with a well-formed body; a DAG document
  // is the body, its options the query.
  check_problem(c.Patch("/api/v1/jobs/not-an-id", R"({"priority": "high"})", "application/json"), 400, "invalid id");
  check_problem(c.Patch("/api/v1/queues/no%20spaces", R"({"retries": 1})", "application/json"), 400, "queue");
  check_problem(c.Patch("/api/v1/queues/q", R"({"rate": 1e-300})", "application/json"), 422, "slower than 1 run a day");
  check_problem(c.Patch("/api/v1/queues/q", R"({"rate": "1e-300/s"})", "application/json"), 422,
                "slower than 1 run a day");
  const std::string dag = R"({"name": "d", "jobs": {"a": {"command": "true"}}})";
  check_problem(c.Post("/api/v1/dags?on_failure=sometimes", dag, "application/json"), 400, "sometimes");
  check_problem(c.Post("/api/v1/dags?cron=61%20*%20*%20*%20*", dag, "application/json"), 400, "minute");
  // An unset variable in ?cron=$CRON: the DAG ran now.
  check_problem(c.Post("/api/v1/dags?cron=", dag, "application/json"), 400, "?cron= is empty");
  check_problem(c.Post("/api/v1/dags", "{\"name\": ", "application/json"), 400, "not valid JSON");
  check_problem(c.Post("/api/v1/dags", R"({"name": "d", "jobs": {"a": {"command": "true", "depends_on": ["b"]}}})",
                       "application/json"),
                422, "b");
  // Bytes that are not UTF-8, in a body or a header, are the client's
  // mistake: they were answered 500, as a bug of the server's.
  check_problem(c.Post("/api/v1/jobs", "\xff\xfe", "application/json"), 400, "not valid JSON");
  check_problem(c.Patch("/api/v1/jobs/" + scheduled, "{\"name\": \"\xff\"}", "application/json"), 400, "UTF-8");
  check_problem(c.Post("/api/v1/dags", "{\"name\": \"\xff\"", "application/json"), 400, "not valid JSON");
  // What no route answers, a method a path does not take, and a body over --max-body.
  check_problem(c.Get("/api/v1/nothing-here"), 404, "no route GET /api/v1/nothing-here");
  const std::vector<std::array<std::string, 3>> wrong_methods{
      {"PUT", "/api/v1/jobs", "GET, HEAD, POST"},
      {"DELETE", "/api/v1/jobs", "GET, HEAD, POST"},
      {"PUT", "/api/v1/jobs/" + scheduled, "DELETE, GET, HEAD, PATCH"},
      {"POST", "/healthz", "GET, HEAD"},
      {"TRACE", "/api/v1/jobs", "GET, HEAD, POST"},  // one cpp-httplib answered 400 (a tester)
      {"DELETE", "/ui/login", "GET, HEAD, POST"},  // GET: a console file of that name
      {"GET", "/api/v1/dead-letter/replay", "POST"}};  // not GET /dead-letter/{id}: "invalid id"
  for (const auto& [method, path, allow] : wrong_methods) {
    CAPTURE(method);
    CAPTURE(path);
    httplib::Request req;
    req.method = method;
    req.path = path;
    auto answer = c.send(req);
    check_problem(answer, 405, method + " " + path + " is not served; it takes " + allow);
    CHECK(answer->get_header_value("Allow") == allow);
  }
  // A method no server knows is 501, and what follows it is not read as
  // requests: its headers were answered 400 each, and a pipelined GET.
  const std::string unknown = raw_exchange(
      server.port, "FOO /api/v1/jobs HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 10, true);
  CHECK_MESSAGE(unknown.rfind("HTTP/1.1 501 Not Implemented\r\n", 0) == 0, unknown);
  CHECK_MESSAGE(unknown.find("the method FOO is not one the server knows") != std::string::npos, unknown);
  CHECK_MESSAGE(unknown.find("HTTP/1.1", 1) == std::string::npos, unknown);
  check_problem(c.Post("/api/v1/jobs", std::string(8192, ' '), "application/json"), 413, "--max-body");
  CHECK(cli_json(db, dir, {"ls"}).size() == 2);  // the schedule submitted above, and the job cancelled
}

TEST_CASE("serve: the Idempotency-Key header makes a retried POST one job, or one DAG run") {
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
  // The header's key is held to the body's rules: it was stored as it came.
  check_problem(c.Post("/api/v1/jobs", {{"Idempotency-Key", std::string(256, 'k')}}, R"({"command": "true"})",
                       "application/json"),
                400, "the Idempotency-Key header is 256 bytes, more than 255");
  check_problem(c.Post("/api/v1/jobs", {{"Idempotency-Key", "\xff\xfe"}}, R"({"command": "true"})", "application/json"),
                400, "the Idempotency-Key header is not valid UTF-8");
  CHECK(cli_json(db, dir, {"ls"}).size() == 1);
  auto batch = c.Post("/api/v1/jobs", R"([{"command": "true"}, {"command": "false"}])", "application/json");
  CHECK(batch->status == 201);
  CHECK(body_of(batch).size() == 2);
  CHECK(cli_json(db, dir, {"ls"}).size() == 3);

  // POST /dags too: the DAG's key, a retried POST one DAG run.
  const std::string dag = R"({"name": "report", "jobs": {"a": {"command": "true"}}})";
  auto dag_first = c.Post("/api/v1/dags", key, dag, "application/json");
  auto dag_again = c.Post("/api/v1/dags", key, dag, "application/json");
  CHECK(dag_first->status == 201);
  CHECK(dag_again->status == 200);
  CHECK(body_of(dag_first)["dag_run_id"] == body_of(dag_again)["dag_run_id"]);
  CHECK(cli_json(db, dir, {"dag", "ls"}).size() == 1);
  check_problem(c.Post("/api/v1/dags", {{"Idempotency-Key", std::string(256, 'k')}}, dag, "application/json"), 400,
                "the Idempotency-Key header is 256 bytes, more than 255");
  CHECK(c.Post("/api/v1/dags", dag, "application/json")->status == 201);
  CHECK(cli_json(db, dir, {"dag", "ls"}).size() == 2);
}

TEST_CASE("serve: a POST without a body or its length is answered at once, as one with an empty body") {
  // RFC 9112, 6.3: a request with neither Content-Length nor
  // Transfer-Encoding has no body. `curl -X POST` sends such a request,
  // and the server waited for the client to close, past its --timeout:
  // the client gave up, and the pause was done after it had.
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir, {"--timeout", "10m"});
  const std::string id = test::submit(db, dir, {"--", "true"});
  const std::string answer =
      raw_exchange(server.port,
                   fmt::format("POST /api/v1/jobs/{}/pause HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\r\n",
                               id, kOperator),
                   60);
  CAPTURE(answer);
  REQUIRE(answer.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(answer.find("\"paused\"") != std::string::npos);
  CHECK(test::get(db, dir, id)["paused"] == true);
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
  // What it says matches what is served (a tester): the purge's age is
  // required (400 without it), and 412 is only where an If-Match is taken.
  const auto& purge = doc["paths"]["/dead-letter"]["delete"]["parameters"];
  REQUIRE(purge.size() == 1);
  CHECK(purge[0]["name"] == "older_than");
  CHECK(purge[0]["required"] == true);
  CHECK(doc["paths"]["/jobs/{id}"]["patch"]["responses"].contains("412"));
  CHECK_FALSE(doc["paths"]["/queues/{name}"]["patch"]["responses"].contains("412"));
}

TEST_CASE("serve: SIGTERM stops it with exit 0, and the access log never holds a token") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  CHECK(server.client(kReader).Get("/api/v1/jobs")->status == 200);
  CHECK(server.client("wrong-token-but-long-enough").Get("/api/v1/jobs")->status == 401);
  // Terminal escapes in a path anyone may send: they reached the log raw.
  CHECK(server.client("").Get("/api/v1/jobs/x%1b%5b2J%1b%5d0;pwned%07%c2%9b%ff")->status == 401);
  server.process->signal(SIGTERM);
  CHECK(server.process->wait() == 0);
  const std::string log = server.process->err();
  CHECK(log.find("path=/api/v1/jobs") != std::string::npos);
  CHECK(log.find('\x1b') == std::string::npos);
  CHECK(log.find('\x07') == std::string::npos);
  CHECK(log.find("\xc2\x9b") == std::string::npos);
  CHECK(log.find('\xff') == std::string::npos);
  CHECK_MESSAGE(log.find(R"(path="/api/v1/jobs/x\u001b[2J\u001b]0;pwned\u0007\u009b\ufffd")") != std::string::npos, log);
  CHECK(log.find("token=reader") != std::string::npos);
  CHECK(log.find(kReader) == std::string::npos);
  CHECK(log.find("wrong-token") == std::string::npos);
}

TEST_CASE("serve: SIGTERM closes an idle kept-alive connection at once, not after --keep-alive") {
  test::TempDir dir;
  test::TestDb db(dir);
  for (const char* bad : {"0s", "500ms", "2h", "soon"}) {
    auto r = test::run_jobctl(db, dir, {"serve", "--listen", "127.0.0.1:0", "--tokens-file", write_tokens(dir),
                                        "--keep-alive", bad});
    CHECK_MESSAGE(r.code == 2, bad);
    CHECK_MESSAGE(r.err.find("--keep-alive") != std::string::npos, r.err);
  }
  // Kept alive for an hour: the server stopped only once it had waited
  // that out (a browser's console keeps such a connection).
  Server server(db, dir, {"--keep-alive", "1h"});
  // Closed before the server is stopped for good, should the test fail.
  struct Connection {
    int fd;
    ~Connection() { close(fd); }
  } connection{test::connect_loopback(server.port)};
  const int fd = connection.fd;
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  char buf[512];
  std::string answer;  // headers and body come in writes of their own
  while (answer.find("\r\n\r\nok\n") == std::string::npos) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    REQUIRE(n > 0);
    answer.append(buf, static_cast<size_t>(n));
  }
  // Answered; the connection stays open.
  server.process->signal(SIGTERM);
  CHECK(server.process->wait(std::chrono::seconds(60)) == 0);
  CHECK(recv(fd, buf, sizeof buf, 0) == 0);  // closed by the server
}

TEST_CASE("serve: a request under way when SIGTERM comes is still read and answered") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  const int fd = test::connect_loopback(server.port);
  const std::string start = "GET /healthz HTTP/1.1\r\n";
  REQUIRE(send(fd, start.data(), start.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(start.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // its first bytes read
  server.process->signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // stopping meanwhile
  // More of it, then a pause: the server waits for the rest anew.
  const std::string more = "Host: x\r\n";
  REQUIRE(send(fd, more.data(), more.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(more.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(send(fd, "\r\n", 2, MSG_NOSIGNAL) == 2);
  timeval tv{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[512];
  const ssize_t n = recv(fd, buf, sizeof buf, 0);
  close(fd);
  REQUIRE(n > 0);  // it was cut off, unanswered
  CHECK(std::string(buf, static_cast<size_t>(n)).rfind("HTTP/1.1 200", 0) == 0);
  CHECK(server.process->wait(std::chrono::seconds(60)) == 0);
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
  // Its columns swapped, the token stands where the role goes (a tester:
  // "unknown role '<the token>'").
  std::ofstream(bad) << "ci-bot " << kSubmitter << " submit\n";
  r = test::run_jobctl(db, dir, {"serve", "--listen", "127.0.0.1:0", "--tokens-file", bad});
  CHECK(r.code == 2);
  CHECK(r.err.find("are the columns swapped?") != std::string::npos);
  CHECK(r.err.find(kSubmitter) == std::string::npos);
  r = test::run_jobctl(db, dir, {"serve", "--listen", "nowhere", "--tokens-file", write_tokens(dir)});
  CHECK(r.code == 2);
  CHECK(r.err.find("invalid --listen") != std::string::npos);
}

TEST_CASE("serve: --tls-cert and --tls-key serve HTTPS that a client verifies") {
  test::TempDir dir;
  test::TestDb db(dir);
  const auto [cert, key] = self_signed(dir);
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

TEST_CASE("serve: over TLS too, a client sending a record a byte at a time is cut off after --timeout") {
  // OpenSSL reads a record in blocking reads after one poll: the deadline
  // held there only once read(2) was interposed too (found in review).
  test::TempDir dir;
  test::TestDb db(dir);
  const auto [cert, key] = self_signed(dir);
  Server server(db, dir, {"--tls-cert", cert, "--tls-key", key, "--timeout", "2s"}, cert);
  const int fd = test::connect_loopback(server.port);
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  REQUIRE(SSL_connect(ssl) == 1);
  // Past OpenSSL: a record's header for 16 KiB of data, then a byte every 200 ms for up to 30 s.
  const unsigned char header[] = {0x17, 0x03, 0x03, 0x40, 0x00};
  REQUIRE(send(fd, header, sizeof header, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof header));
  bool closed = false;
  for (int i = 0; i < 150 && !closed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);  // a session ticket, then the end
    closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || send(fd, "x", 1, MSG_NOSIGNAL) < 0;
  }
  CHECK(closed);
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  close(fd);
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
  // The dead run itself, by its id: "not in the dead-letter queue (its run is dead)".
  const std::string replayed = test::get(db, dir, id)["run"]["replay_of"];
  check_problem(op.Post("/api/v1/dead-letter/" + replayed + "/replay"), 409, replayed + " was run again already");
  check_problem(op.Post("/api/v1/dead-letter/replay", R"({"ids": []})", "application/json"), 422, "non-empty");
  check_problem(op.Post("/api/v1/dead-letter/replay", R"({"all": true, "ids": ["x"]})", "application/json"), 422,
                "either");
  auto rest = body_of(op.Post("/api/v1/dead-letter/replay", R"({"all": true, "queue": "default"})", "application/json"));
  CHECK(rest["replayed"] == 2);
  CHECK(cli_json(db, dir, {"dlq", "ls"}).empty());
  CHECK(body_of(op.Delete("/api/v1/dead-letter?older_than=30d")) == json{{"purged", 0}});
  check_problem(op.Delete("/api/v1/dead-letter?older_than=0s"), 400, "older_than must be longer than 0s");
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
  CHECK(deleted == json{{"id", id}, {"result", "deleted"}, {"runs_cancelled", 1}, {"runs_skipped", 0}});
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

  // The gates of issue 20 as query parameters: the same phrases as the CLI.
  for (const auto& [query, flags] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"max_ready=0", {"--max-ready", "0"}},
           {"max_failure_rate=0", {"--max-failure-rate", "0"}},
           {"max_stuck=0&stuck_after=1s", {"--max-stuck", "0", "--stuck-after", "1s"}}}) {
    CAPTURE(query);
    auto answer = body_of(reader.Get("/api/v1/check?" + query));
    std::vector<std::string> args{"check"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto by_cli = test::run_jobctl(db, dir, args);
    CHECK(answer["ok"] == (by_cli.code == 0));
    for (const auto& b : answer["breaches"]) CHECK(by_cli.out.find(b.get<std::string>()) != std::string::npos);
  }
  check_problem(reader.Get("/api/v1/check?max_failure_rate=lots"), 400, "max_failure_rate");
  check_problem(reader.Get("/api/v1/check?max_dlq=0&stuck_after=1s"), 400, "stuck_after goes with max_stuck");
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
  // "" removes a name, as update --name "" does; other mistakes are 422,
  // and a bad If-Match header 400.
  CHECK(body_of(op.Patch("/api/v1/jobs/" + id, R"({"name": ""})", "application/json"))["version"] == 3);
  CHECK(test::get(db, dir, id)["name"] == "");
  check_problem(op.Patch("/api/v1/jobs/" + id, "{}", "application/json"), 422, "nothing to update");
  check_problem(op.Patch("/api/v1/jobs/" + id, R"({"cwd": "/tmp"})", "application/json"), 422, "cannot be changed");
  check_problem(op.Patch("/api/v1/jobs/" + id, R"({"bogus": 1})", "application/json"), 422, "bogus");
  check_problem(op.Patch("/api/v1/jobs/" + id, httplib::Headers{{"If-Match", "soon"}}, R"({"retries": 1})",
                         "application/json"),
                400, "If-Match");
  // If-Match as RFC 9110 has it: * is any version, a list matches if one
  // of its tags does, and a tag that names no version matches none.
  auto patch_if = [&](const std::string& tags, int retries) {
    return op.Patch("/api/v1/jobs/" + id, httplib::Headers{{"If-Match", tags}},
                    fmt::format(R"({{"retries": {}}})", retries), "application/json");
  };
  CHECK(body_of(patch_if("*", 2))["version"] == 4);
  CHECK(body_of(patch_if(R"("1", "4", "9")", 3))["version"] == 5);
  check_problem(patch_if(R"("abc")", 4), 412, "names no version of job");
  check_problem(patch_if(R"("1", "2")", 4), 412, "it is at version 5, not 1");
  check_problem(patch_if(R"("5"x)", 4), 400, "not a list of entity tags");
  CHECK(test::get(db, dir, id)["retry"]["retries"] == 3);
  bool by_on_call = false;
  for (const auto& e : cli_json(db, dir, {"history", id}))
    if (e["action"] == "update" && e["actor"] == "on-call") by_on_call = true;
  CHECK(by_on_call);
}

TEST_CASE("serve: GET /metrics shows the whole store per queue, passes promtool, and asks a token with --metrics-token") {
  test::TempDir dir;
  test::TestDb db(dir);
  test::submit(db, dir, {"--queue", "reports", "--", "true"});
  test::submit(db, dir, {"--queue", "reports", "--", "true"});
  test::submit(db, dir, {"--queue", "reports", "--in", "1h", "--", "true"});
  REQUIRE(test::run_jobctl(db, dir, {"queue", "set", "idle", "--retries", "2"}).code == 0);
  Server server(db, dir);
  auto r = server.client().Get("/metrics");  // no token needed
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0) == 0);
  const std::string text = r->body;
  CAPTURE(text);
  CHECK(text.find("jobctl_queue_ready{queue=\"reports\"} 2\n") != std::string::npos);
  CHECK(text.find("jobctl_queue_later{queue=\"reports\"} 1\n") != std::string::npos);
  CHECK(text.find("jobctl_queue_running{queue=\"reports\"} 0\n") != std::string::npos);
  CHECK(text.find("jobctl_queue_ready{queue=\"idle\"} 0\n") != std::string::npos);  // a configured, empty queue
  CHECK(text.find("jobctl_dead_letter_runs{queue=\"reports\"} 0\n") != std::string::npos);
  CHECK(text.find("jobctl_workers_live{state=\"active\"} 0\n") != std::string::npos);
  CHECK(text.find("jobctl_workers_live{state=\"draining\"} 0\n") != std::string::npos);
  CHECK(text.find("jobctl_scheduler_leader_present 0\n") != std::string::npos);
  std::smatch oldest;
  REQUIRE(std::regex_search(text, oldest, std::regex(R"(jobctl_queue_oldest_ready_seconds\{queue="reports"\} (\S+))")));
  CHECK(std::stod(oldest[1]) > 0);
  {
    std::ofstream(dir.file("metrics.txt")) << text;
    const std::string check = "promtool check metrics < " + dir.file("metrics.txt") + " > " + dir.file("promtool.out") + " 2>&1";
    CHECK_MESSAGE(std::system(check.c_str()) == 0, test::read_file(dir.file("promtool.out")));
  }

  // An agent, the leader: live and present, and a run it finished is no longer ready.
  auto agent = test::start_agent(db, dir, {"--queues", "reports"});
  test::eventually(
      [&] {
        const std::string t = server.client().Get("/metrics")->body;
        return t.find("jobctl_workers_live{state=\"active\"} 1\n") != std::string::npos &&
               t.find("jobctl_scheduler_leader_present 1\n") != std::string::npos &&
               t.find("jobctl_queue_ready{queue=\"reports\"} 0\n") != std::string::npos;
      },
      "the agent shows in /metrics");
  // Draining (SIGTERM with a job running), it is live but takes no work.
  const std::string started = dir.file("started");
  test::submit(db, dir, {"--queue", "reports", "--", "touch " + started + "; sleep 30"});
  test::eventually([&] { return access(started.c_str(), F_OK) == 0; }, "the job to start");
  agent->signal(SIGTERM);
  test::eventually(
      [&] {
        const std::string t = server.client().Get("/metrics")->body;
        return t.find("jobctl_workers_live{state=\"active\"} 0\n") != std::string::npos &&
               t.find("jobctl_workers_live{state=\"draining\"} 1\n") != std::string::npos;
      },
      "the draining agent shows as draining, not active");

  test::TempDir dir2;
  Server guarded(db, dir2, {"--metrics-token"});
  CHECK(guarded.client().Get("/metrics")->status == 401);
  CHECK(guarded.client(kReader).Get("/metrics")->status == 200);
}

TEST_CASE("serve: /metrics without a token says the store does not answer, and where only to a token") {
  // Found by a tester: anyone who could reach the port read the DSN's
  // host, port, user and database in the 503 of /metrics, whose default
  // needs no token.
  if (test::test_backend() != config::Backend::postgres) return;  // SQLite's reads are not held by its lock
  test::TempDir dir;
  test::TestDb db(dir);
  test::StoreFreeze store(db);
  // One thread: each request finds the store this server already opened
  // (a request on a new thread failed at its connect, before the cache).
  Server server(store.dsn(), dir, {"--threads", "1"}, "", {"JOBCTL_STORE_TIMEOUT=2s"});
  REQUIRE(server.client().Get("/metrics")->status == 200);
  // /metrics answers from what it read within the last second (a 200 of
  // the store as it was): past that second, a scrape reads the store.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  store.freeze();
  auto anyone = server.client().Get("/metrics");
  REQUIRE(anyone);
  CHECK(anyone->status == 503);
  CAPTURE(anyone->body);
  CHECK(json::parse(anyone->body)["detail"] == "the store does not answer: the server's log says why");
  CHECK(anyone->body.find("127.0.0.1") == std::string::npos);
  CHECK(anyone->body.find("postgres") == std::string::npos);
  auto reader = server.client(kReader).Get("/metrics");
  REQUIRE(reader);
  CHECK(reader->status == 503);
  CHECK(reader->body.find("127.0.0.1") != std::string::npos);  // a token holder is told where
  store.thaw();
  CHECK(server.process->err().find("metrics_unanswered") != std::string::npos);
}

TEST_CASE("serve: GET /jobs pages with a cursor: the Link header's next page, until a short one") {
  test::TempDir dir;
  test::TestDb db(dir);
  std::set<std::string> submitted;
  for (int i = 0; i < 5; ++i) submitted.insert(test::submit(db, dir, {"--in", "1h", "--", "true"}));
  Server server(db, dir);
  auto c = server.client(kReader);
  std::vector<std::string> seen;
  std::string url = "/api/v1/jobs?limit=2&queue=default";
  int pages = 0;
  while (!url.empty() && pages < 10) {
    auto r = c.Get(url);
    REQUIRE(r);
    REQUIRE(r->status == 200);
    ++pages;
    for (const auto& j : json::parse(r->body)) seen.push_back(j["id"]);
    std::smatch next;
    const std::string link = r->get_header_value("Link");
    url = std::regex_search(link, next, std::regex(R"(^<([^>]+)>; rel="next"$)")) ? next[1].str() : "";
    if (!url.empty()) CHECK(url.find("queue=default") != std::string::npos);  // the filter stays
    url = lower_cursor(url);
  }
  CHECK(pages == 3);  // 2 + 2 + 1
  CHECK(std::set<std::string>(seen.begin(), seen.end()) == submitted);
  CHECK(seen.size() == 5);
  CHECK(std::is_sorted(seen.rbegin(), seen.rend()));  // newest first, across pages
}

TEST_CASE("serve: the console logs in by ?token= or its form into an HttpOnly cookie, and is CSRF-safe") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto c = server.client();
  auto login_page = c.Get("/ui/");
  REQUIRE(login_page);
  CHECK(login_page->status == 200);
  CHECK(login_page->body.find("login-form") != std::string::npos);
  CHECK(login_page->get_header_value("Content-Security-Policy").find("script-src 'self'") != std::string::npos);
  CHECK(c.Get("/ui/app.js")->status == 200);
  CHECK(c.Get("/ui/app.js")->get_header_value("Content-Type") == "text/javascript; charset=utf-8");
  CHECK(c.Get("/ui/nothing.js")->status == 404);

  auto bad = c.Get("/ui/?token=not-a-token-of-this-server");
  CHECK(bad->status == 303);
  CHECK(bad->get_header_value("Location") == "/ui/?error=bad-token");

  // A link on another site does not log the browser in (login CSRF): the form instead.
  auto forced = c.Get("/ui/?token=" + kOperator, {{"Sec-Fetch-Site", "cross-site"}});
  CHECK(forced->status == 303);
  CHECK(forced->get_header_value("Location") == "/ui/");
  CHECK_FALSE(forced->has_header("Set-Cookie"));

  auto good = c.Get("/ui/?token=" + kOperator, {{"Sec-Fetch-Site", "none"}});
  REQUIRE(good);
  CHECK(good->status == 303);
  CHECK(good->get_header_value("Location") == "/ui/");  // the token leaves the address bar
  const std::string set_cookie = good->get_header_value("Set-Cookie");
  CAPTURE(set_cookie);
  CHECK(set_cookie.find("HttpOnly") != std::string::npos);
  CHECK(set_cookie.find("SameSite=Strict") != std::string::npos);
  CHECK(set_cookie.find(kOperator) == std::string::npos);  // hex-encoded, not in clear
  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));

  // The form: the same cookie; a bad token back to the form.
  httplib::Params form{{"token", kOperator}};
  auto posted = c.Post("/ui/login", form);
  CHECK(posted->status == 303);
  CHECK(posted->get_header_value("Set-Cookie").substr(0, cookie.size()) == cookie);
  CHECK(c.Post("/ui/login", httplib::Params{{"token", "nope"}})->get_header_value("Location") == "/ui/?error=bad-token");
  CHECK(c.Post("/ui/login", {{"Origin", "http://evil.example"}}, form)->status == 403);

  // Signed in: the console, and the API by cookie.
  httplib::Headers signed_in{{"Cookie", cookie}};
  CHECK(c.Get("/ui/", signed_in)->body.find("login-form") == std::string::npos);
  CHECK(body_of(c.Get("/api/v1/whoami", signed_in)) == json{{"name", "on-call"}, {"role", "operate"}});
  // Behind a proxy that passes on its own Basic authentication, the cookie still counts.
  httplib::Headers proxied{{"Cookie", cookie}, {"Authorization", "Basic dXNlcjpwYXNz"}};
  CHECK(body_of(c.Get("/api/v1/whoami", proxied))["name"] == "on-call");
  CHECK(c.Get("/api/v1/jobs", signed_in)->status == 200);

  // A change by cookie needs the console's header, from this origin.
  const std::string job = R"({"command": "true", "at": "2099-01-01T00:00:00Z"})";
  auto refused = c.Post("/api/v1/jobs", signed_in, job, "application/json");
  check_problem(refused, 403, "X-Jobctl-Console");
  httplib::Headers console{{"Cookie", cookie}, {"X-Jobctl-Console", "1"}};
  auto foreign = console;
  foreign.emplace("Origin", "http://evil.example");
  check_problem(c.Post("/api/v1/jobs", foreign, job, "application/json"), 403, "another origin");
  CHECK(cli_json(db, dir, {"ls"}).empty());  // nothing was submitted
  auto same = console;
  same.emplace("Origin", "http://127.0.0.1:" + std::to_string(server.port));
  auto made = c.Post("/api/v1/jobs", same, job, "application/json");
  CHECK(made->status == 201);
  auto history = cli_json(db, dir, {"history", body_of(made)["id"]});
  REQUIRE(!history.empty());
  CHECK(history.back()["actor"] == "on-call");  // the cookie's token is the actor

  // Logging out clears the cookie; a Bearer token that is wrong is not saved by a good cookie.
  auto out = c.Post("/ui/logout", console, "", "text/plain");
  CHECK(out->status == 204);
  CHECK(out->get_header_value("Set-Cookie").find("Max-Age=0") != std::string::npos);
  httplib::Headers both{{"Cookie", cookie}, {"Authorization", "Bearer wrong-token-but-long-enough"}};
  CHECK(c.Get("/api/v1/jobs", both)->status == 401);
}

TEST_CASE("serve: schedules, DAG runs and the stats series answer as the CLI does, and DAG runs are controlled") {
  test::TempDir dir;
  test::TestDb db(dir);
  const std::string sched = test::submit(db, dir, {"--cron", "0 3 * * *", "--tz", "UTC", "--", "true"});
  Server server(db, dir);
  auto reader = server.client(kReader), op = server.client(kOperator);

  auto schedules = body_of(reader.Get("/api/v1/schedules"));
  CHECK(schedules == cli_json(db, dir, {"schedules", "ls"}));
  REQUIRE(schedules.size() == 1);
  CHECK(schedules[0]["id"] == sched);
  CHECK(schedules[0]["next_fire"].get<std::string>().find("T03:00:00") != std::string::npos);
  auto triggered = body_of(op.Post("/api/v1/schedules/" + sched + "/trigger"));
  CHECK(triggered["id"] == sched);
  CHECK(body_of(reader.Get("/api/v1/schedules/" + sched + "/runs"))[0]["id"] == triggered["run"]);
  CHECK(reader.Post("/api/v1/schedules/" + sched + "/trigger")->status == 403);

  const std::string dag_run = body_of(server.client(kSubmitter).Post("/api/v1/dags", kDag, "application/json"))["dag_run_id"];
  CHECK(body_of(reader.Get("/api/v1/dags?limit=5")) == cli_json(db, dir, {"dag", "ls", "--limit", "5"}));
  CHECK(body_of(op.Post("/api/v1/dags/" + dag_run + "/pause")) ==
        json{{"id", dag_run}, {"result", "paused"}, {"changed", true}});
  CHECK(body_of(op.Post("/api/v1/dags/" + dag_run + "/resume"))["changed"] == true);
  auto cancelled = body_of(op.Post("/api/v1/dags/" + dag_run + "/cancel"));
  CHECK(cancelled["result"] == "cancelled");
  CHECK(cancelled["nodes"] == 2);
  CHECK(body_of(reader.Get("/api/v1/dags/" + dag_run + "/status"))["status"] == "cancelled");
  // A finished run is not paused, as it is not cancelled (it answered "paused").
  check_problem(op.Post("/api/v1/dags/" + dag_run + "/pause"), 409, "has finished; there is nothing to pause");
  CHECK(body_of(op.Post("/api/v1/dags/" + dag_run + "/retry"))["nodes"] == 2);

  // The series: every step present, oldest first; the run that succeeded counted once.
  const std::string done = test::submit(db, dir, {"--", "true"});
  auto agent = test::start_agent(db, dir, {});
  test::eventually([&] { return test::get(db, dir, done)["run"]["status"] == "succeeded"; }, "the job succeeds");
  auto series = body_of(reader.Get("/api/v1/stats/series?since=10m&step=1m"));
  CHECK(series["since_s"] == 600);
  CHECK(series["step_s"] == 60);
  REQUIRE(series["points"].size() == 10);
  int64_t succeeded = 0;
  for (const auto& p : series["points"]) succeeded += p["succeeded"].get<int64_t>();
  CHECK(succeeded >= 1);  // the job, and the DAG's nodes once retried
  CHECK(series["points"][0]["at"] < series["points"][9]["at"]);
  check_problem(reader.Get("/api/v1/stats/series?since=1d&step=1s"), 400, "1,440 steps");
  CHECK(series["points"][0]["failure_rate"].is_null());  // no attempt ended that long ago
}

TEST_CASE("serve: concurrent POSTs share commits, yet each succeeds or fails alone, with its own actor") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir, {"--threads", "16"});
  // 16 clients at once, 8 requests each: ci-bot's and on-call's valid jobs,
  // a fan-out no agent matches (refused: 409), and one Idempotency-Key sent by all.
  std::vector<std::thread> clients;
  std::mutex mutex;
  std::map<std::string, int> statuses;  // "actor:status" → count
  std::set<std::string> keyed_ids;
  for (int i = 0; i < 16; ++i)
    clients.emplace_back([&, i] {
      const std::string& token = i % 2 == 0 ? kSubmitter : kOperator;
      auto c = server.client(token);
      for (int k = 0; k < 8; ++k) {
        std::string body = R"({"command": "true", "at": "2099-01-01T00:00:00Z"})";
        httplib::Headers headers;
        if (k == 3) body = R"({"command": "true", "on_each": "role=nowhere"})";
        if (k == 5) headers.emplace("Idempotency-Key", "one-for-all");
        auto r = c.Post("/api/v1/jobs", headers, body, "application/json");
        std::lock_guard lock(mutex);
        if (!r) {
          ++statuses["no answer"];
          continue;
        }
        ++statuses[(k == 3 ? "fan-out:" : k == 5 ? "keyed:" : i % 2 == 0 ? "ci-bot:" : "on-call:") +
                   std::to_string(r->status)];
        if (k == 5 && r->status < 300) keyed_ids.insert(json::parse(r->body)["id"]);
      }
    });
  for (auto& t : clients) t.join();
  CAPTURE(json(statuses).dump());
  CHECK(statuses["ci-bot:201"] == 8 * 6);
  CHECK(statuses["on-call:201"] == 8 * 6);
  CHECK(statuses["fan-out:409"] == 16);
  CHECK(statuses["keyed:201"] == 1);
  CHECK(statuses["keyed:200"] == 15);
  CHECK(keyed_ids.size() == 1);
  CHECK(cli_json(db, dir, {"ls", "--limit", "1000"}).size() == 8 * 6 * 2 + 1);
  std::map<std::string, int64_t> by_actor;
  for (const auto& row : db.open()->connection().query("SELECT created_by, count(*) FROM jobs GROUP BY created_by"))
    by_actor[row.text(0)] = row.i64(1);
  CHECK(by_actor["ci-bot"] + by_actor["on-call"] == 97);  // the keyed job is either's
  CHECK(by_actor["ci-bot"] >= 48);
  CHECK(by_actor["on-call"] >= 48);

  // The requests shared commits: the server's counters, in /metrics.
  const std::string text = server.client().Get("/metrics")->body;
  std::smatch requests, commits;
  REQUIRE(std::regex_search(text, requests, std::regex(R"(jobctl_serve_submit_requests_total (\d+))")));
  REQUIRE(std::regex_search(text, commits, std::regex(R"(jobctl_serve_submit_commits_total (\d+))")));
  CAPTURE(text);
  CHECK(std::stoi(requests[1]) >= 97);    // every accepted request (a group retried alone counts once)
  CHECK(std::stoi(commits[1]) < std::stoi(requests[1]));
}

TEST_CASE("serve: PATCH /queues/{name} sets limits and retry defaults as queue set does, admin only, all or nothing") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto admin = server.client(kAdmin);
  auto set = admin.Patch("/api/v1/queues/reports", R"({"max_concurrent": 4, "rate": "120/m", "retries": 7})",
                         "application/json");
  REQUIRE(set);
  CHECK(set->status == 200);
  auto shown = body_of(set);
  CHECK(shown["name"] == "reports");
  CHECK(shown["max_concurrent"] == 4);
  CHECK(shown["rate_per_second"] == 2.0);
  CHECK(shown["defaults"]["retries"] == 7);
  auto listed = cli_json(db, dir, {"queue", "ls"});
  CHECK(std::find(listed.begin(), listed.end(), shown) != listed.end());
  // The CLI's queue set -o json answers the same shape.
  auto by_cli = cli_json(db, dir, {"queue", "set", "reports", "--max-concurrent", "0"});
  CHECK(by_cli["max_concurrent"].is_null());

  CHECK(server.client(kOperator).Patch("/api/v1/queues/reports", R"({"retries": 1})", "application/json")->status == 403);
  check_problem(admin.Patch("/api/v1/queues/reports", R"({"retries": 2, "max_concurrent": -1})", "application/json"), 422,
                "max_concurrent");
  check_problem(admin.Patch("/api/v1/queues/reports", R"({"retries": 2, "colour": "red"})", "application/json"), 422,
                "colour");
  check_problem(admin.Patch("/api/v1/queues/reports", R"({"command": "true"})", "application/json"), 422,
                "not a queue setting");
  check_problem(admin.Patch("/api/v1/queues/reports", "{}", "application/json"), 422, "nothing to set");
  check_problem(admin.Patch("/api/v1/queues/reports", R"({"rate": 1e9})", "application/json"), 422, "rate");
  check_problem(admin.Patch("/api/v1/queues/reports", R"({"max_concurrent": "x"})", "application/json"), 422,
                "max_concurrent");
  check_problem(admin.Patch("/api/v1/queues/reports", R"({"clear": 1})", "application/json"), 422, "clear");
  CHECK(cli_json(db, dir, {"queue", "ls"})[0]["defaults"]["retries"] == 7);  // none of those wrote anything
}

TEST_CASE("serve: dismiss takes dead runs out of the dead-letter queue, one by its path or by a body") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto reader = server.client(kReader), op = server.client(kOperator);
  auto agent = test::start_agent(db, dir, {"--queues", "default,other", "--poll-interval", "100ms"});
  std::vector<std::string> ids;
  for (const char* queue : {"default", "default", "other"})
    ids.push_back(test::submit(db, dir, {"--queue", queue, "--retries", "0", "--", "exit 3"}));
  for (const auto& id : ids) CHECK(test::run_jobctl(db, dir, {"wait", id}).code == 1);
  const std::string run = test::get(db, dir, ids[0])["run"]["id"];

  check_problem(reader.Post("/api/v1/dead-letter/" + run + "/dismiss"), 403, "needs operate");
  CHECK(body_of(op.Post("/api/v1/dead-letter/" + run + "/dismiss")) == json{{"dismissed", 1}, {"runs", {run}}});
  CHECK(body_of(op.Post("/api/v1/dead-letter/" + run + "/dismiss")) == json{{"dismissed", 0}, {"runs", json::array()}});
  CHECK(body_of(reader.Get("/api/v1/dead-letter")).size() == 2);
  auto job = body_of(reader.Get("/api/v1/jobs/" + ids[0]));
  CHECK(job["status"] == "dead");
  CHECK(job["run"]["dismissed_at"].is_string());

  check_problem(op.Post("/api/v1/dead-letter/dismiss", R"({"ids": []})", "application/json"), 422, "non-empty");
  check_problem(op.Post("/api/v1/dead-letter/dismiss", R"({"all": true, "ids": ["x"]})", "application/json"), 422,
                "either");
  check_problem(op.Post("/api/v1/dead-letter/dismiss", R"({"all": true, "queue": 1})", "application/json"), 422,
                "\"queue\" must be a string");
  auto other = body_of(op.Post("/api/v1/dead-letter/dismiss", R"({"all": true, "queue": "other"})", "application/json"));
  CHECK(other == json{{"dismissed", 1}});
  CHECK(body_of(reader.Get("/api/v1/check?max_dlq=0"))["ok"] == false);
  auto named = body_of(op.Post("/api/v1/dead-letter/dismiss", json{{"ids", {ids[1]}}}.dump(), "application/json"));
  CHECK(named["dismissed"] == 1);
  CHECK(body_of(reader.Get("/api/v1/dead-letter")).empty());
  CHECK(body_of(reader.Get("/api/v1/check?max_dlq=0"))["ok"] == true);
}

TEST_CASE("serve: GET /dead-letter pages with a cursor, also among runs that died in the same microsecond") {
  test::TempDir dir;
  test::TestDb db(dir);
  for (int i = 0; i < 5; ++i) test::submit(db, dir, {"--retries", "0", "--", "false"});
  auto agent = test::start_agent(db, dir, {});
  test::eventually([&] { return cli_json(db, dir, {"dlq", "ls"}).size() == 5; }, "five dead runs");
  agent->signal(SIGTERM);
  agent->wait();
  // Two of them with one death time: the cursor orders by id within it.
  auto all = cli_json(db, dir, {"dlq", "ls"});
  db.open()->connection().exec("UPDATE runs SET finished_at = (SELECT finished_at FROM runs WHERE id = $1) WHERE id = $2",
                               {all[1]["run"]["id"].get<std::string>(), all[2]["run"]["id"].get<std::string>()});
  Server server(db, dir);
  auto c = server.client(kReader);
  std::vector<std::string> seen;
  std::string url = "/api/v1/dead-letter?limit=2";
  int pages = 0;
  while (!url.empty() && pages < 10) {
    auto r = c.Get(url);
    REQUIRE(r);
    REQUIRE(r->status == 200);
    ++pages;
    for (const auto& j : json::parse(r->body)) seen.push_back(j["run"]["id"]);
    std::smatch next;
    const std::string link = r->get_header_value("Link");
    url = lower_cursor(std::regex_search(link, next, std::regex(R"(^<([^>]+)>; rel="next"$)")) ? next[1].str() : "");
  }
  CHECK(pages == 3);
  CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 5);
  std::vector<std::string> listed;
  for (const auto& j : cli_json(db, dir, {"dlq", "ls"})) listed.push_back(j["run"]["id"]);
  CHECK(seen == listed);  // the pages, in order, are the whole list
  check_problem(c.Get("/api/v1/dead-letter?limit=2&before=01J00000000000000000000000"), 400, "not a run");
}

TEST_CASE("serve: a port already served is refused, and the listening backlog takes a burst of clients") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server first(db, dir);
  // The kernel's view of the listening socket: for LISTEN, ss shows the backlog as Send-Q.
  const std::string ss = "ss -Hltn 'sport = :" + std::to_string(first.port) + "' > " + dir.file("ss.out");
  REQUIRE(std::system(ss.c_str()) == 0);
  std::istringstream row(test::read_file(dir.file("ss.out")));
  std::string state;
  int recv_q = -1, backlog = -1;
  row >> state >> recv_q >> backlog;
  CHECK(state == "LISTEN");
  CHECK(backlog >= 128);  // cpp-httplib's own is 5

  test::TempDir dir2;
  auto second = test::run_jobctl(db, dir2, {"serve", "--listen", "127.0.0.1:" + std::to_string(first.port),
                                           "--tokens-file", write_tokens(dir2)});
  CHECK(second.code == 2);
  CHECK(second.err.find("cannot listen on 127.0.0.1:" + std::to_string(first.port)) != std::string::npos);
  CHECK(first.client(kReader).Get("/api/v1/jobs")->status == 200);
}

TEST_CASE("serve: GET /jobs/{id}/logs/follow streams the output as server-sent events, and Last-Event-ID resumes") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  const std::string gate = dir.file("gate");
  const std::string id = test::submit(db, dir, {"--retries", "0", "--", "echo first; echo oops >&2; while [ ! -e " +
                                                                       gate + " ]; do sleep 0.05; done; echo second"});
  std::mutex mutex;
  std::string received;
  std::thread reader([&] {
    auto c = server.client(kReader);
    c.Get("/api/v1/jobs/" + id + "/logs/follow", [&](const char* data, size_t n) {
      std::lock_guard lock(mutex);
      received.append(data, n);
      return true;
    });
  });
  auto seen = [&] {
    std::lock_guard lock(mutex);
    return received;
  };
  // Streamed while the job still runs (it waits for the gate).
  test::eventually([&] { return seen().find(R"("text":"first\n")") != std::string::npos; }, "the first line");
  CHECK(test::get(db, dir, id)["run"]["status"] == "running");
  std::ofstream(gate) << "go";
  reader.join();

  // Events: "id: …\nevent: NAME\ndata: JSON\n\n".
  struct Event {
    std::string id, name;
    json data;
  };
  std::vector<Event> events;
  std::istringstream in(seen());
  Event e;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("id: ", 0) == 0) e.id = line.substr(4);
    else if (line.rfind("event: ", 0) == 0) e.name = line.substr(7);
    else if (line.rfind("data: ", 0) == 0) e.data = json::parse(line.substr(6));
    else if (line.empty() && !e.name.empty()) events.push_back(std::exchange(e, Event{}));
  }
  REQUIRE(events.size() >= 4);
  std::string out, err;
  for (const auto& ev : events)
    if (ev.name == "output") (ev.data["stream"] == "stdout" ? out : err) += ev.data["text"].get<std::string>();
  CHECK(out == "first\nsecond\n");
  CHECK(err == "oops\n");
  CHECK(events.front().name == "output");
  CHECK(events.back().name == "end");
  CHECK(events.back().data["status"] == "succeeded");
  CHECK(events.back().data["id"] == test::get(db, dir, id)["run"]["id"]);

  // Resumed after the first event: what came after it, and the end.
  auto resumed = server.client(kReader).Get("/api/v1/jobs/" + id + "/logs/follow",
                                            httplib::Headers{{"Last-Event-ID", events.front().id}});
  REQUIRE(resumed);
  CHECK(resumed->status == 200);
  CHECK(resumed->get_header_value("Content-Type") == "text/event-stream");
  CHECK(resumed->body.find(R"("text":"first\n")") == std::string::npos);
  CHECK(resumed->body.find(R"("text":"second\n")") != std::string::npos);
  CHECK(resumed->body.find("event: end") != std::string::npos);
  // Each event's id is where a client that has it stands: resumed after
  // the first stdout event, the stderr written with it still comes.
  auto out_event = std::find_if(events.begin(), events.end(), [](const Event& ev) {
    return ev.name == "output" && ev.data["stream"] == "stdout";
  });
  REQUIRE(out_event != events.end());
  auto after_out = server.client(kReader).Get("/api/v1/jobs/" + id + "/logs/follow",
                                              httplib::Headers{{"Last-Event-ID", out_event->id}});
  REQUIRE(after_out);
  CHECK(after_out->body.find(R"("text":"oops\n")") != std::string::npos);
  auto bad = server.client(kReader).Get("/api/v1/jobs/" + id + "/logs/follow", httplib::Headers{{"Last-Event-ID", "x"}});
  check_problem(bad, 400, "Last-Event-ID");
  check_problem(server.client(kReader).Get("/api/v1/jobs/" + kUnknownId + "/logs/follow"), 404, "no job");
}

TEST_CASE("serve: an output event never cuts a UTF-8 character in two, and its id resumes before the rest of it") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms"});
  // The euro sign's first two bytes are shipped a second before its last.
  const std::string id =
      test::submit(db, dir, {"--retries", "0", "--", "printf 'price: 5\\342\\202'; sleep 1; printf '\\254\\n'"});
  auto body = server.client(kReader).Get("/api/v1/jobs/" + id + "/logs/follow");
  REQUIRE(body);
  std::string text, first_id;
  std::istringstream in(body->body);
  std::string last_id;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("id: ", 0) == 0) last_id = line.substr(4);
    if (line.rfind("data: ", 0) != 0) continue;
    auto data = json::parse(line.substr(6));
    if (!data.contains("text")) continue;
    text += data["text"].get<std::string>();
    if (first_id.empty()) first_id = last_id;
  }
  CHECK(text == "price: 5\xE2\x82\xAC\n");  // each half was a U+FFFD
  REQUIRE(!first_id.empty());
  auto resumed = server.client(kReader).Get("/api/v1/jobs/" + id + "/logs/follow",
                                            httplib::Headers{{"Last-Event-ID", first_id}});
  REQUIRE(resumed);
  CHECK(resumed->body.find("\xE2\x82\xAC\\n") != std::string::npos);
}

TEST_CASE("serve: output streams beyond half the threads are answered 503, and the others still are") {
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir, {"--threads", "4"});  // two may stream
  // No agent: the job stays pending, and a stream of it open.
  const std::string id = test::submit(db, dir, {"--", "true"});
  std::atomic<int> opened{0};
  std::vector<std::thread> streams;
  for (int i = 0; i < 2; ++i)
    streams.emplace_back([&] {
      auto c = server.client(kReader);
      c.Get(
          "/api/v1/jobs/" + id + "/logs/follow",
          [&](const httplib::Response&) {
            ++opened;
            return true;
          },
          [&](const char*, size_t) { return true; });
    });
  test::eventually([&] { return opened == 2; }, "two streams to open");
  auto third = server.client(kReader).Get("/api/v1/jobs/" + id + "/logs/follow");
  check_problem(third, 503, "output streams are open");
  // A plain request still has a thread.
  auto plain = server.client(kReader).Get("/api/v1/jobs/" + id);
  REQUIRE(plain);
  CHECK(plain->status == 200);
  // Cancelled, the job's run ends, and so do its streams.
  CHECK(test::run_jobctl(db, dir, {"cancel", id}).code == 0);
  for (auto& t : streams) t.join();

  // A client that goes frees its slot at once: the slot was held until
  // the next keep-alive comment failed to go out (15 s), and an
  // EventSource reconnecting met 503s meanwhile (a tester).
  const std::string quiet = test::submit(db, dir, {"--", "true"});
  for (int i = 0; i < 2; ++i) {
    const int fd = test::connect_loopback(server.port);
    const std::string request = "GET /api/v1/jobs/" + quiet + "/logs/follow HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                std::string(kReader) + "\r\n\r\n";
    REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
    std::string head;
    char buf[1024];
    while (head.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      REQUIRE(n > 0);
      head.append(buf, static_cast<size_t>(n));
    }
    CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
    close(fd);  // gone, with nothing sent to it yet
  }
  test::eventually(
      [&] {
        // A 200 is let go of at once (the handler says stop): the result is then no answer.
        auto stream = server.client(kReader).Get(
            "/api/v1/jobs/" + quiet + "/logs/follow", [](const httplib::Response& r) { return r.status != 200; },
            [](const char*, size_t) { return true; });
        return !stream || stream->status != 503;
      },
      "a slot to be free again, well before a keep-alive comment", std::chrono::seconds(10));
}

TEST_CASE("serve: a client sending its request a byte at a time is cut off after --timeout, and holds no worker") {
  // Found by a tester: cpp-httplib bounds each wait for bytes, not the
  // request, and --threads clients trickling a header held the server.
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir, {"--threads", "2", "--timeout", "2s"});
  // Each sends a byte every 200 ms for up to 30 s, unless the server closes
  // the connection first. It must, after one answer (400): kept alive, the
  // bytes that follow began another slow request with a budget of its own.
  std::atomic<int> closed{0}, answers{0};
  auto trickle = [&] {
    const int fd = test::connect_loopback(server.port);
    const std::string start = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    REQUIRE(send(fd, start.data(), start.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(start.size()));
    std::string got;
    for (int i = 0; i < 150; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      char buf[4096];
      const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) got.append(buf, static_cast<size_t>(n));
      // Answered: another slow request on the same connection, at once.
      const std::string next = n > 0 ? start : "a";
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
          send(fd, next.data(), next.size(), MSG_NOSIGNAL) < 0) {
        ++closed;
        break;
      }
    }
    for (size_t at = got.find("HTTP/1.1 400"); at != std::string::npos; at = got.find("HTTP/1.1 400", at + 1))
      ++answers;
    close(fd);
  };
  std::thread first(trickle), second(trickle);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto c = server.client();
  c.set_read_timeout(40, 0);
  auto answered = c.Get("/healthz");  // both workers are taken until the trickles are cut
  first.join();
  second.join();
  CHECK(closed.load() == 2);
  CHECK(answers.load() == 2);  // one each
  REQUIRE(answered);
  CHECK(answered->status == 200);
}

TEST_CASE("serve: a request cut off before its headers are whole is logged with no token, not the one before it") {
  // Found by a tester: the access log named the previous request's token.
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir, {"--threads", "1", "--timeout", "1s"});
  REQUIRE(server.client(kReader).Get("/api/v1/jobs")->status == 200);
  const std::string cut = raw_exchange(server.port, "GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\n", 10);
  CHECK(cut.rfind("HTTP/1.1 400", 0) == 0);
  test::eventually([&] { return server.process->err().find("status=400") != std::string::npos; }, "the log line");
  const std::string log = server.process->err();
  const std::string line = log.substr(log.rfind('\n', log.find("status=400")) + 1);
  CHECK(line.find("token=-") != std::string::npos);
}

TEST_CASE("serve: a server of one thread streams no output, so that it still answers") {
  // Found by a tester: with --threads 1 one stream held the only worker.
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir, {"--threads", "1"});
  const std::string id = test::submit(db, dir, {"--", "true"});
  // Only the answer's status is read: a stream that did open never ends.
  int status = 0;
  server.client(kReader).Get(
      "/api/v1/jobs/" + id + "/logs/follow",
      [&](const httplib::Response& r) {
        status = r.status;
        return r.status != 200;
      },
      [](const char*, size_t) { return false; });
  CHECK(status == 503);
  auto plain = server.client(kReader).Get("/api/v1/jobs/" + id);
  REQUIRE(plain);
  CHECK(plain->status == 200);
}

TEST_CASE("serve: a body is read only whole and as JSON, and an answer is never cut by Range") {
  // Found by a tester, each without a token: a chunked body was read past
  // --max-body, a compressed one inflated in memory, many ranges of one
  // answer multiplied it in memory; and `curl -d` (a form, to cpp-httplib)
  // was refused past 8 KiB.
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir, {"--max-body", "4096"});
  auto c = server.client(kSubmitter);
  const std::string job = R"({"command": "true"})";
  const std::string chunked = raw_exchange(
      server.port,
      fmt::format("POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{}\r\n0\r\n\r\n",
                  kSubmitter, job.size(), job),
      60);
  CAPTURE(chunked);
  CHECK(chunked.rfind("HTTP/1.1 411", 0) == 0);
  CHECK(chunked.find("Content-Length") != std::string::npos);
  // One length, in digits (a tester: two that differ were taken, a
  // smuggling vector; a negative one was 413 after --timeout).
  for (const char* lengths : {"Content-Length: 2\r\nContent-Length: 19", "Content-Length: -5",
                              "Content-Length: 99999999999999999999999"}) {
    CAPTURE(lengths);
    const std::string answer = raw_exchange(
        server.port,
        fmt::format("POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n{}\r\n\r\n{}",
                    kSubmitter, lengths, job),
        60);
    CHECK(answer.rfind("HTTP/1.1 400", 0) == 0);
    CHECK(answer.find("Content-Length must be one length, in digits") != std::string::npos);
  }
  check_problem(c.Post("/api/v1/jobs", {{"Content-Encoding", "gzip"}}, job, "application/json"), 415, "compressed");
  CHECK(cli_json(db, dir, {"ls"}).empty());
  // A body said to be a form is JSON all the same, up to --max-body.
  const std::string bigger = R"({"command": "true", "payload": ")" + std::string(3000, 'p') + "\"}";
  auto form = c.Post("/api/v1/jobs", bigger, "application/x-www-form-urlencoded");
  REQUIRE(form);
  CHECK(form->status == 201);
  // Range is not for a JSON API: the whole answer, once.
  auto whole = c.Get("/api/v1/openapi.json", {{"Range", "bytes=0-5,0-5,0-5"}});
  REQUIRE(whole);
  CHECK(whole->status == 200);
  CHECK(json::accept(whole->body));
  CHECK(whole->body == c.Get("/api/v1/openapi.json")->body);
}

TEST_CASE("serve: a query or path that is not text, a bad cursor, or a bad replay body is 4xx, never 500") {
  // Found by a tester: on PostgreSQL a NUL or a byte not UTF-8 in a query
  // parameter reached a statement, which refused it: answered 500.
  test::TempDir dir;
  test::TestDb db(dir);
  Server server(db, dir);
  auto c = server.client(kAdmin);
  for (const char* path : {"/api/v1/jobs?queue=%00", "/api/v1/jobs?queue=%FF", "/api/v1/dead-letter?queue=%00",
                           "/api/v1/stats?queue=%FF", "/api/v1/check?max_dlq=0&queue=%00", "/api/v1/jobs/%FF"}) {
    CAPTURE(path);
    check_problem(c.Get(path), 400, "not UTF-8 text, or holds a NUL byte");
  }
  check_problem(c.Get("/api/v1/jobs?before=zzz"), 400, "the cursor before='zzz' is not a job id");
  // A typo, an unset variable or a second value was ignored: ?stauts=dead
  // listed every job, and a delete's misspelt cancel_running deleted the
  // job and left its run running.
  const std::string id = test::submit(db, dir, {"--", "true"});
  check_problem(c.Get("/api/v1/jobs?stauts=dead"), 400, "GET /jobs takes no query parameter 'stauts'");
  check_problem(c.Post("/api/v1/jobs/" + id + "/delete?cancel_runing=true"), 400,
                "POST /jobs/{id}/delete takes no query parameter 'cancel_runing'");
  check_problem(c.Get("/api/v1/jobs?queue="), 400, "?queue= is empty");
  check_problem(c.Get("/api/v1/jobs?queue=a&queue=b"), 400, "query parameter 'queue' is given 2 times");
  check_problem(c.Get("/api/v1/workers?limit=5"), 400, "GET /workers takes no query parameter 'limit'");
  // A value holding a literal '=' is the whole of it, not what follows
  // its last '=' (cpp-httplib's reading): ?older_than=30d=1s purged every
  // dead run, and ?queue=nosuch=default listed queue default (a tester).
  check_problem(c.Delete("/api/v1/dead-letter?older_than=30d=1s"), 400, "30d=1s");
  auto misread = c.Get("/api/v1/jobs?queue=nosuch=default");
  REQUIRE(misread);
  CHECK((misread->status == 400 || json::parse(misread->body).empty()));
  auto encoded = c.Get("/api/v1/jobs?queue=def%61ult&limit=5");
  REQUIRE(encoded);
  CHECK(json::parse(encoded->body).size() == 1);
  CHECK(cli_json(db, dir, {"ls", "--deleted"}).empty());  // nothing was done
  auto listed = c.Get("/api/v1/jobs?queue=default&limit=5");
  REQUIRE(listed);
  CHECK(listed->status == 200);
  check_problem(c.Post("/api/v1/dead-letter/replay", R"({"all": 1})", "application/json"), 422,
                "\"all\" must be true or false");
  // A queue in a bulk body is held to a queue's rules: a NUL reached
  // PostgreSQL (a 500), and 10,000 characters were taken.
  for (const char* path : {"/api/v1/dead-letter/replay", "/api/v1/dead-letter/dismiss"}) {
    CAPTURE(path);
    check_problem(c.Post(path, R"({"all": true, "queue": "a\u0000b"})", "application/json"), 422, "invalid queue name");
    check_problem(c.Post(path, json{{"all", true}, {"queue", std::string(10000, 'q')}}.dump(), "application/json"), 422,
                  "invalid queue name");
  }
  check_problem(c.Get("/api/v1/dead-letter?queue=no%20such"), 400, "invalid queue name");
  // A status cpp-httplib answers by itself has its own title.
  auto long_uri = c.Get("/api/v1/jobs?queue=" + std::string(9000, 'q'));
  REQUIRE(long_uri);
  CHECK(long_uri->status == 414);
  CHECK(json::parse(long_uri->body)["title"] == "URI Too Long");
}
