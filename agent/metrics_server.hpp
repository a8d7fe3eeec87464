#pragma once
// jobagent --metrics ADDR: a small HTTP/1.1 server inside the agent's poll
// loop that answers GET /metrics with the Prometheus text exposition. One
// response per connection (Connection: close), a few connections at once,
// each with a deadline: a scraper, not the world, is the client.
#include <poll.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace jobctl::agent {

class MetricsServer {
 public:
  using Clock = std::chrono::steady_clock;

  // Listens on "HOST:PORT", "[V6]:PORT" or ":PORT" (every address); PORT 0
  // picks a free one (see address()). Throws Error(ExitCode::usage) for a
  // malformed or unusable address.
  explicit MetricsServer(const std::string& addr);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  std::string address() const { return address_; }  // as bound: "127.0.0.1:9464"

  void poll_fds(std::vector<pollfd>& fds);
  // Accepts, reads and answers; `body` renders the metrics when asked.
  void handle_events(const std::vector<pollfd>& fds, const std::function<std::string()>& body);
  // Drops connections past their deadline.
  void expire(Clock::time_point now);
  std::optional<Clock::time_point> next_deadline() const;

 private:
  struct Conn {
    std::string in;
    std::string out;
    size_t sent = 0;
    Clock::time_point deadline;
  };

  void accept_all();
  void respond(Conn& c, const std::function<std::string()>& body);
  void drop(int fd);

  int listen_fd_ = -1;
  std::string address_;
  std::map<int, Conn> conns_;
  size_t fds_from_ = 0, fds_count_ = 0;
};

}  // namespace jobctl::agent
