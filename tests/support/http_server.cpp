// HttpServer: one thread runs a poll() loop over an eventfd (written by the destructor
// to stop it), the listening socket and every connection, all non-blocking.
// Each connection keeps the bytes received but not yet parsed and the bytes
// still to send. A request is handled once complete (its head up to the
// blank line, then Content-Length bytes of body) and its response appended
// to the output, so pipelined requests are answered in order.
//
// A delayed response is parked on its connection with a deadline, and poll
// sleeps no longer than the nearest one. Until it is sent the connection
// parses no further request (that would reorder the answers) but still
// reads, so a client that hangs up meanwhile is seen and dropped.
//
// A connection that must close (the client asked, HTTP/1.0, an error
// response) answers nothing more, flushes, shuts its write side and discards
// input until the client closes too, for at most kLingerTime: closing with
// unread input would make the kernel send a reset, which can destroy the
// response before the client has read it.

#include "tests/support/http_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

namespace jobctl::test {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxHead = 64 * 1024;            // request line and headers
constexpr size_t kMaxBody = 16 * 1024 * 1024;     // Content-Length
constexpr size_t kMaxReadAhead = 128 * 1024;      // input buffered beyond the request being received
constexpr size_t kMaxPendingOutput = 256 * 1024;  // unsent output before pipelined requests wait
constexpr size_t kReadBudget = 256 * 1024;        // bytes read from one connection per turn, for fairness
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr auto kAcceptPause = std::chrono::milliseconds(10);  // after EMFILE and the like

[[noreturn]] void throw_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

// Owns a file descriptor.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Binds the socket to 127.0.0.1 on an ephemeral port; returns the port.
int bind_loopback(const Fd& fd, const std::string& what) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw_errno((what + ": bind").c_str());
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw_errno((what + ": getsockname").c_str());
  return ntohs(addr.sin_port);
}

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whether a comma-separated header value lists `token`, case-insensitively.
bool has_token(std::string_view list, std::string_view token) {
  for (;;) {
    size_t comma = list.find(',');
    if (iequals(trim_ows(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) return false;
    list.remove_prefix(comma + 1);
  }
}

// Cuts the first CRLF-terminated line off `text` (all of it when no CRLF).
std::string_view take_line(std::string_view& text) {
  size_t eol = text.find("\r\n");
  std::string_view line = text.substr(0, eol);
  text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 2);
  return line;
}

std::optional<size_t> parse_length(std::string_view s) {
  size_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return n;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
  }
}

// A request's head, and what it says about framing the body and the
// connection.
struct Head {
  HttpRequest request;  // all but body and received_at
  size_t body_length = 0;
  bool http10 = false;
  bool keep_alive = true;
  bool expect_continue = false;
  int error = 0;  // non-zero: refuse the request with this status and close
};

void parse_request_line(std::string_view line, Head& h) {
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp1 == 0 || sp2 == sp1 + 1 || line.find(' ', sp2 + 1) != line.npos) {
    h.error = 400;
    return;
  }
  std::string_view version = line.substr(sp2 + 1);
  h.request.method = line.substr(0, sp1);
  h.request.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  h.http10 = version == "HTTP/1.0";
  if (!h.http10 && version != "HTTP/1.1") h.error = version.starts_with("HTTP/") ? 505 : 400;
}

void parse_header_lines(std::string_view text, Head& h) {
  while (!text.empty()) {
    std::string_view line = take_line(text);
    size_t colon = line.find(':');
    // No name, or whitespace in it (which includes obsolete line folding).
    if (colon == 0 || colon == line.npos || line.find_first_of(" \t") < colon) {
      h.error = 400;
      return;
    }
    h.request.headers.emplace_back(line.substr(0, colon), trim_ows(line.substr(colon + 1)));
  }
}

// Body length, keep-alive and Expect, from the headers.
void read_framing(Head& h) {
  bool close = false, keep_alive = false;
  std::optional<size_t> length;
  for (const auto& [name, value] : h.request.headers) {
    if (iequals(name, "Connection")) {
      close = close || has_token(value, "close");
      keep_alive = keep_alive || has_token(value, "keep-alive");
    } else if (iequals(name, "Transfer-Encoding")) {
      h.error = 411;  // a body we could only find the end of by decoding chunks
    } else if (iequals(name, "Content-Length")) {
      auto n = parse_length(value);
      if (!n || (length && *length != *n)) h.error = 400;
      length = n;
    } else if (iequals(name, "Expect")) {
      h.expect_continue = iequals(value, "100-continue");
    }
  }
  h.keep_alive = !close && (!h.http10 || keep_alive);
  h.body_length = length.value_or(0);
  if (h.error == 0 && h.body_length > kMaxBody) h.error = 413;
}

// `text`: the head without its final blank line.
Head parse_head(std::string_view text) {
  Head h;
  parse_request_line(take_line(text), h);
  if (h.error == 0) parse_header_lines(text, h);
  if (h.error == 0) read_framing(h);
  return h;
}

// The bytes of a response: status line, framing headers, the handler's
// headers, body. HEAD, 204 and 304 answers carry no body.
std::string serialize(const HttpResponse& r, const Head& h, bool close) {
  bool bodyless = h.request.method == "HEAD" || r.status == 204 || r.status == 304;
  size_t length = r.status == 204 || r.status == 304 ? 0 : r.body.size();
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + reason_phrase(r.status) + "\r\n";
  out += "Content-Length: " + std::to_string(length) + "\r\n";
  if (close) {
    out += "Connection: close\r\n";
  } else if (h.http10) {
    out += "Connection: keep-alive\r\n";  // HTTP/1.0 closes unless told otherwise
  }
  for (const auto& [name, value] : r.headers) {
    if (iequals(name, "Content-Length") || iequals(name, "Connection")) continue;
    out += name + ": " + value + "\r\n";
  }
  out += "\r\n";
  if (!bodyless) out += r.body;
  return out;
}

bool asks_to_close(const HttpResponse& r) {
  for (const auto& [name, value] : r.headers) {
    if (iequals(name, "Connection") && has_token(value, "close")) return true;
  }
  return false;
}

HttpResponse error_response(int status) {
  HttpResponse r;
  r.status = status;
  r.body = std::string(reason_phrase(status)) + "\n";
  return r;
}

// One accepted connection.
struct Connection {
  explicit Connection(int fd_) : fd(fd_) {}

  Fd fd;
  std::string in;   // received, not yet consumed
  std::string out;  // to send; the first `out_sent` bytes already are
  size_t out_sent = 0;
  std::optional<Head> head;    // of the request whose body is being received
  bool continue_sent = false;  // "100 Continue" (or the decision not to) for that request
  std::string delayed;         // a response held back until `due`
  std::optional<Clock::time_point> due;
  bool peer_closed = false;                       // read end of stream
  bool closing = false;                           // answer nothing more, close once flushed
  std::optional<Clock::time_point> linger_until;  // write side shut, discarding input
  bool dead = false;                              // close it now

  bool output_pending() const { return out_sent < out.size() || due.has_value(); }

  // The next time something is due on this connection regardless of I/O.
  std::optional<Clock::time_point> deadline() const { return due ? due : linger_until; }

  bool wants_input() const {
    if (peer_closed) return false;
    if (head && in.size() < head->body_length) return true;
    return in.size() < kMaxReadAhead;
  }
};

}  // namespace

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return value;
  }
  return "";
}

struct HttpServer::Impl {
  Impl(Handler handler_, bool record_);
  void run();

  // The loop's steps, all on the server thread.
  int poll_timeout(Clock::time_point now) const;
  void build_poll_set();
  void accept_connections(Clock::time_point now);
  void service(Connection& c, short revents, Clock::time_point now);
  void read_input(Connection& c);
  bool handle_requests(Connection& c, Clock::time_point now);
  bool handle_one(Connection& c, Clock::time_point now);
  void respond(Connection& c, const HttpResponse& r, const Head& h, Clock::time_point now);
  void flush(Connection& c);
  void settle(Connection& c, Clock::time_point now);
  HttpResponse dispatch(const HttpRequest& request);

  const Handler handler;
  const bool record;
  Fd wake;  // eventfd: readable once the destructor wants the loop to end
  Fd listener;
  int port = 0;

  mutable std::mutex mutex;
  mutable std::condition_variable arrived;
  std::vector<HttpRequest> requests;  // guarded by mutex
  size_t count = 0;                   // guarded by mutex

  // Owned by the server thread.
  std::vector<std::unique_ptr<Connection>> connections;
  std::vector<pollfd> fds;  // [0] wake, [1] listener, [2 + i] connections[i]
  std::optional<Clock::time_point> accept_paused_until;
  std::vector<char> buffer = std::vector<char>(64 * 1024);

  std::thread thread;  // last: started once everything else exists
};

HttpServer::Impl::Impl(Handler handler_, bool record_)
    : handler(std::move(handler_)),
      record(record_),
      wake(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      listener(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) {
  if (wake.get() < 0) throw_errno("http server: eventfd");
  if (listener.get() < 0) throw_errno("http server: socket");
  int bound = bind_loopback(listener, "http server");
  if (listen(listener.get(), SOMAXCONN) != 0) throw_errno("http server: listen");
  port = bound;
}

// Poll, then serve every connection that is ready or due, then accept, until
// the wake fd says stop.
void HttpServer::Impl::run() {
  for (;;) {
    build_poll_set();
    int n = poll(fds.data(), fds.size(), poll_timeout(Clock::now()));
    if (n < 0 && errno != EINTR) {
      std::perror("jobctl::test::HttpServer: poll");
      std::abort();  // a broken loop would only show up as confusing timeouts
    }
    if (n > 0 && fds[0].revents != 0) return;
    auto now = Clock::now();
    for (size_t i = 0; i < connections.size(); ++i) service(*connections[i], n > 0 ? fds[2 + i].revents : 0, now);
    if (n > 0 && fds[1].revents != 0) accept_connections(now);
    std::erase_if(connections, [](const auto& c) { return c->dead; });
  }
}

int HttpServer::Impl::poll_timeout(Clock::time_point now) const {
  std::optional<Clock::time_point> next = accept_paused_until;
  for (const auto& c : connections) {
    auto d = c->deadline();
    if (d && (!next || *d < *next)) next = d;
  }
  if (!next) return -1;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - now).count();
  return static_cast<int>(std::clamp<decltype(ms)>(ms, 0, 60'000));
}

void HttpServer::Impl::build_poll_set() {
  if (accept_paused_until && *accept_paused_until <= Clock::now()) accept_paused_until.reset();
  fds.clear();
  fds.push_back({wake.get(), POLLIN, 0});
  fds.push_back({accept_paused_until ? -1 : listener.get(), POLLIN, 0});
  for (const auto& c : connections) {
    short events = 0;
    if (c->wants_input()) events |= POLLIN;
    if (c->out_sent < c->out.size()) events |= POLLOUT;
    fds.push_back({c->fd.get(), events, 0});
  }
}

void HttpServer::Impl::accept_connections(Clock::time_point now) {
  for (;;) {
    int fd = accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      int one = 1;  // responses go out in one write; do not hold their tail back
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      connections.push_back(std::make_unique<Connection>(fd));
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    // Out of descriptors or memory: the listener stays readable, so stop
    // watching it for a moment rather than spin.
    if (errno != EAGAIN && errno != EWOULDBLOCK) accept_paused_until = now + kAcceptPause;
    return;
  }
}

// Whatever this connection can do now: read, release a due response,
// handle complete requests, write, and decide whether it is finished.
void HttpServer::Impl::service(Connection& c, short revents, Clock::time_point now) {
  auto deadline = c.deadline();
  if (revents == 0 && !(deadline && *deadline <= now)) return;
  if (revents & POLLNVAL) {
    c.dead = true;
    return;
  }
  if (revents & (POLLIN | POLLHUP | POLLERR)) read_input(c);
  if (c.due && *c.due <= now) {
    c.out += c.delayed;
    c.delayed.clear();
    c.due.reset();
  }
  bool more = true;
  while (more && !c.dead) {
    more = handle_requests(c, now);  // true: stopped only because output is backed up
    flush(c);
    more = more && c.out.empty();
  }
  settle(c, now);
}

void HttpServer::Impl::read_input(Connection& c) {
  size_t total = 0;
  while (total < kReadBudget) {
    ssize_t n = recv(c.fd.get(), buffer.data(), buffer.size(), 0);
    if (n > 0) {
      // Once closing, what the client still sends is of no use.
      if (!c.closing) c.in.append(buffer.data(), static_cast<size_t>(n));
      total += static_cast<size_t>(n);
      if (static_cast<size_t>(n) < buffer.size()) return;  // drained: spare the EAGAIN round trip
      continue;
    }
    if (n == 0) {
      c.peer_closed = true;
    } else if (errno == EINTR) {
      continue;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
      c.dead = true;
    }
    return;
  }
}

// Handles the complete requests in the input, in order, until one is
// incomplete, a response is delayed or the connection is closing. Returns
// true when it stopped because too much output is waiting to be sent.
bool HttpServer::Impl::handle_requests(Connection& c, Clock::time_point now) {
  while (!c.closing && !c.due) {
    if (c.out.size() - c.out_sent >= kMaxPendingOutput) return true;
    if (!handle_one(c, now)) return false;
  }
  return false;
}

// Parses and answers the next request; false when it is not complete yet.
bool HttpServer::Impl::handle_one(Connection& c, Clock::time_point now) {
  if (!c.head) {
    size_t start = c.in.find_first_not_of("\r\n");  // stray CRLFs between requests are allowed
    c.in.erase(0, start == std::string::npos ? c.in.size() : start);
    size_t end = c.in.find("\r\n\r\n");
    if (end == std::string::npos && c.in.size() <= kMaxHead) return false;
    if (end == std::string::npos || end + 4 > kMaxHead) {
      Head refused;
      refused.error = 431;
      respond(c, error_response(431), refused, now);
      return true;
    }
    c.head = parse_head(std::string_view(c.in).substr(0, end));
    c.in.erase(0, end + 4);
    if (c.head->error != 0) {
      respond(c, error_response(c.head->error), *c.head, now);
      c.head.reset();
      return true;
    }
  }
  if (c.in.size() < c.head->body_length) {
    if (c.head->expect_continue && !c.continue_sent) c.out += "HTTP/1.1 100 Continue\r\n\r\n";
    c.continue_sent = true;
    return false;
  }
  Head h = std::move(*c.head);
  c.head.reset();
  c.continue_sent = false;
  h.request.body = c.in.substr(0, h.body_length);
  c.in.erase(0, h.body_length);
  h.request.received_at = now;
  respond(c, dispatch(h.request), h, now);
  return true;
}

void HttpServer::Impl::respond(Connection& c, const HttpResponse& r, const Head& h, Clock::time_point now) {
  bool close = !h.keep_alive || h.error != 0 || asks_to_close(r);
  c.closing = c.closing || close;
  std::string bytes = serialize(r, h, close);
  if (r.delay > std::chrono::milliseconds(0)) {
    c.delayed = std::move(bytes);
    c.due = now + r.delay;
  } else {
    c.out += bytes;
  }
}

void HttpServer::Impl::flush(Connection& c) {
  while (c.out_sent < c.out.size()) {
    ssize_t n = send(c.fd.get(), c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
    if (n >= 0) {
      c.out_sent += static_cast<size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return;
    } else if (errno != EINTR) {
      c.dead = true;  // the client is gone
      return;
    }
  }
  c.out.clear();
  c.out_sent = 0;
}

// Ends the connection when nothing more can happen on it.
void HttpServer::Impl::settle(Connection& c, Clock::time_point now) {
  if (c.dead) return;
  if (c.linger_until) {
    c.dead = c.peer_closed || *c.linger_until <= now;
  } else if (c.peer_closed) {
    // Nothing more will come: finish sending what is ready, but a delayed
    // answer is for a client that gave up.
    c.dead = c.due.has_value() || c.out.empty();
  } else if (c.closing && !c.output_pending()) {
    shutdown(c.fd.get(), SHUT_WR);
    c.in.clear();
    c.linger_until = now + kLingerTime;
  }
}

HttpResponse HttpServer::Impl::dispatch(const HttpRequest& request) {
  {
    std::lock_guard lock(mutex);
    ++count;
    if (record) requests.push_back(request);
  }
  arrived.notify_all();
  try {
    return handler(request);
  } catch (const std::exception& e) {
    HttpResponse r = error_response(500);
    r.body = std::string("handler threw: ") + e.what() + "\n";
    return r;
  } catch (...) {
    return error_response(500);
  }
}

HttpServer::HttpServer(Handler handler, bool record) : impl_(std::make_unique<Impl>(std::move(handler), record)) {
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

HttpServer::~HttpServer() {
  uint64_t one = 1;
  while (write(impl_->wake.get(), &one, sizeof one) < 0 && errno == EINTR) {
  }
  impl_->thread.join();
}

int HttpServer::port() const { return impl_->port; }

std::string HttpServer::url(std::string_view path) const {
  return "http://127.0.0.1:" + std::to_string(impl_->port) + std::string(path);
}

std::vector<HttpRequest> HttpServer::requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->requests;
}

size_t HttpServer::request_count() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->count;
}

bool HttpServer::wait_for_requests(size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->arrived.wait_for(lock, timeout, [&] { return impl_->count >= n; });
}

int unused_port() {
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) throw_errno("unused_port: socket");
  return bind_loopback(fd, "unused_port");  // closed on return: nothing listens there
}

}  // namespace jobctl::test
