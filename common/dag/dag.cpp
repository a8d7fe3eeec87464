#include "common/dag/dag.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/jobdef/fields.hpp"
#include "common/jobdef/job_input.hpp"
#include "common/model/job_json.hpp"
#include "common/util/error.hpp"
#include "common/util/json_input.hpp"

namespace jobctl::dag {
namespace {

using nlohmann::json;

bool valid_node_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNodeNameBytes) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
}

// Parses the document. A node name given twice is refused in the DAG's
// words, ahead of the parser's own refusal of any key given twice.
json parse_document(std::string_view text) {
  std::string root_key;
  std::set<std::string> names;
  auto check = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1) root_key = parsed.get<std::string>();
    if (event == json::parse_event_t::key && depth == 2 && root_key == "jobs" &&
        !names.insert(parsed.get<std::string>()).second)
      throw usage_error(fmt::format("node '{}' is defined twice", parsed.get<std::string>()),
                        "give each node of \"jobs\" its own name");
  };
  return util::parse_json_input(text, "the DAG", "see jobctl(1), DAGS, for the document's form", check);
}

Node node_from_json(const std::string& name, const json& v) {
  if (!valid_node_name(name))
    throw usage_error(fmt::format("invalid node name '{}'", name),
                      fmt::format("use 1 to {} characters of A-Z a-z 0-9 _ - .", kMaxNodeNameBytes));
  if (!v.is_object()) throw usage_error(fmt::format("node '{}': must be a JSON object", name));
  Node node;
  node.name = name;
  json fields = v;
  if (auto it = fields.find("depends_on"); it != fields.end()) {
    if (!it->is_array()) throw usage_error(fmt::format("node '{}': depends_on must be an array of node names", name));
    for (const auto& d : *it) {
      if (!d.is_string())
        throw usage_error(fmt::format("node '{}': depends_on must be an array of node names", name));
      node.depends_on.push_back(d.get<std::string>());
    }
    fields.erase(it);
  }
  for (const auto& field : jobdef::job_fields())
    if ((field.where & jobdef::kLine) && !(field.where & jobdef::kDagNode) && fields.contains(field.key))
      throw usage_error(fmt::format("node '{}': field '{}' is not for a DAG node", name, field.key),
                        "a node runs when its parents have succeeded; give the whole DAG --cron/--tz");
  try {
    node.spec = jobdef::job_spec_from_json(fields);
  } catch (const Error& e) {
    throw usage_error(fmt::format("node '{}': {}", name, e.what()), e.hint());
  }
  return node;
}

// Two nodes whose results would land in one variable: a child of both
// would see only one.
void check_result_variables(const std::vector<Node>& nodes) {
  std::map<std::string, const std::string*> node_of;
  for (const auto& n : nodes) {
    auto [it, added] = node_of.emplace(result_variable(n.name), &n.name);
    if (!added)
      throw usage_error(fmt::format("nodes '{}' and '{}' would both pass their result in {}", *it->second, n.name,
                                    it->first),
                        "rename one: a node's name is upper-cased, with - and . as _, in its children's variable");
  }
}

// A cycle among `left` (nodes not placed by the topological sort), as
// "a -> b -> c -> a", each depending on the next.
std::string spell_cycle(const std::vector<Node>& nodes, const std::map<std::string, size_t>& index,
                        const std::set<size_t>& left) {
  // Every node left has a parent left (else it would have been placed):
  // walk parents until a node repeats.
  std::vector<size_t> path{*left.begin()};
  std::map<size_t, size_t> seen{{path[0], 0}};
  for (;;) {
    size_t at = path.back(), next = at;
    for (const auto& p : nodes[at].depends_on)
      if (left.count(index.at(p))) {
        next = index.at(p);
        break;
      }
    if (auto it = seen.find(next); it != seen.end()) {
      std::string out;
      for (size_t i = it->second; i < path.size(); ++i) out += nodes[path[i]].name + " -> ";
      return out + nodes[next].name;
    }
    seen[next] = path.size();
    path.push_back(next);
  }
}

// The DAG's name becomes part of each node's job name ("DAG.NODE") and is
// the name of a scheduled DAG's job, so it must leave room for the longest
// node name within a job's name, and hold no NUL as a job's name may not.
void check_dag_name(const std::string& name) {
  if (name.size() > kMaxNameBytes)
    throw usage_error(fmt::format("the DAG's name is {} bytes, more than {}", name.size(), kMaxNameBytes),
                      "give the DAG a shorter \"name\": its nodes' jobs are named DAG.NODE, at most 1 KiB");
  if (name.find('\0') != std::string::npos)
    throw usage_error("the DAG's name holds a NUL byte", "remove the \\u0000 from \"name\"");
}

}  // namespace

std::string result_variable(std::string_view node) {
  std::string out = "JOB_DAG_RESULT_";
  for (char c : node) out += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : (c == '-' || c == '.') ? '_' : c;
  return out;
}

std::string_view to_string(OnFailure f) { return f == OnFailure::stop ? "stop" : "continue"; }

OnFailure parse_on_failure(std::string_view text) {
  if (text == "stop") return OnFailure::stop;
  if (text == "continue") return OnFailure::continue_;
  throw usage_error(fmt::format("invalid --on-failure '{}'", text), "use stop or continue");
}

Definition parse(std::string_view text) {
  json doc = parse_document(text);
  if (!doc.is_object()) throw usage_error("the DAG must be a JSON object with \"name\" and \"jobs\"");
  Definition d;
  for (const auto& [key, v] : doc.items()) {
    if (key == "name") {
      if (!v.is_string() || v.get<std::string>().empty()) throw usage_error("field 'name' must be a non-empty string");
      d.name = v.get<std::string>();
      check_dag_name(d.name);
    } else if (key != "jobs") {
      throw usage_error(fmt::format("unknown field '{}'", key), "a DAG has \"name\" and \"jobs\"");
    }
  }
  if (d.name.empty()) throw usage_error("the DAG has no name", "add \"name\": \"daily_report\"");
  auto jobs = doc.find("jobs");
  if (jobs == doc.end() || !jobs->is_object() || jobs->empty())
    throw usage_error("the DAG has no jobs", "give \"jobs\" an object of named jobs");
  if (jobs->size() > kMaxNodes)
    throw usage_error(fmt::format("the DAG has {} nodes, more than {}", jobs->size(), kMaxNodes),
                      "split it into smaller DAGs");
  std::vector<Node> nodes;
  std::map<std::string, size_t> index;
  for (const auto& [name, v] : jobs->items()) {
    index[name] = nodes.size();
    nodes.push_back(node_from_json(name, v));
  }
  check_result_variables(nodes);
  for (const auto& n : nodes) {
    std::set<std::string> seen;
    for (const auto& p : n.depends_on) {
      if (p == n.name) throw usage_error(fmt::format("node '{}' depends on itself", n.name));
      if (!index.count(p))
        throw usage_error(fmt::format("node '{}' depends on '{}', which is not a node of the DAG", n.name, p),
                          "depends_on names other entries of \"jobs\"");
      if (!seen.insert(p).second)
        throw usage_error(fmt::format("node '{}' names '{}' twice in depends_on", n.name, p));
    }
  }
  // Kahn's algorithm, taking ready nodes in the order written.
  std::vector<size_t> waiting(nodes.size());
  std::vector<std::vector<size_t>> children(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    waiting[i] = nodes[i].depends_on.size();
    for (const auto& p : nodes[i].depends_on) children[index[p]].push_back(i);
  }
  std::set<size_t> ready, left;
  for (size_t i = 0; i < nodes.size(); ++i) (waiting[i] == 0 ? ready : left).insert(i);
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    d.nodes.push_back(nodes[i]);
    for (size_t c : children[i])
      if (--waiting[c] == 0) {
        left.erase(c);
        ready.insert(c);
      }
  }
  if (!left.empty())
    throw usage_error(fmt::format("the DAG has a cycle: {}", spell_cycle(nodes, index, left)),
                      "each arrow points to the node it depends on; remove one of these dependencies");
  for (auto& n : d.nodes)
    if (n.spec.name.empty()) n.spec.name = d.name + "." + n.name;
  return d;
}

std::string to_dot(const Definition& d, const std::vector<std::string>& status) {
  static const std::map<std::string, std::string> kColour{
      {"succeeded", "palegreen"}, {"running", "lightblue"}, {"pending", "lightyellow"}, {"blocked", "white"},
      {"dead", "salmon"},         {"failed", "salmon"},     {"cancelled", "lightgrey"}, {"skipped", "lightgrey"}};
  auto quoted = [](const std::string& s) { return json(s).dump(); };
  std::string out = fmt::format("digraph {} {{\n  rankdir=LR;\n  node [shape=box, style=filled, fillcolor=white];\n",
                                quoted(d.name));
  for (size_t i = 0; i < d.nodes.size(); ++i) {
    const auto& n = d.nodes[i];
    if (i < status.size()) {
      auto c = kColour.find(status[i]);
      out += fmt::format("  {} [label={}, fillcolor={}];\n", quoted(n.name), quoted(n.name + "\n" + status[i]),
                         c == kColour.end() ? "white" : c->second);
    } else {
      out += fmt::format("  {};\n", quoted(n.name));
    }
  }
  for (const auto& n : d.nodes)
    for (const auto& p : n.depends_on) out += fmt::format("  {} -> {};\n", quoted(p), quoted(n.name));
  return out + "}\n";
}

}  // namespace jobctl::dag
