#include "server/serve.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "common/store/store.hpp"
#include "common/util/error.hpp"
#include "common/util/log.hpp"
#include "common/util/utf8.hpp"
#include "server/api.hpp"
#include "server/handlers.hpp"
#include "server/authenticate.hpp"
#include "server/console.hpp"
#include "server/metrics.hpp"
#include "server/problem.hpp"
#include "server/read_deadline.hpp"
#include "server/route_table.hpp"
#include "server/tokens.hpp"

namespace jobctl::server {
namespace {


// Each worker thread's own connection, opened on its first request and
// dropped after a store error, or when its SQLite file was replaced, so
// that the next request reconnects.
thread_local std::unique_ptr<store::Store> t_store;
// What the access log line of the thread's request says besides the request.
thread_local std::string t_token_name;
thread_local std::chrono::steady_clock::time_point t_started;
// The thread's answer ends its connection: what is left of the request is
// unread (a method cpp-httplib does not know stops it at the first line).
thread_local bool t_close_after;

// cpp-httplib's pool, each connection's task reading its first request
// within the read budget (read_deadline.hpp).
class ReadBoundPool : public httplib::ThreadPool {
 public:
  ReadBoundPool(size_t threads, std::chrono::seconds budget) : ThreadPool(threads), budget_(budget) {}
  void enqueue(std::function<void()> fn) override {
    ThreadPool::enqueue([fn = std::move(fn), budget = budget_] {
      t_started = std::chrono::steady_clock::now();  // for a request refused before its headers are whole
      t_token_name.clear();
      t_close_after = false;  // a connection before on this thread may have ended unlogged
      start_reading(budget);
      fn();
      done_reading();
    });
  }

 private:
  std::chrono::seconds budget_;
};

store::Store& thread_store(const config::Dsn& dsn) {
  store::forget_if_replaced(t_store);
  if (!t_store) {
    auto s = store::Store::open(dsn, store::Create::no);
    s->require_schema();
    t_store = std::move(s);
  }
  return *t_store;
}

void refuse_unauthenticated(httplib::Response& res) {
  res.set_header("WWW-Authenticate", "Bearer");
  send_problem(res, 401, "this needs a token: send the header Authorization: Bearer TOKEN",
               "the tokens are in the server's --tokens-file");
}

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(body.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "application/json");
}

// Answers the exception being handled: a jobctl Error as its problem
// document; a bug (exit 70, or any other exception) as a bare 500, its
// details in the server's log only.
void send_caught(const httplib::Request& req, httplib::Response& res) {
  std::string bug;
  try {
    throw;
  } catch (const Error& e) {
    if (e.code() == ExitCode::store) t_store.reset();
    if (e.code() != ExitCode::internal) return send_error(res, e);
    bug = e.what();
  } catch (const std::exception& e) {
    t_store.reset();
    bug = e.what();
  }
  util::log_event(util::LogLevel::error, "internal_error", {{"path", req.path}, {"error", bug}});
  send_problem(res, 500, "internal error (a bug): the server's log has the details", "", 70);
}

// The query's parameters, each value read after its name's first '='.
// cpp-httplib keeps what follows the last one: ?older_than=30d=1s was a
// purge of everything older than 1 s (a tester), ?queue=a=b listed queue
// b. Read this way, such a value is the mistake it is and is refused.
void read_query(httplib::Request& req) {
  req.params.clear();
  const size_t mark = req.target.find('?');
  if (mark == std::string::npos) return;
  size_t at = mark + 1;
  while (at <= req.target.size()) {
    size_t end = req.target.find('&', at);
    if (end == std::string::npos) end = req.target.size();
    const std::string piece = req.target.substr(at, end - at);
    at = end + 1;
    if (piece.empty()) continue;
    const size_t eq = piece.find('=');
    req.params.emplace(httplib::detail::decode_url(piece.substr(0, eq), true),
                       eq == std::string::npos ? std::string() : httplib::detail::decode_url(piece.substr(eq + 1), true));
  }
}

// What is settled of a request before its body is read (this hook runs
// first; the request is the server's own, not const), so that a body is
// only ever read whole up to --max-body, as the JSON it must be.
httplib::Server::HandlerResponse before_the_body(httplib::Request& req, httplib::Response& res) {
  using httplib::Server;
  read_query(req);
  // A body cpp-httplib would read without counting it against --max-body:
  // chunked (no length given first) or compressed (inflated in memory).
  if (req.has_header("Transfer-Encoding")) {
    send_problem(res, 411, "a request body must come with its Content-Length, not in chunks",
                 "send it whole, with Content-Length (curl does with --data-binary @FILE)");
    return Server::HandlerResponse::Handled;
  }
  if (req.has_header("Content-Encoding")) {
    send_problem(res, 415, "a request body must not be compressed (Content-Encoding)", "send it as it is");
    return Server::HandlerResponse::Handled;
  }
  // A request with neither Content-Length nor Transfer-Encoding has no
  // body (RFC 9112, 6.3), but cpp-httplib reads a POST's until the client
  // closes: `curl -X POST` waited the read timeout, and its pause or
  // trigger was done after it had given up. Said outright, the empty body
  // is read at once.
  if (!req.has_header("Content-Length")) req.headers.emplace("Content-Length", "0");
  // One length, in digits (RFC 9112, 6.3): two that differ are a request
  // another server on the way may have cut elsewhere, and cpp-httplib read
  // a negative or overflowing one as a body too large, after --timeout.
  const auto lengths = req.headers.equal_range("Content-Length");
  for (auto it = lengths.first; it != lengths.second; ++it) {
    const std::string& v = it->second;
    if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos ||
        v != lengths.first->second) {
      send_problem(res, 400, "Content-Length must be one length, in digits", "send the body's length once");
      res.set_header("Connection", "close");
      return Server::HandlerResponse::Handled;
    }
  }
  // The API's bodies are JSON whatever their Content-Type says: `curl -d`
  // says a form, which cpp-httplib parsed into parameters (a query's, to
  // the handlers) and refused past 8 KiB as too large. The console's login
  // form stays a form.
  if (req.path.rfind(kApiPrefix, 0) == 0) {
    req.headers.erase("Content-Type");
    req.headers.emplace("Content-Type", "application/json");
  }
  // Every answer is whole JSON: a Range would cut it, or, as many ranges of
  // the same bytes, multiply it in memory.
  req.ranges.clear();
  req.headers.erase("Range");
  return Server::HandlerResponse::Unhandled;
}

// A query parameter or a part of the path that is not text: refused before
// any handler passes it on (PostgreSQL refuses it as a statement's
// parameter, which was a 500).
void refuse_non_text(const httplib::Request& req) {
  auto check = [](const std::string& value, const std::string& what) {
    if (value.find('\0') != std::string::npos || !util::is_utf8(value))
      throw usage_error(fmt::format("{} is not UTF-8 text, or holds a NUL byte", what),
                        "percent-encode UTF-8 text only");
  };
  for (const auto& [name, value] : req.params) check(value, fmt::format("query parameter {}", util::show_bytes(name)));
  for (size_t i = 1; i < req.matches.size(); ++i) check(req.matches[i].str(), "the path");
}

// A query parameter the route does not take, one given twice or one left
// empty: refused, not ignored. A typo listed everything (?stauts=dead) or
// left a run running (DELETE …?cancel_runing=true), an unset variable
// (?queue=$QUEUE) listed every queue, and the second of two went unread.
void refuse_unknown_parameters(const httplib::Request& req, const Route& route) {
  std::string takes;
  for (const auto& p : route.parameters)
    if (p.in == "query") takes += (takes.empty() ? "" : ", ") + p.name;
  for (const auto& [name, value] : req.params) {
    const auto known = std::find_if(route.parameters.begin(), route.parameters.end(),
                                    [&](const Parameter& p) { return p.in == "query" && p.name == name; });
    if (known == route.parameters.end())
      throw usage_error(fmt::format("{} {} takes no query parameter '{}'", route.method, route.path,
                                    util::show_bytes(name)),
                        takes.empty() ? "it takes none: leave the query out" : "it takes " + takes);
    if (const size_t n = req.params.count(name); n > 1)
      throw usage_error(fmt::format("query parameter '{}' is given {} times", name, n), "give it once");
    if (value.empty())
      throw usage_error(fmt::format("?{}= is empty", name), "give it a value, or leave the parameter out");
  }
}

httplib::Server::Handler handler_of(const Route& route, const Tokens& tokens, const config::Dsn& dsn,
                                    GroupCommit& submissions) {
  return [&route, &tokens, &dsn, &submissions](const httplib::Request& req, httplib::Response& res) {
    auto caller = authenticate(req, tokens);
    if (!caller) return refuse_unauthenticated(res);
    const Token& token = caller->token;
    t_token_name = token.name;
    if (caller->by_cookie && route.method != "GET")
      if (auto why = csrf_refusal(req); !why.empty()) return send_problem(res, 403, why);
    if (token.role < route.role) {
      send_problem(res, 403,
                   fmt::format("token '{}' has the role {}; {} {} needs {}", token.name, to_string(token.role),
                               route.method, route.path, to_string(route.role)));
      return;
    }
    try {
      refuse_non_text(req);
      refuse_unknown_parameters(req, route);
      auto& store = thread_store(dsn);
      store.set_actor(token.name);
      Call call{req, dsn, store, token, submissions};
      Reply reply = route.handle(call);
      for (const auto& [name, value] : reply.headers) res.set_header(name, value);
      if (reply.stream) {
        res.status = reply.status;
        res.set_chunked_content_provider(reply.stream_type, std::move(reply.stream));
        return;
      }
      send_json(res, reply.status, reply.body);
    } catch (...) {
      send_caught(req, res);
    }
  };
}

void add_routes(RouteTable& routes, const Tokens& tokens, const config::Dsn& dsn, const ServeOptions& o,
                StoreMetrics& metrics, GroupCommit& submissions) {
  for (const auto& route : api_routes())
    routes.add(route.method, path_pattern(route), handler_of(route, tokens, dsn, submissions));
  routes.add("GET", std::string(kApiPrefix) + "/openapi.json",
             [](const httplib::Request&, httplib::Response& res) { send_json(res, 200, openapi_document()); });
  routes.add("GET", "/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  routes.add("GET", "/metrics", [&tokens, &dsn, &metrics, &submissions, need_token = o.metrics_need_token](
                          const httplib::Request& req, httplib::Response& res) {
    if (need_token && !authenticate(req, tokens)) return refuse_unauthenticated(res);
    try {
      res.set_content(metrics.render(thread_store(dsn)) + server_exposition(submissions),
                      "text/plain; version=0.0.4; charset=utf-8");
    } catch (const Error& e) {
      send_caught(req, res);
      // Anyone may scrape /metrics without --metrics-token: a store
      // error's text names the DSN's host, port, user and database (a
      // tester). A token holder is told; anyone else, that it failed.
      if (e.code() == ExitCode::store && !authenticate(req, tokens)) {
        util::log_event(util::LogLevel::warn, "metrics_unanswered", {{"error", e.what()}});
        send_problem(res, 503, "the store does not answer: the server's log says why", "",
                     static_cast<int>(ExitCode::store));
      }
    } catch (...) {
      send_caught(req, res);
    }
  });
  add_console_routes(routes, tokens, o.tls_cert.has_value());
}

// HOST:PORT or [HOST]:PORT.
std::pair<std::string, int> split_listen(const std::string& listen) {
  const auto hint = "write it as HOST:PORT, e.g. 127.0.0.1:8080 or [::1]:8080 (port 0: any free port)";
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size())
    throw usage_error(fmt::format("invalid --listen '{}'", listen), hint);
  std::string host = listen.substr(0, colon);
  if (host.front() == '[') {
    if (host.back() != ']') throw usage_error(fmt::format("invalid --listen '{}'", listen), hint);
    host = host.substr(1, host.size() - 2);
  }
  int port = 0;
  try {
    size_t used = 0;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1) port = -1;
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 0 || port > 65535) throw usage_error(fmt::format("invalid --listen '{}': bad port", listen), hint);
  return {host, port};
}

}  // namespace

void serve(const config::Dsn& dsn, const ServeOptions& o) {
  const Tokens tokens = Tokens::load(o.tokens_file);
  {
    // Fails here, before listening, for a store that is not there (the
    // default file is made on first use, as by every command).
    auto probe = store::Store::open(dsn, dsn.is_default ? store::Create::yes : store::Create::no);
    probe->require_schema();
  }
  if (o.tls_cert.has_value() != o.tls_key.has_value())
    throw usage_error("--tls-cert and --tls-key go together");
  GroupCommit submissions(dsn);  // outlives the server, which answers every request before it is gone
  std::unique_ptr<httplib::Server> svr;
  if (o.tls_cert) {
    auto tls = std::make_unique<httplib::SSLServer>(o.tls_cert->c_str(), o.tls_key->c_str());
    if (!tls->is_valid())
      throw usage_error(fmt::format("cannot load the TLS certificate '{}' or key '{}'", *o.tls_cert, *o.tls_key),
                        "both are PEM files; the key must not need a password");
    svr = std::move(tls);
  } else {
    svr = std::make_unique<httplib::Server>();
  }
  const int threads = o.threads;
  limit_log_streams(threads / 2);
  const std::chrono::seconds read_budget(o.timeout_s);
  svr->new_task_queue = [threads, read_budget] { return new ReadBoundPool(static_cast<size_t>(threads), read_budget); };
  svr->set_payload_max_length(o.max_body);
  svr->set_read_timeout(o.timeout_s, 0);
  svr->set_write_timeout(o.timeout_s, 0);
  svr->set_keep_alive_max_count(1000);
  // The headers and the body of an answer go out in separate writes: with
  // Nagle's algorithm the body waits for the client's delayed ACK (40 ms).
  svr->set_tcp_nodelay(true);
  // cpp-httplib's own socket options set SO_REUSEPORT, which lets a second
  // server bind a port in use without a word: SO_REUSEADDR only (a restart
  // still binds past TIME_WAIT). The socket is kept to widen its backlog below.
  int listening_fd = -1;
  svr->set_socket_options([&listening_fd](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listening_fd = sock;
  });
  const std::chrono::seconds keep_alive(o.keep_alive_s);
  svr->set_keep_alive_timeout(keep_alive.count());
  svr->set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    t_started = std::chrono::steady_clock::now();
    auto handled = before_the_body(const_cast<httplib::Request&>(req), res);
    if (handled == httplib::Server::HandlerResponse::Handled) done_reading();
    return handled;
  });
  RouteTable routes(*svr);
  // Whatever no handler answered (no such route, a body too large) is a problem too.
  svr->set_error_handler([&routes](const httplib::Request& req, httplib::Response& res) {
    done_reading();
    if (reading_expired()) res.set_header("Connection", "close");  // and the logger closes it
    if (!res.body.empty()) return;
    // A method cpp-httplib does not know (TRACE, CONNECT, FOO) it answers
    // 400, its headers unread: 405 where the path is served, else 501 (RFC
    // 9110, 15.6.2), and the connection closes.
    static const std::set<std::string> kKnown{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
    const bool unknown_method = res.status == 400 && !reading_expired() && !req.method.empty() &&
                                kKnown.count(req.method) == 0;
    if (unknown_method) {
      res.set_header("Connection", "close");
      t_close_after = true;
    }
    const std::string allow =
        res.status == 404 || res.status == 405 || unknown_method ? routes.allowed(req.path) : "";
    if (!allow.empty()) {
      res.set_header("Allow", allow);
      send_problem(res, 405, fmt::format("{} {} is not served; it takes {}", req.method, req.path, allow),
                   fmt::format("{}/openapi.json lists the routes", kApiPrefix));
    } else if (unknown_method) {
      send_problem(res, 501, fmt::format("the method {} is not one the server knows", req.method),
                   fmt::format("{}/openapi.json lists the routes and their methods", kApiPrefix));
    } else if (res.status == 404)
      send_problem(res, 404, fmt::format("no route {} {}", req.method, req.path),
                   fmt::format("{}/openapi.json lists the routes", kApiPrefix));
    else if (res.status == 413)
      send_problem(res, 413, "the request body is larger than the server's --max-body");
    else
      send_problem(res, res.status, fmt::format("the request could not be served (HTTP {})", res.status));
  });
  // The access log: never the token, nor the query (the console's login carries one).
  svr->set_logger([read_budget, keep_alive](const httplib::Request& req, const httplib::Response& res) {
    const auto now = std::chrono::steady_clock::now();
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - t_started);
    util::log_event(util::LogLevel::info, "request",
                    {{"method", req.method},
                     {"path", req.path},
                     {"status", std::to_string(res.status)},
                     {"token", t_token_name.empty() ? "-" : t_token_name},
                     {"remote", req.remote_addr},
                     {"ms", fmt::format("{:.1f}", static_cast<double>(us.count()) / 1000)}});
    // The connection's next request, if it keeps alive, gets its budget
    // beyond the keep-alive wait; one that ran out of it closes the
    // connection (an expired deadline fails the keep-alive wait at once).
    // What the log says of it starts anew: a request refused before its
    // headers were whole was logged with the previous one's token.
    t_started = now;
    t_token_name.clear();
    start_reading(reading_expired() || t_close_after ? std::chrono::seconds(0) : read_budget + keep_alive);
    t_close_after = false;
  });
  StoreMetrics metrics;
  add_routes(routes, tokens, dsn, o, metrics, submissions);

  auto [host, port] = split_listen(o.listen);
  if (port == 0) port = svr->bind_to_any_port(host);
  else if (!svr->bind_to_port(host, port)) port = -1;
  if (port < 0)
    throw usage_error(fmt::format("cannot listen on {}: the address is in use or not this host's", o.listen),
                      "pick another --listen");
  // cpp-httplib listens with a backlog of 5: clients connecting together
  // overflowed it (a dropped SYN costs a second, or the connection is
  // reset). Listening again on the bound socket raises it.
  if (listening_fd >= 0) ::listen(listening_fd, SOMAXCONN);

  // SIGTERM and SIGINT stop the server from a thread of their own; blocked
  // here before any worker starts, so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::atomic<bool> listening{true};
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (listening) util::log_event(util::LogLevel::info, "stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
    stop_waiting();  // idle kept-alive connections close now, not after their keep-alive
    svr->stop();
  });
  const std::string shown_host = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  std::fprintf(stderr, "jobctl serve: listening on %s://%s:%d%s\n", o.tls_cert ? "https" : "http",
               shown_host.c_str(), port, kApiPrefix);
  std::fflush(stderr);
  const bool ok = svr->listen_after_bind();  // returns once stopped and the requests under way are answered
  listening = false;
  pthread_kill(stopper.native_handle(), SIGTERM);  // a stopper still waiting (the server failed) ends too
  stopper.join();
  if (!ok) throw Error(ExitCode::internal, fmt::format("the server on {} stopped accepting connections", o.listen));
}

}  // namespace jobctl::server
