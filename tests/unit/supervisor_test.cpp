// The job supervisor on its own: it starts processes with their streams,
// reports their exits, refuses with the reasons a user can act on, and ends
// everything when the process that made it lets go (as an agent does when
// it dies).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "common/exec/job_groups.hpp"
#include "common/exec/supervisor.hpp"
#include "common/util/error.hpp"
#include "tests/support/fixtures.hpp"

using namespace jobctl;
using std::chrono::milliseconds;

namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, 5000);
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) out.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EAGAIN) break;
  }
  close(fd);
  return out;
}

exec::SpawnRequest shell(const std::string& script, const std::string& cwd = "", const std::string& in = "",
                         const std::string& user = "") {
  return exec::SpawnRequest{{"/bin/sh", "-c", script}, {"PATH=/usr/bin:/bin"}, cwd, in, user};
}

using Report = exec::Supervisor::Report;

// Reads reports into `got` until it holds `n`, waiting for all but `leave`
// of the requests' answers.
void report_until(exec::Supervisor& sup, std::vector<Report>& got, size_t n, size_t leave, const std::string& what) {
  test::eventually([&] {
    for (auto& r : sup.reports(leave)) got.push_back(r);
    return got.size() >= n;
  }, what);
  REQUIRE(got.size() == n);
}

// One process at a time through a Supervisor: a request and its answer,
// the exits read meanwhile kept for exits().
struct Sup {
  exec::Supervisor s;
  std::vector<Report> held;

  explicit Sup(milliseconds kill_grace) : s(kill_grace) {}
  pid_t pid() const { return s.pid(); }

  // Throws Error(usage) with the reason when it cannot start, as the agent records it.
  exec::Spawned spawn(const exec::SpawnRequest& req) {
    exec::Fd out, err;
    const uint32_t ticket = s.request_spawn(req, out, err);
    std::optional<Report> answer;
    for (auto& r : s.reports(0)) {
      if (r.kind == Report::Kind::exit) held.push_back(r);
      else if (r.ticket == ticket) answer = r;
    }
    REQUIRE(answer);
    if (answer->pid < 0) throw Error(answer->code, answer->error);
    return exec::Spawned{answer->pid, out.release(), err.release()};
  }

  std::vector<Report> exits() {
    for (auto& r : s.reports(0)) held.push_back(r);
    return std::exchange(held, {});
  }
};

}  // namespace

TEST_CASE("exec::Supervisor starts a process with its payload and pipes, and reports its exit") {
  test::TempDir dir;
  Sup sup(milliseconds(500));
  auto sp = sup.spawn(shell("read x; echo out:$x; pwd; echo err >&2; exit 3", dir.path(), "hello\n"));
  CHECK(read_all(sp.stdout_fd) == "out:hello\n" + dir.path() + "\n");
  CHECK(read_all(sp.stderr_fd) == "err\n");
  std::vector<Report> exits;
  test::eventually([&] {
    for (auto e : sup.exits()) exits.push_back(e);
    return !exits.empty();
  }, "the exit to be reported");
  REQUIRE(exits.size() == 1);
  CHECK(exits[0].pid == sp.pid);
  CHECK(WIFEXITED(exits[0].status));
  CHECK(WEXITSTATUS(exits[0].status) == 3);
}

TEST_CASE("exec::Supervisor refuses what cannot start with the reason, as a usage error") {
  Sup sup(milliseconds(500));
  auto refused = [&](const exec::SpawnRequest& req) -> std::string {
    try {
      sup.spawn(req);
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::usage);
      return e.what();
    }
    return "started";
  };
  CHECK(refused({{"/no/such/program", "arg"}, {}, "", "", ""}) == "command not found: /no/such/program");
  CHECK(refused({{"/etc/passwd"}, {}, "", "", ""}) == "permission denied: /etc/passwd");
  CHECK(refused(shell("true", "", "", "no-such-user-7f3")) == "no user 'no-such-user-7f3' on this host");
  CHECK(refused(shell("true", "/no/such/dir")) == "working directory '/no/such/dir' does not exist on this host");
  // It still serves.
  auto sp = sup.spawn(shell("true"));
  CHECK(read_all(sp.stdout_fd).empty());
  close(sp.stderr_fd);
}

TEST_CASE("exec::Supervisor starts a process as another user, for good: its ids, groups, home, and nothing back") {
  if (geteuid() != 0) return;  // only root may switch users (CI runs as root)
  test::TempDir dir;
  Sup sup(milliseconds(500));
  // The ids as the kernel has them (real, effective, saved, filesystem),
  // the groups, the variables from the passwd entry, and an attempt to
  // become root again.
  auto sp = sup.spawn(shell("grep -E '^(Uid|Gid|Groups):' /proc/self/status; echo HOME=$HOME USER=$USER "
                            "LOGNAME=$LOGNAME; python3 -c 'import os; os.setuid(0)' 2>/dev/null && echo regained; "
                            "pwd; true",
                            "/tmp", "", "nobody"));
  std::string out = read_all(sp.stdout_fd);
  close(sp.stderr_fd);
  CHECK(out.find("Uid:\t65534\t65534\t65534\t65534") != std::string::npos);
  CHECK(out.find("Gid:\t65534\t65534\t65534\t65534") != std::string::npos);
  CHECK(out.find("Groups:\t65534") != std::string::npos);
  CHECK(out.find("HOME=/nonexistent USER=nobody LOGNAME=nobody") != std::string::npos);
  CHECK(out.find("regained") == std::string::npos);
  CHECK(out.find("/tmp\n") != std::string::npos);
  // The job's own variables win over the passwd entry's.
  auto own = sup.spawn(exec::SpawnRequest{{"/bin/sh", "-c", "echo $HOME"}, {"HOME=/srv"}, "", "", "nobody"});
  CHECK(read_all(own.stdout_fd) == "/srv\n");
  close(own.stderr_fd);
  // A working directory the user may not enter is refused, naming both.
  std::string closed = dir.file("closed");
  REQUIRE(mkdir(closed.c_str(), 0700) == 0);
  try {
    sup.spawn(shell("true", closed, "", "nobody"));
    FAIL("started in a directory nobody may enter");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::usage);
    CHECK(std::string(e.what()) == "working directory '" + closed + "' is not usable by user 'nobody': Permission denied");
  }
}

TEST_CASE("exec::Supervisor ends every process it started, and what they left, when its owner lets go") {
  test::TempDir dir;
  auto sup = std::make_unique<Sup>(milliseconds(300));
  // The job ignores SIGTERM (so SIGKILL must follow), and leaves a child
  // behind in a session of its own.
  auto sp = sup->spawn(shell("trap '' TERM; setsid sh -c 'echo $$ > " + dir.file("setsid.pid") +
                             "; exec sleep 300' & sleep 300 & echo $! > " + dir.file("child.pid") + "; wait"));
  close(sp.stdout_fd);
  close(sp.stderr_fd);
  std::vector<int> pids{sp.pid};
  for (const char* f : {"setsid.pid", "child.pid"}) {
    test::eventually([&] { return !test::trim(test::read_file(dir.file(f))).empty(); }, std::string(f) + " written");
    pids.push_back(std::stoi(test::read_file(dir.file(f))));
  }
  int supervisor = sup->pid();
  sup.reset();
  CHECK(test::process_ended(supervisor));
  for (int pid : pids) CHECK(test::process_ended(pid));
}

TEST_CASE("exec::Supervisor ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT: those are for the agent's drain") {
  Sup sup(milliseconds(300));
  auto sp = sup.spawn(shell("exec sleep 30"));
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) kill(sup.pid(), sig);
  auto again = sup.spawn(shell("echo still serving"));  // throws if S died
  CHECK(read_all(again.stdout_fd) == "still serving\n");
  close(again.stderr_fd);
  CHECK_FALSE(test::process_ended(sup.pid()));
  CHECK_FALSE(test::process_ended(sp.pid));  // and its jobs run on
  close(sp.stdout_fd);
  close(sp.stderr_fd);
}

TEST_CASE("exec::Supervisor takes several requests before answering, and answers each once, each exit after the "
          "answer naming its process") {
  exec::Supervisor sup(milliseconds(300));
  // A request too big for one message goes in a memfd: its environment
  // arrives whole.
  std::string big(100000, 'x');
  std::vector<exec::SpawnRequest> reqs{shell("echo zero"), shell("true", "/no/such/dir"),
                                       exec::SpawnRequest{{"/bin/sh", "-c", "echo ${#BIG}"}, {"BIG=" + big}, "", "", ""},
                                       shell("exit 7")};
  std::vector<uint32_t> tickets;
  std::vector<exec::Fd> outs, errs;
  for (const auto& r : reqs) {
    exec::Fd out, err;
    tickets.push_back(sup.request_spawn(r, out, err));
    outs.push_back(std::move(out));
    errs.push_back(std::move(err));
  }
  CHECK(sup.unanswered() == reqs.size());
  std::vector<Report> reports = sup.reports(0);
  CHECK(sup.unanswered() == 0);
  report_until(sup, reports, reqs.size() + 3, 0, "the answers and the three exits");
  std::vector<Report> answers;
  std::map<pid_t, int> exits;
  for (const auto& r : reports) {
    if (r.kind == Report::Kind::answer) {
      answers.push_back(r);
      continue;
    }
    // Its process was named by an answer before it.
    CHECK(std::any_of(answers.begin(), answers.end(), [&](const Report& a) { return a.pid == r.pid; }));
    exits[r.pid] = r.status;
  }
  REQUIRE(answers.size() == reqs.size());
  // As their starts finished: put back in the order of the requests.
  std::sort(answers.begin(), answers.end(), [](const Report& a, const Report& b) { return a.ticket < b.ticket; });
  for (size_t i = 0; i < answers.size(); ++i) CHECK(answers[i].ticket == tickets[i]);
  CHECK(answers[0].pid > 0);
  CHECK(answers[1].pid == -1);
  CHECK(answers[1].code == ExitCode::usage);
  CHECK(answers[1].error == "working directory '/no/such/dir' does not exist on this host");
  CHECK(answers[2].pid > 0);
  CHECK(answers[3].pid > 0);
  CHECK(read_all(outs[0].release()) == "zero\n");
  CHECK(read_all(outs[2].release()) == "100000\n");
  REQUIRE(exits.size() == 3);
  CHECK(WEXITSTATUS(exits[answers[0].pid]) == 0);
  CHECK(WEXITSTATUS(exits[answers[2].pid]) == 0);
  CHECK(WEXITSTATUS(exits[answers[3].pid]) == 7);
}

TEST_CASE("exec::Supervisor goes on sending when S's end is full, reading what S sent meanwhile") {
  exec::Supervisor sup(milliseconds(300));
  // A small send buffer (the kernel doubles it: 8 KB). Requests of 3 KB
  // fill it after two, and S answers (and reports exits) while this side
  // waits for room; one of 12 KB does not fit at all, and goes in a memfd.
  int small = 4096;
  REQUIRE(setsockopt(sup.fd(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small) == 0);
  size_t started = 0, exited = 0, succeeded = 0;
  auto count = [&](const std::vector<Report>& reports) {
    for (const auto& r : reports) {
      if (r.kind == Report::Kind::answer) {
        started += r.pid > 0;
        continue;
      }
      ++exited;
      succeeded += WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
    }
  };
  for (int i = 0; i < 60; ++i) {
    exec::SpawnRequest req{{"sh", "-c", "test ${#PAD} = " + std::to_string(i < 30 ? 3000 : 12000)},
                           {"PATH=/usr/bin:/bin", "PAD=" + std::string(i < 30 ? 3000 : 12000, 'p')}, "", "", ""};
    exec::Fd out, err;
    sup.request_spawn(req, out, err);
    count(sup.reports(exec::Supervisor::kWindow - 1));
  }
  count(sup.reports(0));
  CHECK(started == 60);
  test::eventually([&] {
    count(sup.reports(0));
    return exited == 60;
  }, "every exit");
  CHECK(succeeded == 60);  // each had its whole environment
}

TEST_CASE("exec::Supervisor reports exits while it works through a long run of requests, not after it") {
  exec::Supervisor sup(milliseconds(300));
  // S is stopped while the requests queue on its socket: once it goes on,
  // it starts them one after another with no wait between. The first
  // processes end meanwhile, and their exits must come before the last
  // answer: an agent counts a slot busy until it hears of the exit.
  const int n = 50;
  REQUIRE(kill(sup.pid(), SIGSTOP) == 0);
  std::vector<exec::Fd> fds;
  for (int i = 0; i < n; ++i) {
    exec::Fd out, err;
    sup.request_spawn(shell("true"), out, err);
    fds.push_back(std::move(out));
    fds.push_back(std::move(err));
  }
  REQUIRE(kill(sup.pid(), SIGCONT) == 0);
  std::vector<Report> reports = sup.reports(0);
  report_until(sup, reports, static_cast<size_t>(2 * n), 0, "every answer and exit");
  size_t last_answer = 0, exits_before = 0;
  for (size_t i = 0; i < reports.size(); ++i)
    if (reports[i].kind == Report::Kind::answer) last_answer = i;
  for (size_t i = 0; i < last_answer; ++i) exits_before += reports[i].kind == Report::Kind::exit;
  CHECK(exits_before > 0);
}

TEST_CASE("exec::Supervisor leaves a request S died before answering unanswered: its process may have run") {
  exec::Supervisor sup(milliseconds(300));
  // Had S started it, the job could have been what killed S (a job that
  // kills its agent is poison, told by its lost deliveries): no answer may
  // say it failed to start. The caller learns that S died.
  REQUIRE(kill(sup.pid(), SIGSTOP) == 0);
  exec::Fd out, err;
  sup.request_spawn(shell("true"), out, err);
  REQUIRE(kill(sup.pid(), SIGKILL) == 0);
  std::vector<Report> answered;
  std::string error;
  try {
    answered = sup.reports(0);
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::internal);
    error = e.what();
  }
  CHECK(answered.empty());
  CHECK(error.find("died") != std::string::npos);
}

TEST_CASE("exec::Supervisor gives up on a request S does not answer in 10 s, also for a caller that never waits") {
  exec::Supervisor sup(milliseconds(300));
  // The agent's loop never waits for an answer: it asks for what came, and
  // polls until the give-up time. A hung S must still be noticed.
  REQUIRE(kill(sup.pid(), SIGSTOP) == 0);
  exec::Fd out, err;
  const auto sent = std::chrono::steady_clock::now();
  sup.request_spawn(shell("sleep 30"), out, err);
  CHECK(sup.reports(sup.unanswered()).empty());
  REQUIRE(sup.next_give_up());
  CHECK(*sup.next_give_up() >= sent + std::chrono::seconds(10));
  std::this_thread::sleep_until(*sup.next_give_up());
  auto given_up = sup.reports(sup.unanswered());
  REQUIRE(given_up.size() == 1);
  CHECK(given_up[0].pid == -1);
  CHECK(given_up[0].code == ExitCode::internal);
  CHECK(given_up[0].error.find("did not answer within 10s") != std::string::npos);
  CHECK_FALSE(sup.next_give_up());
  // S's late answer is ignored, and its process killed: nobody tracks it.
  REQUIRE(kill(sup.pid(), SIGCONT) == 0);
  std::vector<Report> late;
  test::eventually([&] {
    for (auto& r : sup.reports(0)) late.push_back(r);
    return !late.empty();
  }, "the killed process's exit");
  CHECK(late[0].kind == Report::Kind::exit);
  CHECK(WIFSIGNALED(late[0].status));
}

TEST_CASE("exec::Supervisor starts and answers the next requests while one start waits, each exit after its answer") {
  test::TempDir dir;
  // The first request's program is held by a write lease: its exec waits
  // to open it until the lease is given up (or the kernel revokes it, after
  // /proc/sys/fs/lease-break-time), and its start with it.
  const std::string held = dir.file("held-true");
  REQUIRE(std::system(("cp /bin/true " + held).c_str()) == 0);
  auto was = signal(SIGIO, SIG_IGN);  // the lease's break is signalled to its holder
  int lease = open(held.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(lease >= 0);
  REQUIRE(fcntl(lease, F_SETLEASE, F_WRLCK) == 0);
  exec::Supervisor sup(milliseconds(300));
  std::vector<exec::Fd> fds(4);
  const uint32_t first = sup.request_spawn(exec::SpawnRequest{{held}, {}, "", "", ""}, fds[0], fds[1]);
  const uint32_t second = sup.request_spawn(shell("exit 4"), fds[2], fds[3]);
  // The second starts, is answered and ends while the first still waits.
  std::vector<Report> reports;
  report_until(sup, reports, 2, 1, "the second request's answer and exit");
  CHECK(reports[0].kind == Report::Kind::answer);
  CHECK(reports[0].ticket == second);
  CHECK(reports[1].kind == Report::Kind::exit);
  CHECK(reports[1].pid == reports[0].pid);
  CHECK(WEXITSTATUS(reports[1].status) == 4);
  CHECK(sup.unanswered() == 1);
  REQUIRE(fcntl(lease, F_SETLEASE, F_UNLCK) == 0);
  close(lease);
  signal(SIGIO, was);
  report_until(sup, reports, 4, 0, "the first request's answer and exit");
  CHECK(reports[2].kind == Report::Kind::answer);
  CHECK(reports[2].ticket == first);
  CHECK(reports[2].pid > 0);
  CHECK(reports[3].kind == Report::Kind::exit);
  CHECK(reports[3].pid == reports[2].pid);
  CHECK(WEXITSTATUS(reports[3].status) == 0);
}

TEST_CASE("exec::Supervisor starts a job with no signal blocked and none that the agent or S ignore ignored") {
  // S blocks SIGCHLD and ignores SIGINT, SIGTERM, SIGHUP, SIGQUIT and
  // SIGPIPE; an agent blocks SIGUSR1 and SIGUSR2 (ignored here, so that S
  // inherits them so). A job must start as a shell would start it.
  auto usr1 = signal(SIGUSR1, SIG_IGN), usr2 = signal(SIGUSR2, SIG_IGN);
  Sup sup(milliseconds(300));
  signal(SIGUSR1, usr1);
  signal(SIGUSR2, usr2);
  auto sp = sup.spawn(exec::SpawnRequest{{"cat", "/proc/self/status"}, {"PATH=/usr/bin:/bin"}, "", "", ""});
  std::string status = read_all(sp.stdout_fd);
  close(sp.stderr_fd);
  auto mask = [&](const std::string& field) {
    auto at = status.find(field + ":");
    REQUIRE(at != std::string::npos);
    return std::stoull(status.substr(at + field.size() + 1), nullptr, 16);
  };
  CHECK(mask("SigBlk") == 0);
  uint64_t ignored = mask("SigIgn");
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2}) {
    CAPTURE(sig);
    CHECK((ignored & (uint64_t{1} << (sig - 1))) == 0);
  }
}

TEST_CASE("exec::Supervisor keeps its jobs' process groups in the lock file while they run, for end_job_groups") {
  test::TempDir dir;
  Sup sup(milliseconds(500));
  const std::string lock = dir.file("agent.lock");
  sup.s.lock(lock);
  auto read_groups = [&] {
    exec::Fd fd(open(lock.c_str(), O_RDONLY | O_CLOEXEC));
    REQUIRE(fd.get() >= 0);
    return exec::read_job_groups(fd.get());
  };
  auto sp = sup.spawn(shell("sleep 300 & echo $!; wait"));
  close(sp.stderr_fd);
  std::string child;
  {
    char buf[64];
    pollfd p{sp.stdout_fd, POLLIN, 0};
    REQUIRE(poll(&p, 1, 5000) == 1);
    ssize_t n = read(sp.stdout_fd, buf, sizeof buf);
    REQUIRE(n > 0);
    child = test::trim(std::string(buf, static_cast<size_t>(n)));
  }
  close(sp.stdout_fd);
  test::eventually([&] { return read_groups().groups == std::vector<pid_t>{sp.pid}; }, "the job's group to be kept");
  CHECK(read_groups().session == sup.pid());  // S leads a session of its own
  CHECK(test::read_file(lock).rfind(fmt::format("{} {}\n", getpid(), sup.pid()), 0) == 0);

  // What a dead supervisor leaves: the job's process and its child.
  auto ended_now = exec::end_job_groups(read_groups());
  CHECK(ended_now.killed == 2);
  CHECK(ended_now.left == 0);
  CHECK(test::process_ended(std::stoi(child)));
  test::eventually([&] { return read_groups().groups.empty(); }, "the group to be dropped once its job is reaped");
  CHECK(exec::end_job_groups(read_groups()).killed == 0);
}

TEST_CASE("exec::parse_job_groups reads only a well-formed groups line, and takes no group without a session") {
  CHECK(exec::parse_job_groups("12 13\n").groups.empty());
  CHECK(exec::parse_job_groups("").groups.empty());
  CHECK(exec::parse_job_groups("12 13\nsession x groups 5\n").groups.empty());
  CHECK(exec::parse_job_groups("12 13\nsession 0 groups 5\n").groups.empty());
  auto g = exec::parse_job_groups(exec::job_groups_text(12, 13, exec::JobGroups{7, {40, 41}}));
  CHECK(g.session == 7);
  CHECK(g.groups == std::vector<pid_t>{40, 41});
  // Never init, nor "every process" (kill(-1)) or our own group by 0.
  CHECK(exec::parse_job_groups("12 13\nsession 7 groups 1 0 -1 42\n").groups == std::vector<pid_t>{42});
}
