#include "tests/support/faults.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <regex>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::test {

// --- FaultyConnection --------------------------------------------------------

void FaultyConnection::answer_lost() {
  lose_answer_ = false;
  throw Error(ExitCode::store, "server closed the connection unexpectedly (injected: applied, answer lost)");
}

bool FaultyConnection::fault_due() {
  ++steps_;
  return countdown_ > 0 && --countdown_ == 0;
}

template <class Step>
auto FaultyConnection::step(Step&& run) {
  if (fault_due()) {
    if (fault_ == Fault::refused)
      throw Error(ExitCode::store, "server closed the connection unexpectedly (injected: not applied)");
    run();
    throw Error(ExitCode::store, "server closed the connection unexpectedly (injected: applied, answer lost)");
  }
  return run();
}

void FaultyConnection::after(std::string_view sql) {
  if (!meanwhile_ || sql.find(after_sql_) == std::string_view::npos) return;
  auto meanwhile = std::move(meanwhile_);
  meanwhile_ = nullptr;
  meanwhile();
}

store::Rows FaultyConnection::query(std::string_view sql, const store::Params& params) {
  auto rows = step([&] { return inner_->query(sql, params); });
  if (lose_answer_ && !in_transaction_) answer_lost();
  after(sql);
  return rows;
}

void FaultyConnection::query_with_next(std::string_view sql, const store::Params& params,
                                       const std::function<void(store::Rows&&)>& read) {
  step([&] { inner_->query_with_next(sql, params, read); });
  if (lose_answer_ && !in_transaction_) answer_lost();
}

int64_t FaultyConnection::exec(std::string_view sql, const store::Params& params) {
  auto n = step([&] { return inner_->exec(sql, params); });
  if (lose_answer_ && !in_transaction_) answer_lost();
  after(sql);
  return n;
}

int64_t FaultyConnection::exec_batch(std::string_view sql, const store::Params& params,
                                    std::span<const store::BatchColumn> columns, size_t rows,
                                    const store::BatchFill& fill, Send when) {
  auto n = step([&] { return inner_->exec_batch(sql, params, columns, rows, fill, when); });
  if (lose_answer_ && !in_transaction_) answer_lost();
  return n;
}

void FaultyConnection::begin(store::TxMode mode) {
  inner_->begin(mode);
  in_transaction_ = true;
}

void FaultyConnection::commit() {
  step([&] { inner_->commit(); });
  in_transaction_ = false;
  if (lose_answer_) answer_lost();
}

void FaultyConnection::rollback() {
  in_transaction_ = false;
  inner_->rollback();
}

// --- TcpProxy ----------------------------------------------------------------

namespace {

int connect_to(const std::string& host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

TcpProxy::TcpProxy(std::string host, int port) : host_(std::move(host)), target_port_(port) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(listen_fd_, 64) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("tcp proxy: cannot listen on 127.0.0.1");
  port_ = ntohs(a.sin_port);
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  thread_ = std::thread([this] { serve(); });
}

TcpProxy::~TcpProxy() {
  uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof one) < 0) std::abort();
  thread_.join();
  close(stop_fd_);
  close(listen_fd_);
}

// One poll loop over every pair of sockets. Frozen: new connections are
// accepted (as a stopped server's kernel does) and nothing is read, so
// nothing is forwarded either way.
void TcpProxy::serve() {
  std::map<int, int> peer;       // fd -> the fd it forwards to
  std::map<int, bool> answered;  // a client's fd -> its server has sent since it last did
  int cuts = 0;
  for (;;) {
    if (cuts != cuts_) {
      cuts = cuts_;
      for (const auto& [fd, to] : peer) close(fd);
      peer.clear();
      answered.clear();
    }
    bool frozen = frozen_;
    std::vector<pollfd> fds{{stop_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    if (!frozen)
      for (const auto& [fd, to] : peer) fds.push_back({fd, POLLIN, 0});
    poll(fds.data(), fds.size(), 50);
    if (fds[0].revents) break;
    if (fds[1].revents & POLLIN) {
      int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      int server = client >= 0 ? connect_to(host_, target_port_) : -1;
      if (server >= 0) {
        peer[client] = server;
        peer[server] = client;
        answered[client] = true;
      } else if (client >= 0) {
        close(client);
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      int fd = fds[i].fd;
      auto it = peer.find(fd);
      if (it == peer.end()) continue;
      char buf[65536];
      ssize_t n = read(fd, buf, sizeof buf);
      bool ok = n > 0;
      if (ok) {
        if (auto sent = answered.find(fd); sent != answered.end()) {  // from a client
          if (sent->second) ++round_trips_;
          sent->second = false;
        } else {
          answered[it->second] = true;
        }
      }
      for (ssize_t off = 0; ok && off < n;) {
        ssize_t w = write(it->second, buf + off, static_cast<size_t>(n - off));
        ok = w > 0;
        off += w > 0 ? w : 0;
      }
      if (!ok) {
        int other = it->second;
        close(fd);
        close(other);
        peer.erase(fd);
        peer.erase(other);
        answered.erase(fd);
        answered.erase(other);
      }
    }
  }
  for (const auto& [fd, to] : peer) close(fd);
}

// --- StoreFreeze ---------------------------------------------------------------

StoreFreeze::StoreFreeze(const TestDb& db) : db_(db) {
  if (test_backend() == config::Backend::sqlite) {
    dsn_ = db.dsn();
    return;
  }
  std::smatch m;
  const std::string& dsn = db.dsn();
  if (!std::regex_search(dsn, m, std::regex(R"(port=(\d+))")))
    throw std::runtime_error("StoreFreeze: no port= in the test DSN " + dsn);
  proxy_ = std::make_unique<TcpProxy>("127.0.0.1", std::stoi(m[1]));
  // In a libpq connection string a later keyword wins.
  dsn_ = fmt::format("{} host=127.0.0.1 port={}", dsn, proxy_->port());
}

StoreFreeze::~StoreFreeze() { thaw(); }

void StoreFreeze::freeze() {
  if (proxy_) {
    proxy_->freeze();
    return;
  }
  holder_ = store::open_sqlite(config::parse_dsn(dsn_).target, store::Create::yes);
  holder_->begin(store::TxMode::write);
}

void StoreFreeze::thaw() {
  if (proxy_) {
    proxy_->thaw();
    return;
  }
  if (holder_) holder_->rollback();
  holder_.reset();
}

}  // namespace jobctl::test
