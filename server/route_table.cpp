#include "server/route_table.hpp"

#include <algorithm>

#include "common/util/error.hpp"
#include "server/read_deadline.hpp"

namespace jobctl::server {

void RouteTable::add(const std::string& method, const std::string& pattern, httplib::Server::Handler inner) {
  // Its request is read whole when a handler runs: no deadline from here.
  auto handler = [inner = std::move(inner)](const httplib::Request& req, httplib::Response& res) {
    done_reading();
    inner(req, res);
  };
  if (method == "GET") svr_->Get(pattern, std::move(handler));
  else if (method == "POST") svr_->Post(pattern, std::move(handler));
  else if (method == "PATCH") svr_->Patch(pattern, std::move(handler));
  else if (method == "DELETE") svr_->Delete(pattern, std::move(handler));
  else throw Error(ExitCode::internal, "route with method " + method);
  entries_.push_back(Entry{method, std::regex(pattern)});
}

std::string RouteTable::allowed(const std::string& path) const {
  std::vector<std::string> methods;
  for (const auto& e : entries_) {
    if (!std::regex_match(path, e.pattern)) continue;
    methods.push_back(e.method);
    if (e.method == "GET") methods.push_back("HEAD");
  }
  std::sort(methods.begin(), methods.end());
  methods.erase(std::unique(methods.begin(), methods.end()), methods.end());
  std::string out;
  for (const auto& m : methods) out += (out.empty() ? "" : ", ") + m;
  return out;
}

}  // namespace jobctl::server
