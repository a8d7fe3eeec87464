#pragma once
// Test support: a small HTTP/1.1 server on 127.0.0.1, for end-to-end tests
// of webhook jobs and for benchmarks.
//
// What it speaks: keep-alive by default (HTTP/1.0 and `Connection: close`
// honoured), several and pipelined requests per connection, bodies framed
// by Content-Length, `Expect: 100-continue`. What it refuses, with an error
// response and a close: a body of unknown length (Transfer-Encoding: 411),
// headers over 64 KiB (431), a body over 16 MiB (413), a malformed request
// (400) or another HTTP version (505). Refused requests never reach the
// handler and are not counted.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jobctl::test {

struct HttpRequest {
  std::string method;  // "POST"
  std::string target;  // "/hook?x=1"
  std::vector<std::pair<std::string, std::string>> headers;  // as received, in order
  std::string body;
  std::chrono::steady_clock::time_point received_at;  // when its last byte was read
  // The first header of that name, case-insensitive; "" when absent.
  std::string header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  // Sent after the server's own `Content-Length` (and `Connection`); a
  // Content-Length or Connection here is not sent, but `Connection: close`
  // makes the server close the connection after this response.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Answer after this long (without holding up other connections): for
  // timeout tests. Later requests on the same connection wait their turn.
  std::chrono::milliseconds delay{0};
};

// Thread safety: every public member may be called from any thread. The
// handler runs on the server's thread, one request at a time; a handler that
// throws answers 500 with the exception's message as the body.
class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  // Listens on 127.0.0.1 on an ephemeral port and serves on a thread of its
  // own. record=false keeps no requests (benchmarks). Throws
  // std::system_error when the socket cannot be set up.
  explicit HttpServer(Handler handler, bool record = true);
  // Stops the thread and closes every connection, delayed answers unsent.
  // Waits for a handler that is running: do not destroy it from one.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  std::string url(std::string_view path = "/") const;  // "http://127.0.0.1:PORT" + path

  // A copy of every request received so far, in arrival order (empty when
  // record=false). A request counts as received just before its handler runs.
  std::vector<HttpRequest> requests() const;
  size_t request_count() const;  // counted even when record=false
  // Blocks until at least n requests arrived or the timeout passed; returns
  // whether they did.
  bool wait_for_requests(size_t n, std::chrono::milliseconds timeout) const;

 private:
  struct Impl;  // the sockets and the loop, in http_server.cpp
  std::unique_ptr<Impl> impl_;
};

// A port on 127.0.0.1 where nothing listens (bound then closed), for
// "connection refused" tests. Nothing stops another socket from taking it
// later, but among the ~28,000 ephemeral ports that is unlikely within a test.
int unused_port();

}  // namespace jobctl::test
