#pragma once
// A DAG definition: named jobs and the edges between them, parsed and
// validated before anything is written (jobctl dag submit, dag graph FILE).
//
// The document is JSON:
//   {"name": "daily_report",
//    "jobs": {"extract": {"command": ["etl", "extract"]},
//             "transform": {"command": "etl transform", "depends_on": ["extract"], "retries": 2}}}
// Each entry of "jobs" takes the fields of a `submit --file` line (except
// the timing ones: at, in, cron and its policies, on_each) plus
// "depends_on", a list of node names.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/model/job.hpp"
#include "common/model/limits.hpp"

namespace jobctl::dag {

// Most nodes one DAG may have.
inline constexpr size_t kMaxNodes = 10000;

// Longest node name, and longest DAG name: a node's job is named
// "DAG.NODE" (unless the node gives a name), and that must fit a job's name.
inline constexpr size_t kMaxNodeNameBytes = 64;
inline constexpr size_t kMaxNameBytes = model::kMaxNameBytes - 1 - kMaxNodeNameBytes;

// What a node that ends dead (or cancelled) does to the rest of its DAG
// run: stop cancels every node not started yet; continue cancels only its
// descendants, and independent branches run on.
enum class OnFailure { stop, continue_ };
std::string_view to_string(OnFailure f);
OnFailure parse_on_failure(std::string_view text);  // throws usage Error

struct Node {
  std::string name;
  model::JobSpec spec;
  std::vector<std::string> depends_on;  // parent names, as written
};

struct Definition {
  std::string name;
  std::vector<Node> nodes;  // in a topological order: every node after its parents
};

// The variable a node's children see its result in (jobagent(8)):
// JOB_DAG_RESULT_<NODE>, the name upper-cased with - and . as _.
std::string result_variable(std::string_view node);

// Parses and validates `text`. Throws usage Error, naming the problem: not
// JSON, an unknown field, an unknown or duplicated dependency, a node that
// depends on itself, a cycle (spelled out: "a -> b -> c -> a"), duplicate
// node names, two nodes with one result_variable, no nodes, more than
// kMaxNodes, a name longer than kMaxNameBytes.
Definition parse(std::string_view text);

// Graphviz DOT for the graph; `status` (same order as nodes, may be empty)
// colours each node by its run's state.
std::string to_dot(const Definition& d, const std::vector<std::string>& status = {});

}  // namespace jobctl::dag
