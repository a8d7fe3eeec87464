// jobctl's start_server: becomes jobctl-serve, found next to this program.
// (execvp: a path with a slash is run as it is.)
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "cli/serve_start.hpp"
#include "common/util/error.hpp"
#include "common/util/program_directory.hpp"

namespace jobctl::cli {

void start_server(const std::vector<std::string>& argv, const config::Dsn&, const server::ServeOptions&) {
  const auto directory = util::program_directory();
  // Without /proc (a chroot, say), the one on PATH.
  const std::string path = directory.empty() ? "jobctl-serve" : (directory / "jobctl-serve").string();
  // --db goes over in the environment, which only this user reads: in
  // the arguments, ps showed its password until jobctl-serve hid it again.
  std::vector<char*> args;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--db" && i + 1 < argv.size()) {
      setenv("JOBCTL_DB", argv[++i].c_str(), 1);
      continue;
    }
    if (a.starts_with("--db=")) {
      setenv("JOBCTL_DB", a.c_str() + 5, 1);
      continue;
    }
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  execvp(path.c_str(), args.data());
  const int error = errno;
  throw Error(ExitCode::store, fmt::format("cannot run the HTTP server {}: {}", path, std::strerror(error)),
              "jobctl serve runs jobctl-serve, installed next to jobctl: reinstall jobctl");
}

}  // namespace jobctl::cli
