#pragma once
// How `jobctl serve` starts the HTTP server. The server (cpp-httplib and
// OpenSSL, about 7 ms of every start-up) lives in its own program,
// jobctl-serve, installed next to jobctl: jobctl serve becomes it by exec,
// with the same command line and process id, so every other command starts
// without loading it. jobctl-serve is the whole jobctl command line with
// the server linked in, and runs it in place.
#include <string>
#include <vector>

#include "common/config/dsn.hpp"
#include "server/serve.hpp"

namespace jobctl::cli {

// `argv`: the command line as jobctl was given it. Returns only by
// throwing: Error(store) when jobctl-serve cannot be run, else what
// server::serve throws.
void start_server(const std::vector<std::string>& argv, const config::Dsn& dsn, const server::ServeOptions& options);

}  // namespace jobctl::cli
