#include "bench/serve_load.hpp"

#include <atomic>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "common/util/error.hpp"

namespace jobctl::bench {
namespace {

constexpr const char* kJob = R"({"command": "true", "queue": "bench", "at": "2099-01-01T00:00:00Z"})";

struct Samples {
  std::mutex mutex;
  std::vector<double> latency_ms;
  int64_t errors = 0;
  std::string first_error;

  void add(const std::vector<double>& ms, int64_t errs, const std::string& error) {
    std::lock_guard lock(mutex);
    latency_ms.insert(latency_ms.end(), ms.begin(), ms.end());
    errors += errs;
    if (first_error.empty()) first_error = error;
  }
};

// POST /api/v1/jobs of `job`; its error, "" when it is answered 201.
std::string post_error(httplib::Client& c, const std::string& job) {
  auto r = c.Post("/api/v1/jobs", job, "application/json");
  if (!r) return "no answer: " + httplib::to_string(r.error());
  if (r->status != 201) return fmt::format("HTTP {}: {}", r->status, r->body.substr(0, 200));
  return {};
}

// One POST of kJob; its error ("" when 201), and its latency from `from_ns`.
std::string post(httplib::Client& c, int64_t from_ns, std::vector<double>& latency_ms) {
  std::string error = post_error(c, kJob);
  latency_ms.push_back(static_cast<double>(monotonic_ns() - from_ns) / 1e6);
  return error;
}

void report(Samples& s, double elapsed_s) {
  put("requests", static_cast<double>(s.latency_ms.size()));
  put("seconds", elapsed_s);
  put("jobs_per_s", static_cast<double>(s.latency_ms.size() - static_cast<size_t>(s.errors)) / elapsed_s);
  put("p50_ms", percentile(s.latency_ms, 0.50));
  put("p99_ms", percentile(s.latency_ms, 0.99));
  put("max_ms", percentile(s.latency_ms, 1.0));
  put("errors", static_cast<double>(s.errors));
  if (!s.first_error.empty()) std::fprintf(stderr, "jobctl_bench: first error: %s\n", s.first_error.c_str());
}

}  // namespace

httplib::Client serve_client(const std::string& url, const std::string& token) {
  httplib::Client c(url);
  c.set_bearer_token_auth(token.c_str());
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);  // as curl and every HTTP library that cares
  c.set_read_timeout(30, 0);
  return c;
}

void post_job(httplib::Client& c, const std::string& job) {
  if (auto error = post_error(c, job); !error.empty()) throw Error(ExitCode::internal, "POST /api/v1/jobs: " + error);
}

void serve_closed_loop(const Args& args) {
  const std::string url = args[0], token = args[1];
  const int clients = static_cast<int>(number(args, 2, "CLIENTS"));
  const int64_t n = static_cast<int64_t>(number(args, 3, "N"));
  if (clients < 1) throw usage_error("CLIENTS must be at least 1");
  std::atomic<int64_t> next{0};
  Samples samples;
  const int64_t start = monotonic_ns();
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i)
    threads.emplace_back([&] {
      auto c = serve_client(url, token);
      std::vector<double> ms;
      int64_t errors = 0;
      std::string first;
      while (next.fetch_add(1) < n && seconds_since(start) < 300) {
        auto e = post(c, monotonic_ns(), ms);
        if (!e.empty() && errors++ == 0) first = e;
      }
      samples.add(ms, errors, first);
    });
  for (auto& t : threads) t.join();
  report(samples, seconds_since(start));
}

void serve_paced(const Args& args) {
  const std::string url = args[0], token = args[1];
  const int clients = static_cast<int>(number(args, 2, "CLIENTS"));
  const double rate = number(args, 3, "RATE");
  const double duration_s = number(args, 4, "SECONDS");
  if (clients < 1 || rate <= 0 || duration_s <= 0) throw usage_error("CLIENTS, RATE and SECONDS must be positive");
  // Client i sends at start + (i + k * clients) / rate: together, RATE a second.
  const int64_t total = static_cast<int64_t>(rate * duration_s);
  const double gap_ns = 1e9 / rate;
  Samples samples;
  const int64_t start = monotonic_ns() + 100'000'000;  // every client connected first
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i)
    threads.emplace_back([&, i] {
      auto c = serve_client(url, token);
      std::vector<double> ms;
      int64_t errors = 0;
      std::string first;
      for (int64_t k = i; k < total; k += clients) {
        const int64_t planned = start + static_cast<int64_t>(static_cast<double>(k) * gap_ns);
        if (const int64_t wait = planned - monotonic_ns(); wait > 0) sleep_ms(static_cast<double>(wait) / 1e6);
        auto e = post(c, planned, ms);
        if (!e.empty() && errors++ == 0) first = e;
      }
      samples.add(ms, errors, first);
    });
  for (auto& t : threads) t.join();
  report(samples, seconds_since(start));
  put("rate", static_cast<double>(samples.latency_ms.size()) / seconds_since(start));
}

}  // namespace jobctl::bench
