// The manual against the programs it describes: every subcommand and flag
// the binaries accept is in the man pages, and the pages render cleanly.
// (The shell completions are tried in real shells by tests/completions/run.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/context.hpp"

namespace {

const std::string kSource = JOBCTL_SOURCE_DIR;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A man page as plain text for searching: roff writes a dash as `\-`.
std::string man_page(const std::string& name) {
  std::string raw = read_text(kSource + "/man/" + name), out;
  for (size_t i = 0; i < raw.size(); ++i)
    if (!(raw[i] == '\\' && i + 1 < raw.size() && raw[i + 1] == '-')) out += raw[i];
  return out;
}

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// True when `word` occurs in `text` not as part of a longer word, so that
// "--queue" is not found in "--queues".
bool mentions(const std::string& text, const std::string& word) {
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    bool starts = at == 0 || !is_word_char(text[at - 1]);
    bool ends = at + word.size() == text.size() || !is_word_char(text[at + word.size()]);
    if (starts && ends) return true;
  }
  return false;
}

// The part of a page under the .SS or .SH heading that contains `title`, up
// to the next heading; empty when there is no such heading.
std::string section(const std::string& page, const std::string& title) {
  std::istringstream in(page);
  std::string line, out;
  bool inside = false;
  while (std::getline(in, line)) {
    bool heading = line.rfind(".SS", 0) == 0 || line.rfind(".SH", 0) == 0;
    if (heading) inside = line.find(title) != std::string::npos;
    if (inside) out += line + "\n";
  }
  return out;
}

struct Output {
  int status = -1;
  std::string text;
};

// Runs a shell command line and returns its standard output (and status).
Output run(const std::string& command) {
  Output o;
  FILE* p = popen(command.c_str(), "r");
  REQUIRE_MESSAGE(p != nullptr, "cannot run " << command);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) o.text.append(buf, n);
  o.status = pclose(p);
  return o;
}

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool have_program(const std::string& name) { return run("command -v " + name + " >/dev/null 2>&1").status == 0; }

// The `--flag` words of a --help text.
std::vector<std::string> long_flags_in(const std::string& help) {
  std::vector<std::string> flags;
  for (size_t at = help.find("--"); at != std::string::npos; at = help.find("--", at + 2)) {
    if (at > 0 && is_word_char(help[at - 1])) continue;
    size_t end = at + 2;
    while (end < help.size() && is_word_char(help[end])) ++end;
    if (end == at + 2) continue;
    std::string flag = help.substr(at, end - at);
    if (std::find(flags.begin(), flags.end(), flag) == flags.end()) flags.push_back(flag);
  }
  return flags;
}

}  // namespace

namespace {

// Checks that `page` has a section for `cmd` (whose full name is `title`,
// e.g. "jobctl dlq ls") describing each of its flags, then does the same for
// its visible subcommands. Returns how many commands it checked.
int check_documented(const std::string& page, const CLI::App& cmd, const std::string& title,
                     const std::vector<std::string>& global_flags) {
  int checked = 0;
  for (const CLI::App* sub : cmd.get_subcommands({})) {
    if (sub->get_group().empty()) continue;  // hidden, e.g. __complete
    std::string name = title + " " + sub->get_name();
    CAPTURE(name);
    std::string text = section(page, name);
    CHECK_MESSAGE(!text.empty(), "no COMMANDS section titled \"" << name << "\"");
    // A command that takes another's options (run takes submit's) says so
    // and describes only its own.
    if (auto at = text.find("every option of jobctl "); at != std::string::npos) {
      size_t end = text.find_first_of("\n(", at);
      text += section(page, text.substr(at + 16, end - at - 16));
    }
    for (const CLI::Option* o : sub->get_options())
      for (const auto& n : o->get_lnames()) {
        std::string flag = "--" + n;
        // Global flags (--db, --output, --help) are on every subcommand and
        // described once, under GLOBAL OPTIONS.
        if (std::find(global_flags.begin(), global_flags.end(), flag) != global_flags.end()) continue;
        CAPTURE(flag);
        CHECK_MESSAGE(mentions(text, flag), "the section of " << name << " does not describe " << flag);
      }
    checked += 1 + check_documented(page, *sub, name, global_flags);
  }
  return checked;
}

}  // namespace

TEST_CASE("docs: man page lists every jobctl subcommand and flag") {
  jobctl::cli::Context ctx;
  auto app = jobctl::cli::build_app(ctx);
  std::string page = man_page("jobctl.1");
  std::string globals = section(page, "GLOBAL OPTIONS");
  REQUIRE_FALSE(globals.empty());

  std::vector<std::string> global_flags;
  for (const CLI::Option* o : app->get_options())
    for (const auto& n : o->get_lnames()) {
      global_flags.push_back("--" + n);
      CAPTURE(n);
      CHECK_MESSAGE(mentions(globals, "--" + n), "GLOBAL OPTIONS does not describe --" << n);
    }
  CHECK(check_documented(page, *app, "jobctl", global_flags) >= 9);
}

TEST_CASE("docs: man page lists every jobagent flag") {
  auto help = run(std::string(JOBAGENT_BIN) + " --help 2>&1");
  REQUIRE(help.status == 0);
  auto flags = long_flags_in(help.text);
  CHECK(flags.size() >= 12);  // a parse that finds nothing must not pass
  std::string options = section(man_page("jobagent.8"), "OPTIONS");
  REQUIRE_FALSE(options.empty());
  for (const auto& flag : flags) {
    CAPTURE(flag);
    CHECK(mentions(options, flag));
  }
}

TEST_CASE("docs: man pages render without groff warnings") {
  if (!have_program("groff")) {
    MESSAGE("skipped: groff is not installed");
    return;
  }
  for (std::string page : {"jobctl.1", "jobagent.8"}) {
    CAPTURE(page);
    auto o = run("groff -man -ww -z " + shell_quoted(kSource + "/man/" + page) + " 2>&1");
    CHECK(o.status == 0);
    CHECK(o.text == "");
  }
}
