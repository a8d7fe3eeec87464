#pragma once
// jobctl serve: the HTTP API over the store every other command uses.
// Stateless: each worker thread has its own store connection, so several
// servers over one PostgreSQL serve the same data.
#include <cstddef>
#include <optional>
#include <string>

#include "common/config/dsn.hpp"

namespace jobctl::server {

struct ServeOptions {
  std::string listen = "127.0.0.1:8080";  // HOST:PORT, [V6]:PORT; port 0 picks a free one
  std::string tokens_file;
  std::optional<std::string> tls_cert, tls_key;
  size_t max_body = 32u << 20;  // bytes
  int timeout_s = 30;           // a request arriving whole (read_deadline.hpp), each write of an answer
  int keep_alive_s = 5;         // how long an idle connection is kept open for its next request
  int threads = 8;
  bool metrics_need_token = false;  // GET /metrics asks for a token of any role
};

// Serves until SIGTERM or SIGINT, letting requests under way finish; says
// "jobctl serve: listening on URL" on stderr once it accepts. Throws Error
// for bad options, an unreadable tokens file or an address it cannot bind.
void serve(const config::Dsn& dsn, const ServeOptions& options);

}  // namespace jobctl::server
