#pragma once
// Test support: faults at the store's seams, for the fault tests.
//
// * FaultyConnection wraps a real store::Connection and, when told, fails
//   the Nth statement or commit from now: refused (not applied, as a
//   connection that broke before it was sent), or applied with its answer
//   lost (the acknowledgement gone, as a server crash or a dropped
//   connection leaves it at the worst moment). It can also run something
//   between two statements of a transaction, as another connection that
//   commits just then.
// * TcpProxy stands between a program and PostgreSQL on 127.0.0.1; it can
//   freeze (the connections stay open, nothing is forwarded: a server
//   stopped with SIGSTOP, a hung host) and thaw.
// * StoreFreeze freezes a test database for every program using the DSN
//   it hands out: PostgreSQL through a TcpProxy, SQLite by holding the
//   write lock from another connection (readers go on, writers wait).
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/store/sql.hpp"
#include "tests/support/fixtures.hpp"

namespace jobctl::test {

class FaultyConnection final : public store::Connection {
 public:
  explicit FaultyConnection(std::unique_ptr<store::Connection> inner) : inner_(std::move(inner)) {}

  enum class Fault {
    refused,      // not applied; fails with ExitCode::store
    answer_lost,  // applied, then fails with ExitCode::store
  };
  // The next commit (or statement outside a transaction) is applied, then
  // fails with ExitCode::store as if the connection had dropped.
  void lose_next_answer() { lose_answer_ = true; }
  // The `n`th statement or commit from now (1: the next one) meets
  // `fault`. A statement inside a transaction that fails takes the
  // transaction with it (its Transaction rolls back), as on a real
  // connection that broke.
  void fail_at(int n, Fault fault) {
    countdown_ = n;
    fault_ = fault;
  }
  // Once the next statement whose text contains `sql_part` has answered,
  // `meanwhile` runs (once), before the statement after it goes out: what
  // another connection commits between the two.
  void after_next(std::string sql_part, std::function<void()> meanwhile) {
    after_sql_ = std::move(sql_part);
    meanwhile_ = std::move(meanwhile);
  }
  // Statements and commits sent through this connection so far.
  int steps() const { return steps_; }

  store::Dialect dialect() const override { return inner_->dialect(); }
  store::Rows query(std::string_view sql, const store::Params& params) override;
  // A step of its own; its answer comes with the next statement's, so
  // after_next does not wait for it.
  void query_with_next(std::string_view sql, const store::Params& params,
                       const std::function<void(store::Rows&&)>& read) override;
  int64_t exec(std::string_view sql, const store::Params& params) override;
  void exec_script(std::string_view sql) override { inner_->exec_script(sql); }
  void begin(store::TxMode mode) override;
  void commit() override;
  void rollback() override;
  void notify(std::string_view channel, const std::string& payload) override { inner_->notify(channel, payload); }
  void plan_once(std::string_view table) override { inner_->plan_once(table); }
  std::string row_lock(std::string_view clause) const override { return inner_->row_lock(clause); }
  store::Value list(const std::vector<std::string>& items) const override { return inner_->list(items); }
  std::string in_list(std::string_view column, int n) const override { return inner_->in_list(column, n); }
  std::string batch(std::span<const store::BatchColumn> columns, int n, std::string_view alias) const override {
    return inner_->batch(columns, n, alias);
  }
  int64_t exec_batch(std::string_view sql, const store::Params& params, std::span<const store::BatchColumn> columns,
                     size_t rows, const store::BatchFill& fill, Send when) override;
  void shift_clock(int64_t us) override { inner_->shift_clock(us); }

 private:
  void answer_lost();
  // Runs after_next's `meanwhile` if `sql` is the statement it waits for.
  void after(std::string_view sql);
  // Counts a step; true when it is the one fail_at named.
  bool fault_due();
  template <class Step>
  auto step(Step&& run);

  std::unique_ptr<store::Connection> inner_;
  bool in_transaction_ = false;
  bool lose_answer_ = false;
  int steps_ = 0;
  int countdown_ = 0;
  Fault fault_ = Fault::refused;
  std::string after_sql_;
  std::function<void()> meanwhile_;
};

class TcpProxy {
 public:
  // Listens on 127.0.0.1 (a free port) and forwards to host:port.
  TcpProxy(std::string host, int port);
  ~TcpProxy();
  int port() const { return port_; }
  void freeze() { frozen_ = true; }
  void thaw() { frozen_ = false; }
  // Closes every connection it forwards (both ends), as a failover or a
  // killed backend leaves a client's; new ones are forwarded as before.
  void cut() { cuts_ += 1; }
  // The round trips forwarded so far: the times a client sent after its
  // server had answered (a connection's first send counts as one, and so
  // does a pipeline sent in several pieces with no answer between).
  int round_trips() const { return round_trips_; }

 private:
  void serve();

  std::string host_;
  int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  int stop_fd_ = -1;
  std::atomic<bool> frozen_{false};
  std::atomic<int> cuts_{0};
  std::atomic<int> round_trips_{0};
  std::thread thread_;
};

class StoreFreeze {
 public:
  explicit StoreFreeze(const TestDb& db);
  ~StoreFreeze();
  // The DSN programs must use for the freeze to reach them.
  const std::string& dsn() const { return dsn_; }
  void freeze();
  void thaw();
  // PostgreSQL: every connection through dsn() is closed (TcpProxy::cut).
  void cut() {
    if (proxy_) proxy_->cut();
  }
  // PostgreSQL: the round trips made through dsn() so far (TcpProxy's).
  int round_trips() const { return proxy_ ? proxy_->round_trips() : 0; }

 private:
  const TestDb& db_;
  std::string dsn_;
  std::unique_ptr<TcpProxy> proxy_;             // postgres
  std::unique_ptr<store::Connection> holder_;   // sqlite: holds the write lock
};

}  // namespace jobctl::test
