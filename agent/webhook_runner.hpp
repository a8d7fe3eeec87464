#pragma once
// The webhook executor: the HTTP requests this agent has in flight, all on
// one libcurl multi handle driven by the agent's own poll loop through
// libcurl's socket interface (it names the sockets to watch and its next
// timeout; we tell it which became ready). No thread per request: a
// thousand slow webhooks cost a thousand sockets and nothing else.
// Connections are kept and reused across jobs by the multi handle, and the
// agent's --concurrency bounds the transfers in flight.
//
// Single-threaded like Runner: the agent calls in from its loop.
#include <curl/curl.h>
#include <poll.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/options.hpp"
#include "agent/runner.hpp"
#include "agent/secrets.hpp"
#include "common/store/agent.hpp"

namespace jobctl::agent {

class WebhookRunner {
 public:
  // `secrets` is read at each start(): the agent may reload it (SIGHUP).
  WebhookRunner(const Options& opts, const Secrets& secrets);
  ~WebhookRunner();  // aborts whatever is in flight
  WebhookRunner(const WebhookRunner&) = delete;
  WebhookRunner& operator=(const WebhookRunner&) = delete;

  // Sends the run's request. Returns why when it cannot be sent at all (a
  // secret it references is not set on this agent): a permanent failure,
  // and the run is then not tracked.
  std::optional<std::string> start(const store::ClaimedRun& run);

  // The sockets libcurl wants watched, appended to `fds`; handle_events()
  // takes the same vector back after poll().
  void poll_fds(std::vector<pollfd>& fds);
  void handle_events(const std::vector<pollfd>& fds);
  // Runs libcurl's timeouts (connect and request limits, retries of its own
  // state machine) when due.
  void handle_timeout(Clock::time_point now);
  // Requests that ended since the last call.
  std::vector<Finished> collect();

  // Aborts the run's request at once (there is no graceful end to an HTTP
  // exchange): it is reported with `why`.
  void stop(const std::string& run_id, Ending why);
  void stop_all(Ending why);
  // When handle_timeout() next has work.
  std::optional<Clock::time_point> next_deadline() const { return timer_; }

  size_t size() const { return transfers_.size(); }
  std::string job_of(const std::string& run_id) const;  // "" when not in flight
  std::vector<std::string> run_ids() const;

 private:
  struct Transfer;

  void open_multi();
  void check_done();
  void finish(CURL* easy, CURLcode code, Ending ending);
  Transfer* find(const std::string& run_id) const;
  static int on_socket(CURL* easy, curl_socket_t fd, int what, void* self, void* socketp);
  static int on_timer(CURLM* multi, long timeout_ms, void* self);

  const Options& opts_;
  const Secrets& secrets_;
  CURLM* multi_ = nullptr;
  std::map<CURL*, std::unique_ptr<Transfer>> transfers_;
  std::vector<CURL*> idle_;                                // easy handles kept for reuse
  std::vector<Finished> done_;
  std::map<curl_socket_t, int> sockets_;                   // socket → CURL_POLL_* wanted
  std::optional<Clock::time_point> timer_;
  size_t fds_from_ = 0, fds_count_ = 0;                    // our part of the last poll_fds() vector
};

}  // namespace jobctl::agent
