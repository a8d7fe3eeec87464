#include "agent/webhook_runner.hpp"

#include <strings.h>

#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/job_env.hpp"
#include "agent/libcurl.hpp"
#include "agent/signature.hpp"
#include "common/exec/output_tail.hpp"
#include "common/util/error.hpp"
#include "common/util/log.hpp"
#include "common/util/time.hpp"

namespace jobctl::agent {
namespace {

using std::chrono::microseconds;

// A webhook without --timeout still gets one: a request must end.
constexpr int64_t kDefaultTimeoutUs = 30'000'000;
constexpr int64_t kConnectTimeoutUs = 10'000'000;
// Longest Retry-After taken as given (a day); the retry policy caps it further.
constexpr int64_t kMaxRetryAfterUs = 86'400'000'000;

bool has_header(const model::Webhook& w, const char* name) {
  for (const auto& [k, v] : w.headers)
    if (strcasecmp(k.c_str(), name) == 0) return true;
  return false;
}

// The request's Content-Type when the job sets none: JSON when the body
// parses as JSON, else bytes.
const char* default_content_type(const std::string& body) {
  return nlohmann::json::accept(body) ? "application/json" : "application/octet-stream";
}

// Retry-After: delta-seconds or an HTTP date.
std::optional<int64_t> retry_after(CURL* easy) {
  curl_header* h = nullptr;
  if (libcurl().curl_easy_header(easy, "Retry-After", 0, CURLH_HEADER, -1, &h) != CURLHE_OK || !h) return std::nullopt;
  std::string v = h->value;
  if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos) {
    if (v.size() > 9) return kMaxRetryAfterUs;
    return std::min<int64_t>(kMaxRetryAfterUs, std::stoll(v) * 1000000);
  }
  time_t at = libcurl().curl_getdate(v.c_str(), nullptr);
  if (at < 0) return std::nullopt;
  int64_t in = (static_cast<int64_t>(at) - static_cast<int64_t>(std::time(nullptr))) * 1'000'000;
  return std::clamp<int64_t>(in, 0, kMaxRetryAfterUs);
}

model::HttpTimings timings_of(CURL* easy) {
  auto get = [easy](CURLINFO info) {
    curl_off_t v = 0;
    libcurl().curl_easy_getinfo(easy, info, &v);
    return static_cast<int64_t>(v);
  };
  return model::HttpTimings{get(CURLINFO_NAMELOOKUP_TIME_T), get(CURLINFO_CONNECT_TIME_T),
                            get(CURLINFO_APPCONNECT_TIME_T), get(CURLINFO_STARTTRANSFER_TIME_T),
                            get(CURLINFO_TOTAL_TIME_T)};
}

size_t on_body(char* data, size_t size, size_t n, void* tail) {
  static_cast<exec::OutputTail*>(tail)->append(std::string_view(data, size * n));
  return size * n;
}

}  // namespace

struct WebhookRunner::Transfer {
  store::ClaimedRun run;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string body;                  // the resolved body: libcurl reads it in place
  exec::OutputTail response{0};      // sized in start(), once the secrets it must outlast are known
  Secrets::Values secrets;           // used by this request: redacted from what is kept
  Clock::time_point started;
  int64_t timeout_us = 0;
  char error[CURL_ERROR_SIZE] = {};

};

WebhookRunner::WebhookRunner(const Options& opts, const Secrets& secrets) : opts_(opts), secrets_(secrets) {}

// On the first webhook: an agent that only runs commands never loads
// libcurl and its TLS stacks (agent/libcurl.hpp).
void WebhookRunner::open_multi() {
  multi_ = libcurl().curl_multi_init();
  if (!multi_) throw Error(ExitCode::internal, "curl_multi_init failed");
  libcurl().curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &WebhookRunner::on_socket);
  libcurl().curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  libcurl().curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &WebhookRunner::on_timer);
  libcurl().curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  // Keep an idle connection for every slot, so a steady stream of webhooks
  // to one endpoint never reconnects.
  libcurl().curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(std::max(opts_.concurrency, 8)));
}

WebhookRunner::~WebhookRunner() {
  if (!multi_) return;
  for (auto& [easy, t] : transfers_) {
    libcurl().curl_multi_remove_handle(multi_, easy);
    libcurl().curl_slist_free_all(t->headers);
    libcurl().curl_easy_cleanup(easy);
  }
  for (CURL* easy : idle_) libcurl().curl_easy_cleanup(easy);
  libcurl().curl_multi_cleanup(multi_);
}

int WebhookRunner::on_socket(CURL*, curl_socket_t fd, int what, void* self, void*) {
  auto* me = static_cast<WebhookRunner*>(self);
  if (what == CURL_POLL_REMOVE) me->sockets_.erase(fd);
  else me->sockets_[fd] = what;
  return 0;
}

int WebhookRunner::on_timer(CURLM*, long timeout_ms, void* self) {
  auto* me = static_cast<WebhookRunner*>(self);
  if (timeout_ms < 0) me->timer_.reset();
  else me->timer_ = Clock::now() + std::chrono::milliseconds(timeout_ms);
  return 0;
}

std::optional<std::string> WebhookRunner::start(const store::ClaimedRun& run) {
  if (!multi_) open_multi();
  const model::Webhook& w = *run.spec.command.webhook;
  auto t = std::make_unique<Transfer>();
  t->run = run;
  auto unresolved = [&](const std::string& name, const std::string& where) {
    return fmt::format("secret '{}' (referenced in the {}) is not set on this agent: set JOBAGENT_SECRET_{} in its "
                       "environment or add {} to its --secrets-file",
                       name, where, name, name);
  };
  auto url = secrets_.resolve(w.url, t->secrets);
  if (!url.missing.empty()) return unresolved(url.missing, "URL");
  if (w.body) {
    if (w.literal_body) {
      t->body = *w.body;
    } else {
      auto body = secrets_.resolve(*w.body, t->secrets);
      if (!body.missing.empty()) return unresolved(body.missing, "body");
      t->body = std::move(body.text);
    }
  }
  std::vector<std::string> lines;
  for (const auto& [name, value] : w.headers) {
    auto v = secrets_.resolve(value, t->secrets);
    if (!v.missing.empty()) return unresolved(v.missing, "header " + name);
    if (v.text.find_first_of("\r\n") != std::string::npos)
      return fmt::format("a secret in header {} holds a line break, which a header cannot carry", name);
    lines.push_back(name + ": " + v.text);
  }
  if (!w.sign_secret.empty()) {
    auto key = secrets_.get(w.sign_secret);
    if (!key) return unresolved(w.sign_secret, "--sign-secret");
    t->secrets[w.sign_secret] = *key;
    lines.push_back("X-Job-Signature: " + signature_value(*key, std::time(nullptr), t->body));
  }
  t->response = exec::OutputTail(opts_.output_limit + Secrets::longest(t->secrets));
  lines.push_back("Idempotency-Key: " + idempotency_key(run));
  lines.push_back("X-Job-Id: " + run.job_id);
  lines.push_back("X-Job-Run-Id: " + run.run_id);
  lines.push_back("X-Job-Attempt: " + std::to_string(run.attempt));
  lines.push_back("X-Job-Fence-Token: " + std::to_string(run.fence));
  lines.push_back("X-Job-Scheduled-At: " + util::format_time(run.occurrence.value_or(run.available_at)));
  if (!has_header(w, "Content-Type"))  // no body: no type (libcurl would claim a form)
    lines.push_back(w.body ? std::string("Content-Type: ") + default_content_type(t->body) : "Content-Type:");
  lines.push_back("Expect:");  // no 100-continue round trip before the body
  for (const auto& line : lines) t->headers = libcurl().curl_slist_append(t->headers, line.c_str());

  CURL* easy = nullptr;
  if (!idle_.empty()) {
    easy = idle_.back();
    idle_.pop_back();
  } else if (!(easy = libcurl().curl_easy_init())) {
    libcurl().curl_slist_free_all(t->headers);
    throw Error(ExitCode::internal, "curl_easy_init failed");
  }
  t->easy = easy;
  t->timeout_us = run.spec.timeout_us > 0 ? run.spec.timeout_us : kDefaultTimeoutUs;
  libcurl().curl_easy_setopt(easy, CURLOPT_URL, url.text.c_str());
  libcurl().curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  libcurl().curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  libcurl().curl_easy_setopt(easy, CURLOPT_PRIVATE, t.get());
  libcurl().curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t->error);
  libcurl().curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &on_body);
  libcurl().curl_easy_setopt(easy, CURLOPT_WRITEDATA, &t->response);
  libcurl().curl_easy_setopt(easy, CURLOPT_HTTPHEADER, t->headers);
  libcurl().curl_easy_setopt(easy, CURLOPT_USERAGENT, "jobagent/" JOBCTL_VERSION);
  // Whole milliseconds, rounded up: 0 is libcurl's "no limit", and a
  // --timeout under 1ms left the request running for ever (a tester).
  auto ms = [](int64_t us) { return static_cast<long>((us + 999) / 1000); };
  libcurl().curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, ms(t->timeout_us));
  libcurl().curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, ms(std::min(t->timeout_us, kConnectTimeoutUs)));
  libcurl().curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, w.insecure ? 0L : 1L);
  libcurl().curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, w.insecure ? 0L : 2L);
  if (w.method == "HEAD") {
    libcurl().curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
  } else if (w.method == "GET" && !w.body) {
    libcurl().curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
  } else {
    libcurl().curl_easy_setopt(easy, CURLOPT_POSTFIELDS, t->body.data());
    libcurl().curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
    if (w.method != "POST") libcurl().curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, w.method.c_str());
  }
  if (w.insecure)
    util::log_event(util::LogLevel::warn, "tls_not_verified",
                    {{"run_id", run.run_id}, {"job_id", run.job_id}, {"why", "the job was submitted with --insecure"}});
  t->started = Clock::now();
  if (CURLMcode rc = libcurl().curl_multi_add_handle(multi_, easy); rc != CURLM_OK) {
    libcurl().curl_slist_free_all(t->headers);
    libcurl().curl_easy_reset(easy);
    idle_.push_back(easy);
    throw Error(ExitCode::internal, fmt::format("curl_multi_add_handle: {}", libcurl().curl_multi_strerror(rc)));
  }
  transfers_.emplace(easy, std::move(t));
  return std::nullopt;
}

void WebhookRunner::poll_fds(std::vector<pollfd>& fds) {
  fds_from_ = fds.size();
  for (const auto& [fd, what] : sockets_) {
    short events = 0;
    if (what & CURL_POLL_IN) events |= POLLIN;
    if (what & CURL_POLL_OUT) events |= POLLOUT;
    fds.push_back({fd, events, 0});
  }
  fds_count_ = fds.size() - fds_from_;
}

void WebhookRunner::handle_events(const std::vector<pollfd>& fds) {
  if (!multi_) return;
  int running = 0;
  for (size_t i = fds_from_; i < fds_from_ + fds_count_ && i < fds.size(); ++i) {
    const pollfd& p = fds[i];
    if (!p.revents) continue;
    int flags = 0;
    if (p.revents & (POLLIN | POLLHUP)) flags |= CURL_CSELECT_IN;
    if (p.revents & POLLOUT) flags |= CURL_CSELECT_OUT;
    if (p.revents & (POLLERR | POLLNVAL)) flags |= CURL_CSELECT_ERR;
    libcurl().curl_multi_socket_action(multi_, p.fd, flags, &running);
  }
  fds_count_ = 0;
  check_done();
}

void WebhookRunner::handle_timeout(Clock::time_point now) {
  if (!multi_ || !timer_ || now < *timer_) return;
  timer_.reset();
  int running = 0;
  libcurl().curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
  check_done();
}

void WebhookRunner::check_done() {
  int left = 0;
  while (CURLMsg* m = libcurl().curl_multi_info_read(multi_, &left))
    if (m->msg == CURLMSG_DONE) finish(m->easy_handle, m->data.result, Ending::none);
}

void WebhookRunner::finish(CURL* easy, CURLcode code, Ending ending) {
  auto it = transfers_.find(easy);
  if (it == transfers_.end()) return;
  Transfer& t = *it->second;
  HttpResult h;
  h.curl_code = static_cast<int>(code);
  h.timeout_us = t.timeout_us;
  h.timings = timings_of(easy);
  if (ending == Ending::none && code == CURLE_OK) {
    long status = 0;
    libcurl().curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    h.status = static_cast<int>(status);
    h.retry_after_us = retry_after(easy);
  } else if (ending == Ending::none) {
    std::string why = t.error[0] ? t.error : libcurl().curl_easy_strerror(code);
    h.error = Secrets::redact(why, t.secrets);
  }
  // The tail was kept a secret's length longer than the limit: what a cut
  // value left at its start is dropped, then the limit applies.
  std::string body = t.response.str();
  auto cut = t.response.total() > body.size() ? Secrets::Cut::yes : Secrets::Cut::no;
  // The bytes before the kept tail, counted as received; the tail as shown
  // (redacted): together, what readers take as the body's length.
  size_t before = t.response.total() - body.size();
  body = Secrets::redact(std::move(body), t.secrets, cut);
  if (body.size() > opts_.output_limit) {
    before += body.size() - opts_.output_limit;
    body.erase(0, body.size() - opts_.output_limit);
  }
  const auto bytes = static_cast<int64_t>(before + body.size());
  done_.push_back(Finished{std::move(t.run), ending, 0, std::move(body), "", Clock::now() - t.started, std::move(h),
                           bytes, 0});
  libcurl().curl_multi_remove_handle(multi_, easy);
  libcurl().curl_slist_free_all(t.headers);
  transfers_.erase(it);
  libcurl().curl_easy_reset(easy);
  idle_.push_back(easy);
}

std::vector<Finished> WebhookRunner::collect() { return std::exchange(done_, {}); }

WebhookRunner::Transfer* WebhookRunner::find(const std::string& run_id) const {
  for (const auto& [easy, t] : transfers_)
    if (t->run.run_id == run_id) return t.get();
  return nullptr;
}

void WebhookRunner::stop(const std::string& run_id, Ending why) {
  if (Transfer* t = find(run_id)) finish(t->easy, CURLE_ABORTED_BY_CALLBACK, why);
}

void WebhookRunner::stop_all(Ending why) {
  std::vector<CURL*> all;
  for (const auto& [easy, t] : transfers_) all.push_back(easy);
  for (CURL* easy : all) finish(easy, CURLE_ABORTED_BY_CALLBACK, why);
}

std::string WebhookRunner::job_of(const std::string& run_id) const {
  const Transfer* t = find(run_id);
  return t ? t->run.job_id : std::string();
}

std::vector<std::string> WebhookRunner::run_ids() const {
  std::vector<std::string> ids;
  for (const auto& [easy, t] : transfers_) ids.push_back(t->run.run_id);
  return ids;
}

}  // namespace jobctl::agent
