#include "common/store/wakeups.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "common/config/libpq.hpp"
#include "common/store/postgres_session.hpp"

namespace jobctl::store {
namespace {

using config::libpq;

class NoWakeups final : public Wakeups {
 public:
  int fd() const override { return -1; }
  WakeReasons drain() override { return {}; }
};

class PostgresWakeups final : public Wakeups {
 public:
  PostgresWakeups(std::string conninfo, std::vector<std::string> queues)
      : conninfo_(std::move(conninfo)), queues_(std::move(queues)) {
    connect();
  }
  ~PostgresWakeups() override { libpq().PQfinish(conn_); }

  int fd() const override { return healthy_ ? libpq().PQsocket(conn_) : -1; }

  WakeReasons drain() override {
    WakeReasons r;
    if (!healthy_) {
      // Re-open at most every 5 s; once back, anything may have been missed.
      if (std::chrono::steady_clock::now() - last_try_ > std::chrono::seconds(5)) connect();
      r.work = r.cancel = healthy_;
      return r;
    }
    if (!libpq().PQconsumeInput(conn_)) {
      healthy_ = false;  // the server went away: stop polling its socket
      r.work = r.cancel = true;
      return r;
    }
    while (PGnotify* n = libpq().PQnotifies(conn_)) {
      std::string channel = n->relname, payload = n->extra ? n->extra : "";
      if (channel == kCancelChannel) r.cancel = true;
      if (channel == kWakeChannel && std::find(queues_.begin(), queues_.end(), payload) != queues_.end())
        r.work = true;
      libpq().PQfreemem(n);
    }
    return r;
  }

 private:
  void connect() {
    libpq().PQfinish(conn_);
    conn_ = connect_postgres(conninfo_);
    last_try_ = std::chrono::steady_clock::now();
    healthy_ = false;
    if (libpq().PQstatus(conn_) != CONNECTION_OK) return;
    PGresult* res = libpq().PQexec(conn_, "LISTEN jobctl_wake; LISTEN jobctl_cancel");
    healthy_ = libpq().PQresultStatus(res) == PGRES_COMMAND_OK;
    libpq().PQclear(res);
  }

  std::string conninfo_;
  std::vector<std::string> queues_;
  PGconn* conn_ = nullptr;
  bool healthy_ = false;
  std::chrono::steady_clock::time_point last_try_;
};

class SqliteWakeups final : public Wakeups {
 public:
  explicit SqliteWakeups(const std::string& db_path) {
    std::filesystem::path p = std::filesystem::absolute(db_path);
    wal_name_ = p.filename().string() + "-wal";
    fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ >= 0 && inotify_add_watch(fd_, p.parent_path().c_str(), IN_MODIFY | IN_CREATE) < 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~SqliteWakeups() override {
    if (fd_ >= 0) close(fd_);
  }

  int fd() const override { return fd_; }

  WakeReasons drain() override {
    WakeReasons r;
    alignas(inotify_event) char buf[4096];
    ssize_t n;
    while ((n = read(fd_, buf, sizeof buf)) > 0) {
      for (char* p = buf; p < buf + n;) {
        auto* ev = reinterpret_cast<inotify_event*>(p);
        if (ev->len && wal_name_ == ev->name) r.work = r.cancel = true;
        p += sizeof(inotify_event) + ev->len;
      }
    }
    return r;
  }

 private:
  int fd_ = -1;
  std::string wal_name_;
};

}  // namespace

std::unique_ptr<Wakeups> Wakeups::open(const config::Dsn& dsn, const std::vector<std::string>& queues, bool listen) {
  if (!listen) return std::make_unique<NoWakeups>();
  if (dsn.backend == config::Backend::postgres) return std::make_unique<PostgresWakeups>(dsn.target, queues);
  return std::make_unique<SqliteWakeups>(dsn.target);
}

}  // namespace jobctl::store
