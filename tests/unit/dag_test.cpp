// DAG documents: parsing, validation and DOT, before anything is written.
#include <doctest/doctest.h>

#include <string>

#include "common/dag/dag.hpp"
#include "common/util/error.hpp"

using namespace jobctl;

namespace {

// The usage error's message for `doc`, or "" when it parses.
std::string error_of(const std::string& doc) {
  try {
    dag::parse(doc);
    return "";
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::usage);
    return e.what();
  }
}

}  // namespace

TEST_CASE("unit: dag: a document parses into nodes in an order where parents come first") {
  auto d = dag::parse(R"({"name": "etl", "jobs": {
    "load": {"command": "load", "depends_on": ["transform"], "priority": "high"},
    "extract": {"command": ["etl", "extract"], "retries": 2},
    "transform": {"command": "t", "depends_on": ["extract"]}}})");
  CHECK(d.name == "etl");
  REQUIRE(d.nodes.size() == 3);
  CHECK(d.nodes[0].name == "extract");
  CHECK(d.nodes[1].name == "transform");
  CHECK(d.nodes[2].name == "load");
  CHECK(d.nodes[0].spec.command.argv == std::vector<std::string>{"etl", "extract"});
  CHECK(d.nodes[0].spec.retry_given.max_retries == 2);
  CHECK(d.nodes[2].spec.priority == model::Priority::high);
  CHECK(d.nodes[2].spec.name == "etl.load");
  CHECK(d.nodes[2].depends_on == std::vector<std::string>{"transform"});
}

TEST_CASE("unit: dag: bad graphs are refused, naming the problem") {
  CHECK(error_of(R"({"name": "c", "jobs": {"a": {"command": "x", "depends_on": ["c"]},
                   "b": {"command": "x", "depends_on": ["a"]}, "c": {"command": "x", "depends_on": ["b"]}}})") ==
        "the DAG has a cycle: a -> c -> b -> a");
  CHECK(error_of(R"({"name": "c", "jobs": {"a": {"command": "x", "depends_on": ["a"]}}})") ==
        "node 'a' depends on itself");
  CHECK(error_of(R"({"name": "c", "jobs": {"a": {"command": "x", "depends_on": ["nope"]}}})") ==
        "node 'a' depends on 'nope', which is not a node of the DAG");
  CHECK(error_of(R"({"name": "c", "jobs": {"a": {"command": "x"}, "a": {"command": "y"}}})") ==
        "node 'a' is defined twice");
  CHECK(error_of(R"({"name": "c", "jobs": {}})") == "the DAG has no jobs");
  CHECK(error_of(R"({"jobs": {"a": {"command": "x"}}})") == "the DAG has no name");
  CHECK(error_of(R"({"name": "c", "jobs": {"a": {"command": "x", "cron": "* * * * *"}}})") ==
        "node 'a': field 'cron' is not for a DAG node");
  CHECK(error_of(R"({"name": "c", "jobs": {"a": {"depends_on": []}}})") == "node 'a': field 'command': is required (or 'webhook')");
  CHECK(error_of(R"({"name": "c", "jobs": {"a b": {"command": "x"}}})") == "invalid node name 'a b'");
  CHECK(error_of(R"({"name": "c", "jobs": {"a": {"command": "x", "depends_on": "b"}}})") ==
        "node 'a': depends_on must be an array of node names");
  CHECK(error_of(R"({"name": "c", "jobs": {"a": {"command": "x"}, "A": {"command": "x"}}})") ==
        "nodes 'A' and 'a' would both pass their result in JOB_DAG_RESULT_A");
  CHECK(error_of(R"({"name": "c", "jobs": {"a-b": {"command": "x"}, "x": {"command": "x"}, "A_B": {"command": "x"}}})") ==
        "nodes 'A_B' and 'a-b' would both pass their result in JOB_DAG_RESULT_A_B");
  CHECK(error_of(R"({"name": "c", "jobs": {"a.b": {"command": "x"}, "a-b": {"command": "x"}}})") ==
        "nodes 'a-b' and 'a.b' would both pass their result in JOB_DAG_RESULT_A_B");
  CHECK(error_of(R"({"name": "c", "graph": {}})") == "unknown field 'graph'");
  CHECK(error_of("not json").starts_with("the DAG is not valid JSON"));
  std::string big = R"({"name": "big", "jobs": {)";
  for (size_t i = 0; i <= dag::kMaxNodes; ++i) big += (i ? "," : "") + std::string("\"n") + std::to_string(i) + "\": {\"command\": \"x\"}";
  CHECK(error_of(big + "}}") == "the DAG has 10001 nodes, more than 10000");
}

TEST_CASE("unit: dag: the DAG's name leaves room for every node's job name, DAG.NODE") {
  const std::string longest_node(dag::kMaxNodeNameBytes, 'n');
  auto doc = [&](const std::string& name) {
    return R"({"name": ")" + name + R"(", "jobs": {")" + longest_node + R"(": {"command": "x"}}})";
  };
  auto d = dag::parse(doc(std::string(dag::kMaxNameBytes, 'd')));
  CHECK(d.nodes.at(0).spec.name.size() == model::kMaxNameBytes);
  CHECK(error_of(doc(std::string(dag::kMaxNameBytes + 1, 'd'))) == "the DAG's name is 960 bytes, more than 959");
  CHECK(error_of(doc(std::string(100000, 'x'))) == "the DAG's name is 100000 bytes, more than 959");
  CHECK(error_of(doc("a\\u0000b")) == "the DAG's name holds a NUL byte");
}

TEST_CASE("unit: dag: DOT lists every node and edge, coloured by state when given") {
  auto d = dag::parse(R"({"name": "d", "jobs": {"a": {"command": "x"}, "b": {"command": "x", "depends_on": ["a"]}}})");
  auto dot = dag::to_dot(d);
  CHECK(dot.find("digraph \"d\"") != std::string::npos);
  CHECK(dot.find("\"a\" -> \"b\";") != std::string::npos);
  auto coloured = dag::to_dot(d, {"succeeded", "running"});
  CHECK(coloured.find("fillcolor=palegreen") != std::string::npos);
  CHECK(coloured.find("fillcolor=lightblue") != std::string::npos);
}
