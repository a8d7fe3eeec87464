#pragma once
// The HTTP API of jobctl serve, under /api/v1, as one table of routes: the
// server registers each, and the OpenAPI document is made from the same
// table, so the two cannot disagree. A handler turns a request into a call
// of the operations layer (common/ops) and its JSON into the reply.
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "common/config/dsn.hpp"
#include "common/store/store.hpp"
#include "server/group_commit.hpp"
#include "server/tokens.hpp"

namespace jobctl::server {

inline constexpr const char* kApiPrefix = "/api/v1";

// A request, the caller's store connection (its actor already the token's
// name), the caller's token, and the server's group commit for submissions.
struct Call {
  const httplib::Request& request;
  const config::Dsn& dsn;  // for a streamed answer's own connection
  store::Store& store;
  const Token& token;
  GroupCommit& submissions;
  std::string path_param(size_t i) const { return request.matches[static_cast<int>(i)].str(); }
  // A query parameter, or "" when absent.
  std::string query(const std::string& name) const;
};

struct Reply {
  int status = 200;
  nlohmann::json body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Instead of `body`: an answer sent as it is made (server-sent events),
  // of this content type, by a provider that runs on the request's worker
  // thread after the handler has returned.
  std::string stream_type = {};
  httplib::ContentProviderWithoutLength stream = {};
};

struct Parameter {
  std::string name;
  std::string in;  // "path" or "query"
  std::string description;
  bool required = false;  // a path's always is
};

struct Route {
  std::string method;  // GET, POST, PATCH, DELETE
  std::string path;    // below /api/v1, in OpenAPI's form: /jobs/{id}
  Role role;           // the least role that may call it
  std::string summary;
  std::vector<Parameter> parameters;  // path parameters first, in order
  std::string body;                   // what the request body is ("" for none)
  Reply (*handle)(Call&);
  std::string produces = "application/json";  // the content type of a 200
};

// Every route of the API, in the order the OpenAPI document lists them.
std::span<const Route> api_routes();

// The route's path as the regular expression the server matches. A
// parameter does not take a segment another route writes out in its place
// (GET /dead-letter/{id} is not GET /dead-letter/replay, which is POST
// only: 405, not "invalid id").
std::string path_pattern(const Route& r);

// The OpenAPI 3.1 document of api_routes().
nlohmann::json openapi_document();

}  // namespace jobctl::server
