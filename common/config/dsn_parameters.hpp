#pragma once
// The parameters of a PostgreSQL DSN, read by libpq's own grammar
// (fe-connect.c: conninfo_parse and conninfo_uri_parse_options), so that
// redaction hides exactly the password libpq would send, and jobctl's own
// `schema` is found, however the other values are spelt: a "password="
// inside another value is not a parameter.
//
// Where libpq would stop at an error (a keyword without "="), the scan
// goes on with the next word, so a password the person meant is hidden in
// the error that refuses it too. A URI's query starts where libpq's does
// and is split at "&" alone: a "?" inside a value is part of it.
#include <cstddef>
#include <string>
#include <vector>

namespace jobctl::config {

struct DsnParameter {
  std::string name;  // a URI's percent escapes undone; a URI's user-info password is "password"
  size_t begin = 0;  // where its name starts (its value, for a user-info password)
  size_t value_begin = 0;
  size_t end = 0;  // just past its value as written, quotes and escapes included
};

// Whether libpq reads `dsn` as a URI: it starts with postgres:// or
// postgresql:// (no blank before).
bool is_postgres_uri(const std::string& dsn);

// In order, not overlapping.
std::vector<DsnParameter> dsn_parameters(const std::string& dsn);

// The parameter's value as libpq reads it: quotes and backslash escapes
// (key=value) or percent escapes (URI) undone.
std::string parameter_value(const std::string& dsn, const DsnParameter& parameter);

}  // namespace jobctl::config
