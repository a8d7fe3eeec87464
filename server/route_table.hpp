#pragma once
// The server's routes, registered with cpp-httplib through one table that
// remembers them: cpp-httplib answers a path it serves under another
// method as it answers no path (404), and the table tells the two apart,
// so that a wrong method is a 405 with an Allow header (RFC 9110, 15.5.6).
#include <regex>
#include <string>
#include <vector>

#include <httplib.h>

namespace jobctl::server {

class RouteTable {
 public:
  explicit RouteTable(httplib::Server& svr) : svr_(&svr) {}

  // Serves `method` (GET, POST, PATCH or DELETE) at the paths `pattern`
  // (a regular expression, as cpp-httplib takes it) matches.
  void add(const std::string& method, const std::string& pattern, httplib::Server::Handler handler);
  // The methods `path` is served under, for an Allow header ("GET, HEAD,
  // POST"); empty when no route has the path. GET brings HEAD, which
  // cpp-httplib serves with it.
  std::string allowed(const std::string& path) const;

 private:
  struct Entry {
    std::string method;
    std::regex pattern;
  };
  httplib::Server* svr_;
  std::vector<Entry> entries_;
};

}  // namespace jobctl::server
