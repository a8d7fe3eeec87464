#include "server/problem.hpp"

#include <nlohmann/json.hpp>

namespace jobctl::server {
namespace {

const char* title_of(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return status < 500 ? "Bad Request" : "Internal Server Error";
  }
}

}  // namespace

int status_of(ExitCode code) {
  switch (code) {
    case ExitCode::usage: return 400;
    case ExitCode::not_found: return 404;
    case ExitCode::invalid_state: return 409;
    case ExitCode::store: return 503;
    case ExitCode::conflict: return 412;
    default: return 500;
  }
}

void send_problem(httplib::Response& res, int status, const std::string& detail, const std::string& hint,
                  int exit_code) {
  nlohmann::json j{{"type", "about:blank"}, {"title", title_of(status)}, {"status", status}, {"detail", detail}};
  if (!hint.empty()) j["hint"] = hint;
  if (exit_code != 0) j["exit_code"] = exit_code;
  res.status = status;
  // A detail may quote what the client sent, invalid UTF-8 and all.
  res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                  "application/problem+json");
}

void send_error(httplib::Response& res, const Error& e) {
  const int status = dynamic_cast<const BodyError*>(&e) ? 422 : status_of(e.code());
  send_problem(res, status, e.what(), e.hint(), static_cast<int>(e.code()));
}

}  // namespace jobctl::server
