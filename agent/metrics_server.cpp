#include "agent/metrics_server.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::agent {
namespace {

constexpr size_t kMaxConnections = 16;
constexpr size_t kMaxRequest = 8192;
constexpr auto kDeadline = std::chrono::seconds(5);

Error bad_addr(const std::string& addr, const std::string& why) {
  return usage_error(fmt::format("--metrics '{}': {}", addr, why),
                     "write it as HOST:PORT, e.g. --metrics 127.0.0.1:9464, or :9464 for every address");
}

std::string response(int status, const char* reason, const char* type, const std::string& body, bool head) {
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                     status, reason, type, body.size(), head ? "" : body);
}

}  // namespace

MetricsServer::MetricsServer(const std::string& addr) {
  auto colon = addr.rfind(':');
  if (colon == std::string::npos) throw bad_addr(addr, "no port");
  std::string host = addr.substr(0, colon), port = addr.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos) throw bad_addr(addr, "bad port");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found); rc != 0)
    throw bad_addr(addr, gai_strerror(rc));
  std::string why = "no address";
  for (addrinfo* a = found; a && listen_fd_ < 0; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 16) == 0) {
      listen_fd_ = fd;
    } else {
      why = std::strerror(errno);
      close(fd);
    }
  }
  freeaddrinfo(found);
  if (listen_fd_ < 0) throw bad_addr(addr, why);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  char text[INET6_ADDRSTRLEN] = "?";
  int bound_port = 0;
  if (bound.ss_family == AF_INET6) {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&bound);
    inet_ntop(AF_INET6, &a6->sin6_addr, text, sizeof text);
    bound_port = ntohs(a6->sin6_port);
    address_ = fmt::format("[{}]:{}", text, bound_port);
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&bound);
    inet_ntop(AF_INET, &a4->sin_addr, text, sizeof text);
    bound_port = ntohs(a4->sin_port);
    address_ = fmt::format("{}:{}", text, bound_port);
  }
}

MetricsServer::~MetricsServer() {
  for (const auto& [fd, c] : conns_) close(fd);
  if (listen_fd_ >= 0) close(listen_fd_);
}

void MetricsServer::poll_fds(std::vector<pollfd>& fds) {
  fds_from_ = fds.size();
  if (conns_.size() < kMaxConnections) fds.push_back({listen_fd_, POLLIN, 0});
  else fds.push_back({-1, 0, 0});  // keep the layout; poll() ignores negative descriptors
  for (const auto& [fd, c] : conns_) fds.push_back({fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
  fds_count_ = fds.size() - fds_from_;
}

void MetricsServer::handle_events(const std::vector<pollfd>& fds, const std::function<std::string()>& body) {
  std::vector<std::pair<int, short>> ready;
  for (size_t i = fds_from_ + 1; i < fds_from_ + fds_count_ && i < fds.size(); ++i)
    if (fds[i].revents) ready.emplace_back(fds[i].fd, fds[i].revents);
  bool accept_now = fds_count_ > 0 && fds_from_ < fds.size() && (fds[fds_from_].revents & POLLIN);
  fds_count_ = 0;
  for (auto [fd, revents] : ready) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) continue;
    Conn& c = it->second;
    if (revents & (POLLERR | POLLNVAL)) {
      drop(fd);
      continue;
    }
    if (c.out.empty()) {
      char buf[2048];
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) drop(fd);
        continue;
      }
      c.in.append(buf, static_cast<size_t>(n));
      if (c.in.find("\r\n\r\n") != std::string::npos || c.in.size() > kMaxRequest) respond(c, body);
    }
    if (!c.out.empty()) {
      ssize_t n = write(fd, c.out.data() + c.sent, c.out.size() - c.sent);
      if (n > 0) c.sent += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || c.sent == c.out.size()) drop(fd);
    }
  }
  if (accept_now) accept_all();
}

void MetricsServer::accept_all() {
  while (conns_.size() < kMaxConnections) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    conns_[fd].deadline = Clock::now() + kDeadline;
  }
}

void MetricsServer::respond(Conn& c, const std::function<std::string()>& body) {
  if (c.in.size() > kMaxRequest) {
    c.out = response(431, "Request Header Fields Too Large", "text/plain", "request too large\n", false);
    return;
  }
  auto line_end = c.in.find("\r\n");
  std::string line = c.in.substr(0, line_end);
  auto sp1 = line.find(' '), sp2 = line.find(' ', sp1 == std::string::npos ? 0 : sp1 + 1);
  std::string method = line.substr(0, sp1);
  std::string target = sp1 == std::string::npos ? "" : line.substr(sp1 + 1, sp2 - sp1 - 1);
  bool head = method == "HEAD";
  if (method != "GET" && !head) {
    c.out = response(405, "Method Not Allowed", "text/plain", "only GET /metrics\n", false);
  } else if (target == "/metrics" || target.rfind("/metrics?", 0) == 0) {
    c.out = response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", body(), head);
  } else {
    c.out = response(404, "Not Found", "text/plain", "jobagent serves /metrics\n", head);
  }
}

void MetricsServer::drop(int fd) {
  close(fd);
  conns_.erase(fd);
}

void MetricsServer::expire(Clock::time_point now) {
  std::vector<int> late;
  for (const auto& [fd, c] : conns_)
    if (now >= c.deadline) late.push_back(fd);
  for (int fd : late) drop(fd);
}

std::optional<MetricsServer::Clock::time_point> MetricsServer::next_deadline() const {
  std::optional<Clock::time_point> next;
  for (const auto& [fd, c] : conns_)
    if (!next || c.deadline < *next) next = c.deadline;
  return next;
}

}  // namespace jobctl::agent
