#include "tests/support/fixtures.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "common/store/admin.hpp"
#include "common/store/migrations.hpp"
#include "common/util/ulid.hpp"

extern char** environ;

namespace jobctl::test {

namespace {
int g_failures = 0;
}  // namespace

void note_failure() { ++g_failures; }
bool current_test_failed() { return g_failures > 0; }
int failure_count() { return g_failures; }

TempDir::TempDir() : failures_at_start_(g_failures) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "jobctl-test.XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (g_failures > failures_at_start_ || std::uncaught_exceptions() > 0) {
    std::fprintf(stderr, "test files kept in %s\n", path_.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

config::Backend test_backend() {
  const char* b = std::getenv("JOBCTL_TEST_BACKEND");
  return b && std::string(b) == "postgres" ? config::Backend::postgres : config::Backend::sqlite;
}

const char* backend_name() { return test_backend() == config::Backend::postgres ? "postgres" : "sqlite"; }

TestDb::TestDb(const TempDir& dir, int schema_version) {
  if (test_backend() == config::Backend::sqlite) {
    dsn_ = "sqlite:" + dir.file("jobs.db");
    migrate_to(schema_version);
    return;
  }
  const char* base = std::getenv("JOBCTL_TEST_PG_DSN");
  if (!base || !*base)
    FAIL("JOBCTL_TEST_PG_DSN is not set: run the suite through scripts/test, which starts a PostgreSQL");
  std::string id = util::new_ulid();
  for (auto& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  schema_ = "t_" + id;
  auto admin = store::open_postgres(base);
  admin->exec_script("CREATE SCHEMA " + schema_);
  dsn_ = fmt::format("{} options='-csearch_path={}'", base, schema_);
  migrate_to(schema_version);
}

void TestDb::migrate_to(int version) {
  auto target = config::parse_dsn(dsn_);
  auto conn = target.backend == config::Backend::sqlite ? store::open_sqlite(target.target, store::Create::yes)
                                                        : store::open_postgres(target.target);
  store::migrate_to(*conn, version < 0 ? store::kSchemaVersion : version);
}

TestDb::~TestDb() {
  if (schema_.empty()) return;
  if (current_test_failed()) {
    std::fprintf(stderr, "test schema kept: %s\n", schema_.c_str());
    return;
  }
  try {
    store::open_postgres(std::getenv("JOBCTL_TEST_PG_DSN"))->exec_script("DROP SCHEMA " + schema_ + " CASCADE");
  } catch (...) {
  }
}

std::unique_ptr<store::Connection> TestDb::connect() const {
  auto target = config::parse_dsn(dsn_);
  return target.backend == config::Backend::sqlite ? store::open_sqlite(target.target, store::Create::yes)
                                                   : store::open_postgres(target.target);
}

std::unique_ptr<store::Store> TestDb::open() {
  auto s = store::Store::open(config::parse_dsn(dsn_), store::Create::yes);
  s->admin().migrate();
  return s;
}

Process::Process(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env, const TempDir& dir,
                 const std::string& label) {
  out_path_ = dir.file(label + ".out");
  err_path_ = dir.file(label + ".err");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  // The test's environment without JOBCTL_DB, and with `extra_env`
  // replacing what it names.
  std::vector<std::string> env;
  auto overridden = [&](const std::string& kv) {
    for (const auto& e : extra_env)
      if (kv.compare(0, e.find('=') + 1, e, 0, e.find('=') + 1) == 0) return true;
    return false;
  };
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("JOBCTL_DB=", 0) != 0 && !overridden(kv)) env.push_back(kv);
  }
  for (const auto& e : extra_env) env.push_back(e);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int rc = posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE_MESSAGE(rc == 0, "cannot start " << argv[0]);
}

Process::~Process() {
  if (pid_ > 0 && status_ < 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void Process::signal(int sig) { kill(pid_, sig); }

bool Process::running() {
  if (status_ >= 0) return false;
  int st = 0;
  if (waitpid(pid_, &st, WNOHANG) == pid_) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return false;
  }
  return true;
}

bool Process::sleeping() const {
  const std::string proc = "/proc/" + std::to_string(pid_);
  std::ifstream wchan(proc + "/wchan");
  std::string where;
  std::getline(wchan, where);
  if (where.find("nanosleep") != std::string::npos) return true;
  // A kernel without symbols says "0" there: the system call it is in.
  std::ifstream syscall(proc + "/syscall");
  long number = -1;
  syscall >> number;
#ifdef SYS_nanosleep
  if (number == SYS_nanosleep) return true;
#endif
  return number == SYS_clock_nanosleep;
}

int Process::wait(std::chrono::seconds limit) {
  eventually([&] { return !running(); }, "process " + std::to_string(pid_) + " to exit", limit);
  return status_;
}

std::string Process::out() const { return read_file(out_path_); }
std::string Process::err() const { return read_file(err_path_); }

Result run_jobctl(const TestDb& db, const TempDir& dir, const std::vector<std::string>& args,
                  const std::string& stdin_text, const std::vector<std::string>& env) {
  static int counter = 0;
  std::string label = fmt::format("jobctl-{}", ++counter);
  std::vector<std::string> argv{JOBCTL_BIN, "--db", db.dsn()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string in_path = dir.file(label + ".in");
  std::ofstream(in_path) << stdin_text;
  // Run through sh only to feed stdin from the file.
  std::string cmd;
  for (const auto& a : argv) {
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += q + "' ";
  }
  Process p({"/bin/sh", "-c", "exec " + cmd + "< '" + in_path + "'"}, env, dir, label);
  int code = p.wait();
  return Result{code, p.out(), p.err()};
}

Result run_jobctl_on_terminal(const TestDb& db, const std::vector<std::string>& args) {
  std::vector<std::string> argv{JOBCTL_BIN, "--db", db.dsn()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  for (auto& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execv(JOBCTL_BIN, c_argv.data());
    _exit(127);
  }
  Result r;
  bool ended = false;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);  // a hang guard
  while (!ended && std::chrono::steady_clock::now() < give_up) {
    pollfd p{master, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    ssize_t n = read(master, buf, sizeof buf);
    if (n > 0) r.out.append(buf, static_cast<size_t>(n));
    else ended = true;  // EIO: the child closed the terminal (it exited)
  }
  close(master);
  if (!ended) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!ended) FAIL("jobctl on a terminal did not finish");
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string submit(const TestDb& db, const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), "submit");
  auto r = run_jobctl(db, dir, args);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  return trim(r.out);
}

nlohmann::json get(const TestDb& db, const TempDir& dir, const std::string& id) {
  auto r = run_jobctl(db, dir, {"get", id, "-o", "json"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  return nlohmann::json::parse(r.out);
}

std::unique_ptr<Process> start_agent(const TestDb& db, const TempDir& dir, const std::vector<std::string>& flags,
                                     const std::string& label, const std::vector<std::string>& env) {
  std::vector<std::string> argv{JOBAGENT_BIN, "--db", db.dsn(), "--name", label};
  argv.insert(argv.end(), flags.begin(), flags.end());
  // Lock files (jobagent(8)) in the test's directory, shared by its agents.
  auto with_lock_dir = env;
  with_lock_dir.push_back("XDG_RUNTIME_DIR=" + dir.path());
  return std::make_unique<Process>(argv, with_lock_dir, dir, label);
}

void eventually(const std::function<bool()>& done, const std::string& what, std::chrono::seconds limit) {
  auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) FAIL("gave up waiting for " << what);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool process_ended(int pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

int connect_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \n\r\t");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \n\r\t");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string line;
  while (std::getline(ss, line))
    if (!line.empty()) out.push_back(line);
  return out;
}

bool counts_reads(store::Connection& c) {
  return c.dialect() == store::Dialect::postgres &&
         c.query("SELECT current_setting('server_version_num')::int").at(0).i64(0) >= 150000;
}

int64_t tuples_read(store::Connection& c, const std::string& table) {
  c.query("SELECT pg_stat_force_next_flush()");
  c.query("SELECT pg_stat_clear_snapshot()");
  return c.query("SELECT seq_tup_read + COALESCE(idx_tup_fetch, 0) FROM pg_stat_user_tables WHERE relid = $1::regclass",
                 {table})
      .at(0)
      .i64(0);
}

bool reads_counted(store::Connection& c) {
  if (c.dialect() == store::Dialect::postgres) return counts_reads(c);
  return !c.query("SELECT 1 FROM pragma_module_list WHERE name = 'sqlite_stmt'").empty();
}

int64_t reads(store::Connection& c, const std::string& table) {
  if (c.dialect() == store::Dialect::postgres) return tuples_read(c, table);
  return c.query("SELECT COALESCE(sum(nstep), 0) FROM sqlite_stmt").at(0).i64(0);
}

void analyze(store::Connection& c) {
  if (c.dialect() != store::Dialect::postgres) {
    c.exec("ANALYZE");  // the test's own file
    return;
  }
  std::string tables;
  for (const auto& row : c.query("SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema()"))
    tables += (tables.empty() ? "" : ", ") + row.text(0);
  c.exec("ANALYZE " + tables);
}

std::string prepared_plan(store::Connection& c, const std::string& statement, const std::string& args,
                          const std::string& options) {
  const auto prepared = c.query("SELECT name FROM pg_prepared_statements WHERE statement LIKE $1", {statement});
  REQUIRE_MESSAGE(prepared.size() == 1, prepared.size() << " prepared statements are like " << statement);
  c.exec("SET plan_cache_mode = force_generic_plan");
  std::string plan;
  for (const auto& row : c.query(fmt::format("EXPLAIN ({}) EXECUTE {} ({})", options, prepared.at(0).text(0), args)))
    plan += row.text(0) + "\n";
  c.exec("RESET plan_cache_mode");
  return plan;
}

size_t occurrences(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

}  // namespace jobctl::test
