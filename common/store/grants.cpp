#include "common/store/grants.hpp"

#include <fmt/format.h>

#include "common/store/migrations.hpp"
#include "common/util/error.hpp"

namespace jobctl::store {
namespace {

// The tables a submitter adds rows to: jobs and their first runs, the
// audit trail, DAGs and their runs (and, by name only, the tenants jobs
// name: tenants below).
constexpr const char* kSubmitterInserts[] = {"jobs", "runs", "job_events", "dags", "dag_nodes", "dag_edges", "dag_runs"};

// Row-level security on runs: every role sees and writes every row
// (jobctl_rows), but the runs a submitter adds must be new ones, waiting
// and never attempted, so it cannot add a finished one to pass for a
// job's result, nor an attempt for one to show. The owner, who runs init
// and grant, is not bound by it.
constexpr const char* kNewRunsOnly =
    "status IN ('pending', 'blocked') AND attempts = 0 AND started_at IS NULL AND finished_at IS NULL "
    "AND lease_owner IS NULL AND attempt_worker IS NULL AND attempt_started_at IS NULL "
    "AND attempt_job_version IS NULL AND live_stdout_tail IS NULL AND live_stderr_tail IS NULL "
    "AND live_stdout_bytes IS NULL AND live_stderr_bytes IS NULL";

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
                      fmt::format("create it first: CREATE ROLE {} LOGIN PASSWORD '…'", quoted_identifier(role)));
  const std::string schema_name = search_path_schema(conn);
  if (!conn.query("SELECT 1 WHERE $2 = current_user OR EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 "
                  "AND tablename = 'runs' AND tableowner = $2)",
                  {schema_name, role})
           .empty())
    throw usage_error(fmt::format("role '{}' owns jobctl's tables, or is the role this command runs as", role),
                      "grant gives other roles their share: create one (CREATE ROLE … LOGIN) and name it");
  const std::string schema = quoted_identifier(schema_name), who = quoted_identifier(role);
  std::vector<std::string> statements{
      fmt::format("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}", schema, who),
      fmt::format("REVOKE ALL ON SCHEMA {} FROM {}", schema, who),
  };
  if (kind != GrantKind::none) {
    statements.push_back(fmt::format("GRANT USAGE ON SCHEMA {} TO {}", schema, who));
    statements.push_back(fmt::format("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}", schema, who));
  }
  // One policy per submitter role, named by its oid (a role's name may be
  // as long as a policy's may).
  const std::string policy = quoted_identifier(fmt::format(
      "jobctl_submitter_{}", conn.query("SELECT oid::text FROM pg_roles WHERE rolname = $1", {role}).at(0).text(0)));
  statements.push_back(fmt::format("DROP POLICY IF EXISTS {} ON {}.runs", policy, schema));
  if (kind == GrantKind::submitter) {
    for (const char* table : kSubmitterInserts)
      statements.push_back(fmt::format("GRANT INSERT ON {}.{} TO {}", schema, table, who));
    statements.push_back(fmt::format("GRANT INSERT (name) ON {}.tenants TO {}", schema, who));
    statements.push_back(fmt::format("ALTER TABLE {}.runs ENABLE ROW LEVEL SECURITY", schema));
    if (conn.query("SELECT 1 FROM pg_policies WHERE schemaname = $1 AND tablename = 'runs' AND policyname = 'jobctl_rows'",
                   {schema_name})
            .empty())
      statements.push_back(fmt::format("CREATE POLICY jobctl_rows ON {}.runs USING (true) WITH CHECK (true)", schema));
    statements.push_back(fmt::format("CREATE POLICY {} ON {}.runs AS RESTRICTIVE FOR INSERT TO {} WITH CHECK ({})",
                                     policy, schema, who, kNewRunsOnly));
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
