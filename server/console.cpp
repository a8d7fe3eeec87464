#include "server/console.hpp"

#include <optional>
#include <string>

#include "server/authenticate.hpp"
#include "server/embedded_files.hpp"
#include "server/problem.hpp"

namespace jobctl::server {
namespace {

std::optional<std::string_view> file_body(std::string_view name) {
  for (const auto& f : console_files())
    if (f.name == name) return f.body;
  return std::nullopt;
}

const char* content_type_of(std::string_view name) {
  auto ends = [&](std::string_view ext) { return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext; };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

// Headers on every console response: its own scripts and styles only, never
// framed, and no Referer to other sites.
void secure_headers(httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
                 "form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "same-origin");
  res.set_header("X-Frame-Options", "DENY");
}

void send_file(httplib::Response& res, std::string_view name, bool no_store) {
  auto body = file_body(name);
  if (!body) {
    send_problem(res, 404, "no console file " + std::string(name));
    return;
  }
  secure_headers(res);
  res.set_header("Cache-Control", no_store ? "no-store" : "no-cache");
  res.set_content(body->data(), body->size(), content_type_of(name));
}

void redirect(httplib::Response& res, const std::string& to) {
  res.status = 303;
  res.set_header("Location", to);
  res.set_header("Cache-Control", "no-store");
  secure_headers(res);
}

// A login: a good token sets the cookie and goes to the console, a bad one
// back to the form with the error shown.
void log_in(httplib::Response& res, const Tokens& tokens, const std::string& secret, bool tls) {
  if (tokens.find(secret)) {
    res.set_header("Set-Cookie", login_cookie(secret, tls));
    redirect(res, "/ui/");
  } else {
    res.set_header("Set-Cookie", logout_cookie(tls));
    redirect(res, "/ui/?error=bad-token");
  }
}

}  // namespace

void add_console_routes(RouteTable& routes, const Tokens& tokens, bool tls) {
  routes.add("GET", "/", [](const httplib::Request&, httplib::Response& res) { redirect(res, "/ui/"); });
  routes.add("GET", "/ui", [](const httplib::Request&, httplib::Response& res) { redirect(res, "/ui/"); });
  routes.add("GET", "/ui/", [&tokens, tls](const httplib::Request& req, httplib::Response& res) {
    if (req.has_param("token")) {
      // A link on another site must not log the browser in with the link's
      // token (login CSRF): a link typed, bookmarked or opened from a
      // terminal comes with no Sec-Fetch-Site or "none". Then the form.
      const std::string site = req.get_header_value("Sec-Fetch-Site");
      if (site == "cross-site" || site == "same-site") return redirect(res, "/ui/");
      return log_in(res, tokens, req.get_param_value("token"), tls);
    }
    auto caller = authenticate(req, tokens);
    send_file(res, caller ? "index.html" : "login.html", true);
  });
  routes.add("POST", "/ui/login", [&tokens, tls](const httplib::Request& req, httplib::Response& res) {
    // The form's own page only: a login forced from another site is refused too.
    if (from_other_origin(req))
      return send_problem(res, 403, "a login from another origin (" + req.get_header_value("Origin") + ") is refused");
    log_in(res, tokens, req.has_param("token") ? req.get_param_value("token") : "", tls);
  });
  routes.add("POST", "/ui/logout", [tls](const httplib::Request& req, httplib::Response& res) {
    if (auto why = csrf_refusal(req); !why.empty()) return send_problem(res, 403, why);
    res.set_header("Set-Cookie", logout_cookie(tls));
    res.status = 204;
  });
  routes.add("GET", R"(/ui/([A-Za-z0-9_.-]+))", [](const httplib::Request& req, httplib::Response& res) {
    const std::string name = req.matches[1].str();
    if (name == "index.html") return redirect(res, "/ui/");  // served only when logged in, at /ui/
    send_file(res, name, false);
  });
}

}  // namespace jobctl::server
