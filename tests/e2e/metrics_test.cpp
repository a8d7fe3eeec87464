// jobagent --metrics and --metrics-file: scraped and parsed like Prometheus
// and node_exporter would.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <regex>
#include <sstream>

#include "tests/support/fixtures.hpp"

using namespace jobctl;
using test::run_jobctl;
using test::submit;

namespace {

const std::vector<std::string> kDocumented{
    "jobagent_info",           "jobagent_runs_started_total",       "jobagent_runs_succeeded_total",
    "jobagent_runs_failed_total", "jobagent_runs_dead_total",        "jobagent_runs_cancelled_total",
    "jobagent_attempt_duration_seconds", "jobagent_scheduling_lag_seconds", "jobagent_slots_busy",
    "jobagent_slots",          "jobagent_claims_total",             "jobagent_empty_polls_total",
    "jobagent_heartbeat_failures_total", "jobagent_store_errors_total", "jobagent_leader"};

// GET http://127.0.0.1:PORT/PATH: the whole response, headers and body.
std::string http_get(int port, const std::string& path) {
  const int fd = test::connect_loopback(port);
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  REQUIRE(write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size()));
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// Sample name with labels → value, and the metric names with a TYPE line.
struct Exposition {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
};

Exposition parse(const std::string& text) {
  Exposition e;
  std::istringstream in(text);
  std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})?) (\S+)$)");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      auto rest = line.substr(7);
      e.types[rest.substr(0, rest.find(' '))] = rest.substr(rest.find(' ') + 1);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_match(line, m, sample), "not a sample line: " << line);
    e.samples[m[1]] = std::stod(m[3]);
  }
  return e;
}

}  // namespace

TEST_CASE("metrics: /metrics and the metrics file carry every documented metric, and they move after a job") {
  test::TempDir dir;
  test::TestDb db(dir);
  std::string file = dir.file("jobagent.prom");
  auto agent = test::start_agent(db, dir, {"--poll-interval", "100ms", "--lease", "3s", "--metrics", "127.0.0.1:0",
                                           "--metrics-file", file});
  int port = 0;
  test::eventually([&] {
    std::smatch m;
    std::string err = agent->err() + agent->out();
    static const std::regex listening(R"(metrics_listening addr=127\.0\.0\.1:(\d+))");
    if (!std::regex_search(err, m, listening)) return false;
    port = std::stoi(m[1]);
    return true;
  }, "the metrics address in the agent's log");

  auto first = http_get(port, "/metrics");
  CHECK(first.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(first.find("Content-Type: text/plain; version=0.0.4") != std::string::npos);
  auto before = parse(first.substr(first.find("\r\n\r\n") + 4));
  for (const auto& name : kDocumented) {
    CAPTURE(name);
    CHECK(before.types.count(name) == 1);
  }
  CHECK(before.types["jobagent_attempt_duration_seconds"] == "histogram");
  CHECK(before.types["jobagent_runs_started_total"] == "counter");
  CHECK(before.samples["jobagent_slots"] == 4);
  CHECK(before.samples.count("jobagent_runs_succeeded_total{queue=\"default\"}") == 0);

  auto ok = submit(db, dir, {"--", "true"});
  auto bad = submit(db, dir, {"--retries", "0", "--", "exit 1"});
  CHECK(run_jobctl(db, dir, {"wait", ok}).code == 0);
  CHECK(run_jobctl(db, dir, {"wait", bad}).code == 1);
  auto resp = http_get(port, "/metrics");
  auto after = parse(resp.substr(resp.find("\r\n\r\n") + 4));
  CHECK(after.samples["jobagent_runs_started_total{queue=\"default\"}"] == 2);
  CHECK(after.samples["jobagent_runs_succeeded_total{queue=\"default\"}"] == 1);
  CHECK(after.samples["jobagent_runs_failed_total{queue=\"default\"}"] == 1);
  CHECK(after.samples["jobagent_runs_dead_total{queue=\"default\"}"] == 1);
  CHECK(after.samples["jobagent_attempt_duration_seconds_count{queue=\"default\"}"] == 2);
  CHECK(after.samples["jobagent_attempt_duration_seconds_bucket{queue=\"default\",le=\"+Inf\"}"] == 2);
  CHECK(after.samples["jobagent_scheduling_lag_seconds_count{queue=\"default\"}"] == 2);
  CHECK(after.samples["jobagent_claims_total"] > before.samples["jobagent_claims_total"]);
  CHECK(after.samples["jobagent_leader"] == 1);

  CHECK(http_get(port, "/other").rfind("HTTP/1.1 404", 0) == 0);

  // The file catches up at the next heartbeat (every lease / 3 = 1 s).
  test::eventually([&] {
    auto text = test::read_file(file);
    return !text.empty() && parse(text).samples["jobagent_runs_succeeded_total{queue=\"default\"}"] == 1;
  }, "the metrics file with the job counted");
  auto from_file = parse(test::read_file(file));
  for (const auto& name : kDocumented) {
    CAPTURE(name);
    CHECK(from_file.types.count(name) == 1);
  }
  agent->signal(SIGTERM);
  CHECK(agent->wait() == 0);
}

TEST_CASE("metrics: a malformed --metrics address is refused at start") {
  test::TempDir dir;
  test::TestDb db(dir);
  auto agent = test::start_agent(db, dir, {"--metrics", "localhost"});
  CHECK(agent->wait() == 2);
  CHECK(agent->err().find("--metrics 'localhost': no port") != std::string::npos);
}

TEST_CASE("systemd: READY, WATCHDOG and STOPPING reach NOTIFY_SOCKET") {
  test::TempDir dir;
  test::TestDb db(dir);
  std::string path = dir.file("notify.sock");
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  REQUIRE(path.size() < sizeof addr.sun_path);
  std::strcpy(addr.sun_path, path.c_str());
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  timeval limit{60, 0};  // a hang guard, not a timing assertion
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  auto next = [&] {
    char buf[1024];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    REQUIRE(n > 0);
    return std::string(buf, static_cast<size_t>(n));
  };
  test::Process agent({JOBAGENT_BIN, "--db", db.dsn(), "--poll-interval", "100ms"},
                      {"NOTIFY_SOCKET=" + path, "WATCHDOG_USEC=200000"}, dir, "agent");
  auto ready = next();
  CHECK(ready.rfind("READY=1\nSTATUS=claiming from default as ", 0) == 0);
  CHECK(next() == "WATCHDOG=1");
  CHECK(next() == "WATCHDOG=1");
  // A job does not get the agent's notify socket.
  std::string env = dir.file("env");
  auto id = submit(db, dir, {"--", "echo ${NOTIFY_SOCKET:-none} ${WATCHDOG_USEC:-none} > " + env});
  CHECK(run_jobctl(db, dir, {"wait", id}).code == 0);
  CHECK(test::trim(test::read_file(env)) == "none none");
  agent.signal(SIGTERM);
  std::string m;
  do m = next();
  while (m == "WATCHDOG=1");
  CHECK(m.rfind("STOPPING=1\n", 0) == 0);
  CHECK(agent.wait() == 0);
  close(fd);
}
