#include "common/store/grants.hpp"

#include <fmt/format.h>

#include "common/store/migrations.hpp"
#include "common/util/error.hpp"

namespace jobctl::store {
namespace {

// A name as an SQL identifier.
std::string quoted(const std::string& name) {
  std::string out = "\"";
  for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The tables a submitter adds rows to: jobs and their first runs, the
// audit trail, DAGs and their runs, and the tenants and queues they name.
constexpr const char* kSubmitterInserts[] = {"jobs", "runs", "job_events", "dags", "dag_nodes", "dag_edges",
                                             "dag_runs", "tenants", "queues"};

}  // namespace

GrantKind parse_grant_kind(std::string_view text) {
  if (text == "none") return GrantKind::none;
  if (text == "reader") return GrantKind::reader;
  if (text == "submitter") return GrantKind::submitter;
  if (text == "operator") return GrantKind::operator_;
  if (text == "agent") return GrantKind::agent;
  throw usage_error(fmt::format("unknown kind '{}'", text), "give one of reader, submitter, operator, agent, none");
}

std::string_view to_string(GrantKind kind) {
  switch (kind) {
    case GrantKind::none: return "none";
    case GrantKind::reader: return "reader";
    case GrantKind::submitter: return "submitter";
    case GrantKind::operator_: return "operator";
    case GrantKind::agent: return "agent";
  }
  return "none";
}

std::vector<std::string> grant(Connection& conn, GrantKind kind, const std::string& role) {
  if (conn.dialect() != Dialect::postgres)
    throw usage_error("jobctl grant is for a PostgreSQL store",
                      "a SQLite store is guarded by its file's permissions: chmod and chgrp it");
  Transaction tx(conn, TxMode::write);
  if (conn.query("SELECT 1 FROM pg_roles WHERE rolname = $1", {role}).empty())
    throw usage_error(fmt::format("no PostgreSQL role '{}'", role),
                      fmt::format("create it first: CREATE ROLE {} LOGIN PASSWORD '…'", quoted(role)));
  const std::string schema = quoted(search_path_schema(conn)), who = quoted(role);
  std::vector<std::string> statements{
      fmt::format("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}", schema, who),
      fmt::format("REVOKE ALL ON SCHEMA {} FROM {}", schema, who),
  };
  if (kind != GrantKind::none) {
    statements.push_back(fmt::format("GRANT USAGE ON SCHEMA {} TO {}", schema, who));
    statements.push_back(fmt::format("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}", schema, who));
  }
  if (kind == GrantKind::submitter) {
    for (const char* table : kSubmitterInserts)
      statements.push_back(fmt::format("GRANT INSERT ON {}.{} TO {}", schema, table, who));
  }
  if (kind == GrantKind::operator_ || kind == GrantKind::agent) {
    statements.push_back(fmt::format("GRANT INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {} TO {}", schema, who));
    // The schema's version is init's alone.
    statements.push_back(fmt::format("REVOKE INSERT, UPDATE, DELETE ON {}.schema_migrations FROM {}", schema, who));
  }
  if (kind == GrantKind::operator_) {
    // Who runs and who leads is the agents' to say.
    statements.push_back(
        fmt::format("REVOKE INSERT, UPDATE, DELETE ON {0}.workers, {0}.scheduler_lease FROM {1}", schema, who));
  }
  for (const auto& s : statements) conn.exec_script(s);
  tx.commit();
  return statements;
}

}  // namespace jobctl::store
