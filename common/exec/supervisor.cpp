// The job supervisor (see supervisor.hpp for why and what).
//
// The wire: every message is one SOCK_SEQPACKET datagram, a Header, then
// text, with descriptors as SCM_RIGHTS.
//   agent → S  spawn(seq) + the request   fds: stdin, stdout, stderr
//              spawn(seq)                 fds: the request, stdin, stdout, stderr
//              lock                       fds: the agent's lock file
//   S → agent  spawned(seq, pid)
//              failed(seq, status = ExitCode) + the error's text
//              exited(pid, status = the wait status)
// S answers each request once its start is done, in the order the starts
// finish (spawn_pool.hpp), and a process's exit is reported after the
// answer that named it. The agent sends a few requests before it reads
// their answers (Supervisor::kWindow); it never waits for room to send
// without reading what S sent meanwhile, so neither waits on the other.
// A request is argc and envc as two uint32, then cwd, the user, argv and
// the environment, each NUL-terminated: in the datagram up to kMaxText
// bytes, else in a memfd (no size limit).
#include "common/exec/supervisor.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "common/exec/job_groups.hpp"
#include "common/exec/spawn_pool.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/log.hpp"

namespace jobctl::exec {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace detail {

enum Kind : uint32_t { kSpawn = 1, kLock = 2, kSpawned = 3, kFailed = 4, kExited = 5 };

struct Header {
  uint32_t kind = 0;
  uint32_t seq = 0;
  int32_t pid = -1;
  int32_t status = 0;
};

struct Message {
  Header header;
  std::string text;
  std::vector<Fd> fds;
};

}  // namespace detail

namespace {

using namespace detail;

constexpr size_t kMaxText = 16384;  // an error's text, or a request in the datagram
constexpr size_t kMaxFds = 4;      // descriptors in one message
constexpr auto kReplyLimit = std::chrono::seconds(10);  // the agent's wait for an answer
constexpr auto kKillLimit = std::chrono::seconds(10);   // S's wait after the first SIGKILL
constexpr size_t kStarters = 4;                          // S's starter threads (spawn_pool.hpp)

// Sends one message; false (errno set) when the peer is gone, or with
// MSG_DONTWAIT in `flags`, when there is no room for it now (EAGAIN).
bool send_message(int sock, const Header& h, std::string_view text, const std::vector<int>& fds, int flags = 0) {
  iovec iov[2] = {{const_cast<Header*>(&h), sizeof h}, {const_cast<char*>(text.data()), text.size()}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = text.empty() ? 1 : 2;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    if (sendmsg(sock, &msg, MSG_NOSIGNAL | flags) >= 0) return true;
    if (errno != EINTR) return false;
  }
}

enum class Received { message, nothing, closed };

// Receives one message, its descriptors close-on-exec. A malformed one
// comes back with kind 0. `closed`: the peer's end is closed (or broken).
Received receive_message(int sock, Message& m, int flags) {
  char buf[sizeof(Header) + kMaxText];
  iovec iov{buf, sizeof buf};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? Received::nothing : Received::closed;
  m = Message{};
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      m.fds.emplace_back(fd);
    }
  }
  if (n == 0) return Received::closed;  // nobody sends an empty datagram: end of file
  if (static_cast<size_t>(n) < sizeof(Header) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) return Received::message;
  memcpy(&m.header, buf, sizeof(Header));
  m.text.assign(buf + sizeof(Header), static_cast<size_t>(n) - sizeof(Header));
  return Received::message;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

Error internal_error(const std::string& what) {
  return Error(ExitCode::internal, fmt::format("{}: {}", what, strerror(errno)));
}

std::string encode_request(const SpawnRequest& req) {
  std::string buf;
  const uint32_t counts[2] = {static_cast<uint32_t>(req.argv.size()), static_cast<uint32_t>(req.env.size())};
  buf.append(reinterpret_cast<const char*>(counts), sizeof counts);
  // As exec would read them: each string up to its first NUL.
  auto put = [&](const std::string& s) { buf.append(s.c_str()).push_back('\0'); };
  put(req.cwd);
  put(req.user);
  for (const auto& a : req.argv) put(a);
  for (const auto& e : req.env) put(e);
  return buf;
}

Fd request_file(const std::string& request) {
  Fd fd(memfd_create("jobctl-spawn", MFD_CLOEXEC));
  if (fd.get() < 0 || !write_all(fd.get(), request)) throw internal_error("cannot write a job's spawn request");
  return fd;
}

struct Request {
  std::vector<std::string> argv, env;
  std::string cwd, user;
};

std::string read_request_file(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size > (1 << 30)) throw Error(ExitCode::internal, "a malformed spawn request");
  std::string buf(static_cast<size_t>(st.st_size), '\0');
  size_t off = 0;
  while (off < buf.size()) {
    ssize_t n = pread(fd, buf.data() + off, buf.size() - off, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(ExitCode::internal, "a truncated spawn request");
    off += static_cast<size_t>(n);
  }
  return buf;
}

Request decode_request(const std::string& buf) {
  if (buf.size() < 8) throw Error(ExitCode::internal, "a malformed spawn request");
  uint32_t counts[2];
  memcpy(counts, buf.data(), sizeof counts);
  std::vector<std::string> strings;
  for (size_t at = sizeof counts; at < buf.size();) {
    size_t end = buf.find('\0', at);
    if (end == std::string::npos) break;
    strings.emplace_back(buf, at, end - at);
    at = end + 1;
  }
  if (strings.size() != 2 + size_t{counts[0]} + counts[1]) throw Error(ExitCode::internal, "a malformed spawn request");
  Request r;
  r.cwd = strings[0];
  r.user = strings[1];
  r.argv.assign(strings.begin() + 2, strings.begin() + 2 + counts[0]);
  r.env.assign(strings.begin() + 2 + counts[0], strings.end());
  return r;
}

std::optional<pid_t> parent_of(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  Fd fd(open(path, O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  char buf[1024];
  ssize_t n = read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  // "pid (comm) state ppid …": comm may hold anything, so from its last ')'.
  const char* paren = strrchr(buf, ')');
  char state;
  int ppid;
  if (!paren || sscanf(paren + 1, " %c %d", &state, &ppid) != 2) return std::nullopt;
  return ppid;
}

int thread_count() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return 1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

// Closes every descriptor from `first` up.
void close_from(int first) {
  if (close_range(static_cast<unsigned>(first), ~0U, 0) == 0) return;
  std::vector<int> open_fds;  // a kernel before 5.9: what /proc lists
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      int fd = atoi(e->d_name);
      if (fd >= first && fd != dirfd(d)) open_fds.push_back(fd);
    }
    closedir(d);
  }
  for (int fd : open_fds) close(fd);
}

// One request as a starter thread takes it: the datagram's text, or a
// memfd, and the three streams.
pid_t start_requested(const std::string& text, std::vector<Fd>& fds) {
  const size_t streams = fds.size() == 4 ? 1 : 0;
  if (fds.size() != 3 + streams) throw Error(ExitCode::internal, "a spawn request without its descriptors");
  Request r = decode_request(streams ? read_request_file(fds[0].get()) : text);
  return start_process(r.argv, std::move(r.env), r.cwd, r.user, fds[streams].get(), fds[streams + 1].get(),
                       fds[streams + 2].get());
}

// S itself: serves the agent until the lifeline breaks, then ends every
// process it has. One thread answers and reaps; its starters (spawn_pool.hpp)
// only start. Every wait is bounded.
class Supervising {
 public:
  Supervising(int sock, int signals, milliseconds kill_grace)
      : sock_(sock), signals_(signals), kill_grace_(kill_grace) {}

  // Until the agent is gone.
  void serve() {
    while (!broken_) {
      pollfd fds[3] = {{sock_, POLLIN, 0}, {signals_, POLLIN, 0}, {starters_.fd(), POLLIN, 0}};
      if (poll(fds, 3, 1000) < 0 && errno != EINTR) return;
      drain_signals();
      answer();
      reap();
      Message m;
      while (!broken_) {
        Received r = receive_message(sock_, m, MSG_DONTWAIT);
        if (r == Received::nothing) break;
        if (r == Received::closed) broken_ = true;
        else handle(m);
        // The agent sends more as each start is answered: without this,
        // a long run of requests would hold back every answer and exit
        // until its end, and the slots of jobs long over would look busy.
        answer();
        reap();
        record_jobs();  // as they start: a long run of requests would hold it back
      }
      record_jobs();
    }
  }

  // SIGTERM to everything, SIGKILL after the grace, until no child is left.
  void end_all() {
    // Nothing more starts. A start under way is a descendant like the rest
    // (and a stuck one is killed with them); what it started is added to
    // the jobs as it comes (answer() sends nothing now).
    starters_.stop_taking();
    answer();
    if (!reap()) return;  // nothing left: a clean shutdown
    size_t n = signal_all(SIGTERM);
    util::log_event(util::LogLevel::warn, "agent_gone",
                    {{"supervisor_pid", std::to_string(getpid())},
                     {"processes", std::to_string(n)},
                     {"kill_grace", util::format_duration(std::chrono::duration_cast<util::Micros>(kill_grace_))}});
    const auto kill_at = Clock::now() + kill_grace_;
    const auto give_up = kill_at + kKillLimit;
    while (reap()) {
      answer();
      auto now = Clock::now();
      if (now >= give_up) {
        util::log_event(util::LogLevel::error, "supervisor_gave_up",
                        {{"supervisor_pid", std::to_string(getpid())},
                         {"processes", std::to_string(descendants(getpid()).size())}});
        return;
      }
      if (now >= kill_at) signal_all(SIGKILL);
      pollfd p{signals_, POLLIN, 0};
      poll(&p, 1, 50);
      drain_signals();
    }
  }

 private:
  void handle(Message& m) {
    if (m.header.kind == kSpawn) spawn(m);
    if (m.header.kind == kLock)
      for (auto& fd : m.fds) {
        if (record_ < 0) record_ = fd.get();
        held_.push_back(std::move(fd));  // until S exits
        jobs_changed_ = true;
      }
  }

  // Keeps the jobs' process groups in the lock file for the agent's next
  // incarnation, should S be killed with the agent (job_groups.hpp). A
  // write that fails (a full /tmp) leaves the next one to lease expiry.
  void record_jobs() {
    if (!jobs_changed_ || record_ < 0) return;
    jobs_changed_ = false;
    const std::string text =
        job_groups_text(agent_, getpid(), JobGroups{session_, std::vector<pid_t>(jobs_.begin(), jobs_.end())});
    // Truncated only when shorter than before: each truncate is an inode
    // update (and on ext4, a journal entry) the next start would pay.
    if (pwrite(record_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) return;
    if (text.size() < recorded_size_ && ftruncate(record_, static_cast<off_t>(text.size())) != 0) return;
    recorded_size_ = text.size();
  }

  // The start itself is the starters' (spawn_pool.hpp); answer() sends
  // its answer once it is done.
  void spawn(Message& m) { starters_.submit(m.header.seq, std::move(m.text), std::move(m.fds)); }

  // Answers the requests whose starts are done. A process that ended before
  // its answer went out (reap() kept its status) is reported right after it.
  void answer() {
    for (auto& r : starters_.take()) {
      Header h = r.pid > 0 ? Header{kSpawned, r.seq, r.pid, 0} : Header{kFailed, r.seq, -1, r.code};
      if (r.error.size() > kMaxText) r.error.resize(kMaxText);
      if (!broken_ && !send_message(sock_, h, r.error, {})) broken_ = true;
      if (r.pid <= 0) continue;
      if (auto early = early_exits_.find(r.pid); early == early_exits_.end()) {
        jobs_.insert(r.pid);
        jobs_changed_ = true;
      } else {
        if (!broken_ && !send_message(sock_, Header{kExited, 0, r.pid, early->second.status}, {}, {}))
          broken_ = true;
        early_exits_.erase(early);
      }
    }
    // An exit kept while requests 1..n were under way is an orphan's once
    // all of them are answered.
    std::erase_if(early_exits_, [&](const auto& e) { return e.second.under_way < starters_.oldest_unanswered(); });
  }

  // Reaps every child that ended, reporting jobs to the agent. Returns
  // whether any child is left.
  bool reap() {
    for (;;) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid == 0) return true;
      if (pid < 0) {
        if (errno == EINTR) continue;
        return errno != ECHILD;
      }
      if (jobs_.erase(pid) == 0) {
        // A job whose answer has not gone out yet, or an orphan (only reaped).
        if (starters_.under_way())
          early_exits_.insert_or_assign(pid, EarlyExit{status, starters_.submitted()});
        continue;
      }
      jobs_changed_ = true;
      if (broken_) continue;
      if (!send_message(sock_, Header{kExited, 0, pid, status}, {}, {})) broken_ = true;
    }
  }

  // Signals the jobs' process groups and every descendant. Returns how
  // many descendants there were.
  size_t signal_all(int sig) {
    // A stopped process acts on SIGTERM only once continued.
    auto send = [sig](pid_t target) {
      kill(target, sig);
      if (sig == SIGTERM) kill(target, SIGCONT);
    };
    for (pid_t group : jobs_) send(-group);
    auto all = descendants(getpid());
    for (pid_t pid : all) send(pid);
    return all.size();
  }

  void drain_signals() {
    signalfd_siginfo si;
    while (read(signals_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    }
  }

  int sock_;
  int signals_;
  milliseconds kill_grace_;
  bool broken_ = false;   // the lifeline: the agent is gone
  std::set<pid_t> jobs_;  // started for the agent and not yet reaped
  SpawnPool starters_{kStarters, start_requested};
  // Processes reaped before their answer went out (or orphans, reaped
  // while a start was under way): the wait status, and the number of the
  // last request submitted then, whose start may be what made them.
  struct EarlyExit {
    int status;
    uint64_t under_way;
  };
  std::map<pid_t, EarlyExit> early_exits_;
  std::vector<Fd> held_;  // lock files
  int record_ = -1;       // the first of them, where record_jobs() writes
  size_t recorded_size_ = SIZE_MAX;  // the length of its text (unknown at first: truncated)
  bool jobs_changed_ = false;
  const pid_t agent_ = getppid();
  const pid_t session_ = getsid(0);
};

[[noreturn]] void supervise(int sock, milliseconds kill_grace) {
  prctl(PR_SET_NAME, "jobagent-sup", 0, 0, 0);
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  // A session of S's own, which its jobs inherit: the next incarnation
  // kills only in it (job_groups.hpp), and no job shares a terminal with
  // the agent. S, forked, leads no group, so this cannot fail; its session
  // would otherwise be the agent's, which is 0 where its leader is outside
  // the pid namespace or the process never left the kernel's first one.
  setsid();
  // Nothing of the agent's but stdio: its socket becomes descriptor 3.
  if (sock != 3 && dup3(sock, 3, O_CLOEXEC) < 0) _exit(static_cast<int>(ExitCode::internal));
  close_from(4);
  // No handler of the agent's lives on here: a start vforks, and its child
  // would run a handler on S's memory. A job's start then resets only what
  // S itself blocks or ignores (exec::start_process); a signal ignored by
  // whoever started the agent stays ignored in its jobs, as across any exec.
  for (int s = 1; s < NSIG; ++s) {
    struct sigaction sa {};
    if (sigaction(s, nullptr, &sa) == 0 && sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN) signal(s, SIG_DFL);
  }
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) signal(s, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  int signals = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  std::optional<Supervising> s;
  try {
    s.emplace(3, signals, kill_grace);
  } catch (const std::exception& e) {  // no thread to be had: the agent learns that S died
    util::log_event(util::LogLevel::error, "supervisor_failed", {{"error", e.what()}});
    _exit(static_cast<int>(ExitCode::internal));
  }
  try {
    s->serve();
  } catch (...) {  // out of memory: still end what runs
  }
  try {
    s->end_all();
  } catch (...) {
  }
  _exit(0);
}

}  // namespace

Supervisor::Supervisor(milliseconds kill_grace) : kill_grace_(kill_grace) {
  if (int n = thread_count(); n > 1)
    throw Error(ExitCode::internal,
                fmt::format("the job supervisor must be started before any thread, and {} threads run", n));
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    throw internal_error("cannot create the job supervisor's socket");
  pid_t pid = fork();
  if (pid < 0) {
    Error e = internal_error("cannot start the job supervisor");
    close(sv[0]);
    close(sv[1]);
    throw e;
  }
  if (pid == 0) {
    close(sv[0]);
    supervise(sv[1], kill_grace);
  }
  close(sv[1]);
  sock_ = Fd(sv[0]);
  pid_ = pid;
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

void Supervisor::end() {
  ended_ = true;
  sock_ = Fd();  // the lifeline breaks
  if (pid_ <= 0) return;
  const pid_t s = std::exchange(pid_, -1);
  const auto give_up = Clock::now() + kill_grace_ + std::chrono::seconds(5);
  while (Clock::now() < give_up) {
    pid_t r = waitpid(s, nullptr, WNOHANG);
    if (r == s || (r < 0 && errno != EINTR)) {
      // Nothing S started lives on, and this process is ending as it
      // meant to: nobody will need the lock file.
      if (!lock_path_.empty()) unlink(lock_path_.c_str());
      return;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
}

Supervisor::~Supervisor() { end(); }

uint32_t Supervisor::request_spawn(const SpawnRequest& req, Fd& stdout_r, Fd& stderr_r) {
  if (lost_) throw Error(ExitCode::internal, fmt::format("the job supervisor (pid {}) died", pid_));
  if (ended_) throw Error(ExitCode::internal, "the job supervisor was ended: nothing more can start");
  Stdio io = make_stdio(req.stdin_data);
  std::string request = encode_request(req);
  const uint32_t seq = ++seq_;
  // In the message if the socket takes one that big, else in a memfd.
  if (request.size() > kMaxText || !send(kSpawn, seq, request, {io.in.get(), io.out_w.get(), io.err_w.get()})) {
    Fd file = request_file(request);
    send(kSpawn, seq, {}, {file.get(), io.in.get(), io.out_w.get(), io.err_w.get()});
  }
  // S has its own copies now; the pipes must end when the job's do.
  waiting_.push_back(Waiting{seq, Clock::now() + kReplyLimit});
  stdout_r = std::move(io.out_r);
  stderr_r = std::move(io.err_r);
  return seq;
}

std::vector<Supervisor::Report> Supervisor::reports(size_t leave) {
  std::optional<Clock::time_point> give_up;  // read only when there is a wait
  Message m;
  for (;;) {
    while (receive(m)) handle_report(m);
    if (waiting_.size() <= leave || lost_ || ended_) break;
    if (!give_up) give_up = Clock::now() + kReplyLimit;
    auto left = std::chrono::duration_cast<milliseconds>(*give_up - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{sock_.get(), POLLIN, 0};
    poll(&p, 1, static_cast<int>(left) + 1);
  }
  // The requests a live S did not answer in time: those waited for here
  // in vain, and any 10 s after its sending (a caller that never waits
  // still learns of a hung S). Given up: a late answer's process is killed
  // (handle_report). Those S died before answering are not answered:
  // their processes may have run (one may be what killed S), so they are
  // no start failures; their runs are left to their leases, like the rest
  // of an agent that must stop now.
  const auto now = Clock::now();
  while (!lost_ && !ended_ && !waiting_.empty() && (waiting_.size() > leave || now >= waiting_.front().give_up)) {
    reports_.push_back(Report{Report::Kind::answer, waiting_.front().seq, -1, 0, ExitCode::internal,
                              fmt::format("the job supervisor (pid {}) did not answer within {}s", pid_,
                                          std::chrono::seconds(kReplyLimit).count())});
    waiting_.pop_front();
  }
  if (lost_ && reports_.empty()) {
    const pid_t pid = pid_;
    size_t killed = end_orphans();
    throw Error(ExitCode::internal,
                fmt::format("the job supervisor (pid {}) died, so no job can start; {} processes it left were killed",
                            pid, killed),
                "start jobagent again: its runs are given back at once");
  }
  return std::exchange(reports_, {});
}

std::optional<Clock::time_point> Supervisor::next_give_up() const {
  if (waiting_.empty() || lost_ || ended_) return std::nullopt;
  return waiting_.front().give_up;
}

void Supervisor::lock(const std::string& path) {
  Fd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0 || flock(fd.get(), LOCK_EX | LOCK_NB) != 0) throw internal_error("cannot lock " + path);
  // For people who look: the agent's pid and its supervisor's.
  std::string pids = fmt::format("{} {}\n", getpid(), pid_);
  if (ftruncate(fd.get(), 0) != 0 || !write_all(fd.get(), pids)) throw internal_error("cannot write " + path);
  send(kLock, 0, {}, {fd.get()});
  lock_ = std::move(fd);
  lock_path_ = path;
}

bool Supervisor::receive(Message& m) {
  if (lost_ || ended_) return false;
  Received r = receive_message(sock_.get(), m, MSG_DONTWAIT);
  if (r == Received::closed) lost_ = true;
  return r == Received::message;
}

void Supervisor::handle_report(const Message& m) {
  if (m.header.kind == kExited) reports_.push_back(Report{Report::Kind::exit, 0, m.header.pid, m.header.status, {}, {}});
  if (m.header.kind != kSpawned && m.header.kind != kFailed) return;
  auto it = std::find_if(waiting_.begin(), waiting_.end(), [&](const Waiting& w) { return w.seq == m.header.seq; });
  if (it == waiting_.end()) {
    // The answer to a request given up on (reports() timed out): nobody
    // tracks that process, so it must not run.
    if (m.header.kind == kSpawned) signal_group(m.header.pid, SIGKILL);
    return;
  }
  waiting_.erase(it);
  if (m.header.kind == kSpawned)
    reports_.push_back(Report{Report::Kind::answer, m.header.seq, m.header.pid, 0, ExitCode::ok, {}});
  else
    reports_.push_back(Report{Report::Kind::answer, m.header.seq, -1, 0, static_cast<ExitCode>(m.header.status), m.text});
}

// While S's end has no room, reads what S sent: S may be waiting for room
// to send it. False when the message is bigger than the socket's buffer
// (net.core.wmem_default, or SO_SNDBUF) lets it be.
bool Supervisor::send(uint32_t kind, uint32_t seq, std::string_view text, const std::vector<int>& fds) {
  const auto give_up = Clock::now() + kReplyLimit;
  while (!lost_) {
    if (send_message(sock_.get(), Header{kind, seq, -1, 0}, text, fds, MSG_DONTWAIT)) return true;
    if (errno == EMSGSIZE && !text.empty()) return false;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      lost_ = true;
      break;
    }
    Message m;
    while (receive(m)) handle_report(m);
    auto left = std::chrono::duration_cast<milliseconds>(give_up - Clock::now()).count();
    if (left <= 0)
      throw Error(ExitCode::internal, fmt::format("the job supervisor (pid {}) took no request within {}s", pid_,
                                                  std::chrono::seconds(kReplyLimit).count()));
    pollfd p{sock_.get(), POLLIN | POLLOUT, 0};
    poll(&p, 1, static_cast<int>(left) + 1);
  }
  throw Error(ExitCode::internal, fmt::format("the job supervisor (pid {}) died", pid_));
}

size_t Supervisor::end_orphans() {
  // Once S is reaped, what it left has been reparented here (a subreaper
  // too): end all of it at once, then reap it.
  auto give_up = Clock::now() + std::chrono::seconds(2);
  while (pid_ > 0 && Clock::now() < give_up) {
    pid_t r = waitpid(pid_, nullptr, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) pid_ = -1;
    else std::this_thread::sleep_for(milliseconds(10));
  }
  auto all = descendants(getpid());
  for (pid_t pid : all) kill(pid, SIGKILL);
  give_up = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < give_up) {
    pid_t r = waitpid(-1, nullptr, WNOHANG);
    if (r < 0 && errno == ECHILD) break;
    if (r <= 0) std::this_thread::sleep_for(milliseconds(10));
  }
  return all.size();
}

Taken take_lock(const std::string& path, milliseconds limit, Fd& held) {
  Fd fd(open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) return Taken::missing;
  const auto give_up = Clock::now() + limit;
  while (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return Taken::missing;
    if (Clock::now() >= give_up) return Taken::busy;
    std::this_thread::sleep_for(milliseconds(20));
  }
  held = std::move(fd);
  return Taken::yes;
}

std::vector<pid_t> descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      long pid = strtol(e->d_name, &end, 10);
      if (*end != '\0' || pid <= 0) continue;
      if (auto ppid = parent_of(static_cast<pid_t>(pid))) children.emplace(*ppid, static_cast<pid_t>(pid));
    }
    closedir(d);
  }
  std::vector<pid_t> out, todo{root};
  std::set<pid_t> seen{root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    auto [begin, end] = children.equal_range(p);
    for (auto it = begin; it != end; ++it)
      if (seen.insert(it->second).second) {
        out.push_back(it->second);
        todo.push_back(it->second);
      }
  }
  return out;
}

}  // namespace jobctl::exec
