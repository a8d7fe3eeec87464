#pragma once
// Agent labels and job targets. An agent carries labels (`jobagent --label
// role=web`, plus host=<its host name>); a job may name the labels an agent
// must all have to run it (`jobctl submit --on role=web,dc=fra`). Both are
// sets of KEY=VALUE strings, kept sorted, stored as a JSON array of them.
#include <string>
#include <string_view>
#include <vector>

namespace jobctl::model {

using Labels = std::vector<std::string>;  // sorted "key=value", one per key

// Parses "key=value[,key=value…]" (`flag` names the source in errors); ""
// is no labels. Keys and values are letters, digits and . _ - / : only; a
// key may appear once. Throws usage Error naming the bad part.
Labels parse_labels(std::string_view text, std::string_view flag);

// "role=web,dc=fra": the form a user types, for tables and messages.
std::string labels_display(const Labels& labels);

// --on-each: "*" is every agent (no labels); anything else as parse_labels.
Labels parse_fan_out(std::string_view text, std::string_view flag);
// "*" for every agent, else labels_display().
std::string fan_out_display(const Labels& labels);

// True when every label of `target` is among `labels`.
bool labels_match(const Labels& target, const Labels& labels);

}  // namespace jobctl::model
