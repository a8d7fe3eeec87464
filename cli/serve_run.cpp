// jobctl-serve's start_server: the server is linked in; it runs here.
#include "cli/serve_start.hpp"

namespace jobctl::cli {

void start_server(const std::vector<std::string>&, const config::Dsn& dsn, const server::ServeOptions& options) {
  server::serve(dsn, options);
}

}  // namespace jobctl::cli
