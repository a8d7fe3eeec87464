#pragma once
// The web console of jobctl serve, under /ui/: its files are compiled in
// (server/console/), and it logs in the way Jupyter does: /ui/?token=TOKEN,
// or the login form, sets an HttpOnly SameSite=Strict cookie holding the
// token and redirects to a URL without it. The pages then call /api/v1 with
// that cookie (see authenticate.hpp for CSRF).
#include <httplib.h>

#include "server/route_table.hpp"
#include "server/tokens.hpp"

namespace jobctl::server {

void add_console_routes(RouteTable& routes, const Tokens& tokens, bool tls);

}  // namespace jobctl::server
