#include "cli/job_flags.hpp"

#include <strings.h>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/complete.hpp"
#include "cli/read_input.hpp"
#include "common/jobdef/job_input.hpp"
#include "common/util/error.hpp"
#include "common/util/json_input.hpp"
#include "common/util/option_values.hpp"
#include "common/util/strings.hpp"

namespace jobctl::cli {
namespace {

using nlohmann::json;

// A flag's value in the form a batch line gives it. Most flags take the
// line's form as typed; these few do not.
json line_value(const jobdef::Field& f, const std::string& text, const std::vector<std::string>& list) {
  if (f.key == "env") return json(env_from_flags(list));
  if (f.key == "cwd") return std::filesystem::absolute(text).lexically_normal().string();
  if (f.key == "webhook.data") return text_or_file(text, "--data");
  if (f.key == "payload") {
    return util::parse_json_input(text_or_file(text, "--payload"), "--payload",
                                  "quote it for the shell, e.g. --payload '{\"n\": 1}', or use --payload @file.json");
  }
  if (f.kind == jobdef::FlagKind::list) return json(list);
  return text;
}

// What Tab offers for the few flags whose values it can know beyond their
// choices.
void tag_completion(const jobdef::Field& f, CLI::Option* o) {
  if (f.key == "cwd") completes(o, Completes::directory);
  if (f.key == "webhook.method") suggests(o, {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"});
  if (f.key == "notify_on") {
    auto all = model::notify_on_text(model::notify_success | model::notify_failure | model::notify_dead);
    suggests(o, util::split(all, ','), Separated::comma);
  }
}

void warn_about(const model::JobSpec& s) {
  if (!s.command.webhook) return;
  if (s.command.webhook->insecure)
    std::fprintf(stderr, "jobctl: warning: --insecure: the TLS certificate of %s will NOT be verified; anyone on "
                         "the path can read and change the request\n", s.command.webhook->url.c_str());
  for (const auto& [name, value] : s.command.webhook->headers)
    if ((strcasecmp(name.c_str(), "Authorization") == 0 || strcasecmp(name.c_str(), "X-Api-Key") == 0) &&
        value.find("{{secret:") == std::string::npos)
      std::fprintf(stderr, "jobctl: warning: the %s header is stored in the database as written; put the "
                           "credential in a secret and write {{secret:NAME}} instead\n", name.c_str());
}

}  // namespace

model::JobSpec spec_from_flags(const std::vector<std::string>& command_args, const JobFlags& flags) {
  jobdef::Draft d;
  d.source = jobdef::Source::flag;
  if (!command_args.empty()) {
    const auto& command = jobdef::line_field("command");
    command.apply(d, command_args.size() == 1 ? nlohmann::json(command_args[0]) : nlohmann::json(command_args),
                  jobdef::Name{command, jobdef::Source::flag});
  }
  flags.apply_to(d);
  auto s = jobdef::finish(std::move(d));
  warn_about(s);
  return s;
}


JobFlags::JobFlags(CLI::App& cmd, jobdef::Where where) {
  for (const auto& f : jobdef::job_fields()) {
    if (f.flag.empty() || !(f.where & where)) continue;
    Slot& s = slots_.emplace_back();
    s.field = &f;
    const std::string name(f.flag);
    const std::string help = jobdef::help_of(f, where);
    switch (f.kind) {
      case jobdef::FlagKind::text:
        s.option = cmd.add_option(name, s.text, help);
        break;
      case jobdef::FlagKind::count: {
        // Its range in the help too: submit --help showed --max-runs from 0,
        // which only update takes (a tester).
        const int min = where == jobdef::kUpdate && f.update_zero_means_none ? 0 : f.min;
        s.option = cmd.add_option(name, s.count, help)->check(util::whole_number(min, f.max));
        break;
      }
      case jobdef::FlagKind::list:
        s.option = cmd.add_option(name, s.list, help)->take_all();
        break;
      case jobdef::FlagKind::toggle:
        s.option = cmd.add_flag(name, s.toggle, help);
        break;
    }
    // Names are taken in any case, an alias as the name it stands for
    // (CLI11 runs the transform added last first).
    if (f.choices) s.option->transform(CLI::IsMember(f.choices(), CLI::ignore_case));
    if (f.aliases) s.option->transform(CLI::Transformer(f.aliases(), CLI::ignore_case).description(""));
    tag_completion(f, s.option);
    if (where == jobdef::kUpdate && f.update_empty_means_none) util::empty_means_none(s.option);
    // A new job's default not written into the help is shown as [default].
    if (where == jobdef::kSubmit && f.shown_default && f.help.find("{default}") == std::string_view::npos) {
      s.text = f.shown_default();
      s.option->capture_default_str();
    }
    if (where != jobdef::kSubmit) continue;
    if (!f.needs.empty()) s.option->needs(cmd.get_option(std::string(f.needs)));
    for (auto other : f.excludes)
      if (!other.empty()) s.option->excludes(cmd.get_option(std::string(other)));
  }
}

std::vector<std::string> JobFlags::names() const {
  std::vector<std::string> out;
  for (const auto& s : slots_) out.emplace_back(s.field->flag);
  return out;
}

const JobFlags::Slot& JobFlags::slot(std::string_view flag) const {
  for (const auto& s : slots_)
    if (s.field->flag == flag) return s;
  throw Error(ExitCode::internal, fmt::format("{} is not a flag of this command", flag));
}

bool JobFlags::given(std::string_view flag) const { return slot(flag).option->count() > 0; }

std::set<std::string> JobFlags::given_keys() const {
  std::set<std::string> keys;
  for (const auto& s : slots_)
    if (s.option->count() > 0) keys.emplace(s.field->key);
  return keys;
}
const std::string& JobFlags::text(std::string_view flag) const { return slot(flag).text; }
const std::vector<std::string>& JobFlags::list(std::string_view flag) const { return slot(flag).list; }

void JobFlags::apply_to(jobdef::Draft& d) const {
  d.source = jobdef::Source::flag;
  for (const auto& s : slots_) {
    const auto& f = *s.field;
    if (s.option->count() == 0) continue;
    json value;
    switch (f.kind) {
      case jobdef::FlagKind::text:
        if (s.text.empty()) continue;  // update --name "": the field stays unset, and the update removes it
        value = line_value(f, s.text, s.list);
        break;
      case jobdef::FlagKind::count:
        value = *s.count;
        break;
      case jobdef::FlagKind::list:
        value = line_value(f, s.text, s.list);
        break;
      case jobdef::FlagKind::toggle:
        value = s.toggle;
        break;
    }
    f.apply(d, value, jobdef::Name{f, jobdef::Source::flag});
  }
}

model::Command command_from_args(const std::vector<std::string>& args) {
  model::Command c;
  c.via_shell = args.size() == 1;
  c.argv = args;
  return c;
}

std::map<std::string, std::string> env_from_flags(const std::vector<std::string>& assignments) {
  std::map<std::string, std::string> env;
  for (const auto& kv : assignments) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw usage_error(fmt::format("invalid --env '{}'", kv), "write it as --env NAME=VALUE");
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

}  // namespace jobctl::cli
