// GET /jobs/{id}/logs/follow: a run's output as it comes, as server-sent
// events, from the same follower as jobctl logs -f (common/ops/run_output).
//
//   event: output   data: {"run", "agent"?, "attempt", "stream": "stdout"|"stderr", "text"}
//   event: gap      data: {"run", "agent"?, "attempt", "stream", "bytes"}: not kept in the store
//   event: attempt  data: {"run", "agent"?, "attempt", "after"}: a retry began
//   event: end      data: the run, as in `jobctl get -o json`'s "run"
//   event: error    data: {"detail", "exit_code"}: the store failed; the stream ends
//
// Following one run, each event's id is where it leaves off
// (ATTEMPT.STDOUT_BYTES.STDERR_BYTES): a client reconnecting with
// Last-Event-ID goes on from there. The stream holds one of the server's
// worker threads, and a store connection of its own, until the run ends
// or the client goes.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "common/model/job_json.hpp"
#include "common/ops/run_output.hpp"
#include "common/util/error.hpp"
#include "common/util/log.hpp"
#include "common/util/utf8.hpp"
#include "server/handlers.hpp"

namespace jobctl::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Output is shipped every 500 ms at most: reading more often only costs.
constexpr auto kPoll = std::chrono::milliseconds(250);
// A comment now and then keeps proxies from closing a quiet stream.
constexpr auto kKeepAlive = std::chrono::seconds(15);

std::string event_id(const ops::OutputPosition& p) { return fmt::format("{}.{}.{}", p.attempt, p.out, p.err); }

std::optional<ops::OutputPosition> parse_event_id(const std::string& text) {
  int64_t fields[3] = {0, 0, 0};
  const char* at = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    if (i > 0 && (at == end || *at++ != '.')) return std::nullopt;
    auto [next, ec] = std::from_chars(at, end, fields[i]);
    if (ec != std::errc() || fields[i] < 0) return std::nullopt;
    at = next;
  }
  if (at != end || fields[0] > 1'000'000) return std::nullopt;
  return ops::OutputPosition{static_cast<int>(fields[0]), fields[1], fields[2]};
}

struct Followed {
  ops::FollowedRun run;
  ops::RunOutput output;
  // The start of a UTF-8 character whose rest has not come yet, per
  // stream (stdout, stderr): held back, so that an event's text is never
  // a character cut in two (each half became U+FFFD).
  std::string held[2];
};

// Streams open now, and how many may be: each holds a worker thread, and
// the others must be left to answer.
std::atomic<int> g_streams{0};
std::atomic<int> g_most_streams{4};

struct LogStream {
  // Made only with a slot taken (take_stream_slot), which it gives back.
  LogStream() = default;
  ~LogStream() { --g_streams; }
  LogStream(const LogStream&) = delete;
  LogStream& operator=(const LogStream&) = delete;
  config::Dsn dsn;
  std::vector<Followed> runs;
  std::unique_ptr<store::Store> store;  // its own, opened on the first look
  Clock::time_point last_write = Clock::now();
  bool first = true;
};

std::string event(const char* name, const json& data, const std::string& id) {
  std::string out = id.empty() ? "" : "id: " + id + "\n";
  return out + fmt::format("event: {}\ndata: {}\n\n", name, data.dump(-1, ' ', false, json::error_handler_t::replace));
}

// An output event of `text` on `stream`; `at` is where the client is once
// it has it: its id.
std::string output_event(const Followed& f, int attempt, ops::Stream stream, const std::string& text,
                         ops::OutputPosition& at, bool with_id) {
  (stream == ops::Stream::out ? at.out : at.err) += static_cast<int64_t>(text.size());
  json data{{"run", f.run.run_id}, {"attempt", attempt}};
  if (!f.run.agent.empty()) data["agent"] = f.run.agent;
  data["stream"] = stream == ops::Stream::out ? "stdout" : "stderr";
  data["text"] = text;
  return event("output", data, with_id ? event_id(at) : "");
}

// What `stream` held back goes out as it is: what was to complete it is
// gone (a gap), or belongs to no more output (a new attempt, the end).
std::string let_go(Followed& f, int attempt, ops::Stream stream, ops::OutputPosition& at, bool with_id) {
  std::string& held = f.held[stream == ops::Stream::out ? 0 : 1];
  if (held.empty()) return "";
  std::string out = output_event(f, attempt, stream, held, at, with_id);
  held.clear();
  return out;
}

// `at` is where the client is once it has this event: its id.
std::string render(const ops::OutputEvent& e, Followed& f, ops::OutputPosition& at, bool with_id) {
  if (e.kind == ops::OutputEvent::Kind::output) {
    std::string& held = f.held[e.stream == ops::Stream::out ? 0 : 1];
    std::string text = held + e.data;
    const size_t cut = util::incomplete_utf8_tail(text);
    held = text.substr(text.size() - cut);
    text.resize(text.size() - cut);
    return text.empty() ? "" : output_event(f, e.attempt, e.stream, text, at, with_id);
  }
  std::string out;
  if (e.kind == ops::OutputEvent::Kind::gap) {
    out = let_go(f, e.attempt, e.stream, at, with_id);
  } else {
    out = let_go(f, at.attempt, ops::Stream::out, at, with_id);
    out += let_go(f, at.attempt, ops::Stream::err, at, with_id);
  }
  json data{{"run", f.run.run_id}, {"attempt", e.attempt}};
  if (!f.run.agent.empty()) data["agent"] = f.run.agent;
  if (e.kind == ops::OutputEvent::Kind::attempt) at = ops::OutputPosition{e.attempt, 0, 0};
  if (e.kind == ops::OutputEvent::Kind::gap) (e.stream == ops::Stream::out ? at.out : at.err) += e.bytes;
  if (e.kind == ops::OutputEvent::Kind::end) at = f.output.position();
  const std::string id = with_id ? event_id(at) : "";
  switch (e.kind) {
    case ops::OutputEvent::Kind::gap:
      data["stream"] = e.stream == ops::Stream::out ? "stdout" : "stderr";
      data["bytes"] = e.bytes;
      return out + event("gap", data, id);
    case ops::OutputEvent::Kind::attempt:
      data["after"] = e.after;
      return out + event("attempt", data, id);
    case ops::OutputEvent::Kind::output:
    case ops::OutputEvent::Kind::end:
      break;
  }
  return out + event("end", model::to_json(*f.output.run()), id);
}

// One look at every run: writes what is new; done() once all have ended.
bool look(LogStream& s, httplib::DataSink& sink) {
  if (!s.first) std::this_thread::sleep_for(kPoll);
  s.first = false;
  // A client gone ends the stream now: its slot was held until the next
  // keep-alive comment failed to go out (15 s), and reconnecting
  // EventSources met 503s meanwhile.
  if (!sink.is_writable()) return false;
  std::string chunk;
  bool ended = true;
  try {
    store::forget_if_replaced(s.store);
    if (!s.store) s.store = store::Store::open(s.dsn, store::Create::no);
    for (auto& f : s.runs) {
      // One run: each event's id is where a client that has it stands.
      auto at = f.output.position();
      if (at.attempt == 0) at.attempt = 1;  // the first attempt begins without an attempt event
      at.out -= static_cast<int64_t>(f.held[0].size());  // read, not yet given
      at.err -= static_cast<int64_t>(f.held[1].size());
      for (const auto& e : f.output.poll(*s.store)) chunk += render(e, f, at, s.runs.size() == 1);
      ended = ended && f.output.ended();
    }
  } catch (const Error& e) {
    if (e.code() == ExitCode::store) s.store.reset();
    chunk += event("error", json{{"detail", e.what()}, {"exit_code", static_cast<int>(e.code())}}, "");
    ended = true;
  } catch (const std::exception& e) {
    // A bug: said in the server's log, the stream ended (an exception out
    // of a content provider would end the process).
    s.store.reset();
    util::log_event(util::LogLevel::error, "internal_error", {{"path", "logs/follow"}, {"error", e.what()}});
    chunk += event("error", json{{"detail", "internal error (a bug): the server's log has the details"}, {"exit_code", 70}}, "");
    ended = true;
  }
  if (chunk.empty() && Clock::now() - s.last_write >= kKeepAlive) chunk = ": keep-alive\n\n";
  if (!chunk.empty()) {
    if (!sink.write(chunk.data(), chunk.size())) return false;
    s.last_write = Clock::now();
  }
  if (ended) sink.done();
  return true;
}

}  // namespace

// A server of one thread streams nothing: its stream would hold the only
// worker, and every other request would wait for it.
void limit_log_streams(int most) { g_most_streams = std::max(0, most); }

Reply follow_job_logs(Call& c) {
  // Errors (no such job, no run yet) are answered as problems, before the stream starts.
  auto runs = ops::runs_to_follow(c.store, c.path_param(1));
  ops::OutputPosition from;
  if (runs.size() == 1 && c.request.has_header("Last-Event-ID")) {
    auto resumed = parse_event_id(c.request.get_header_value("Last-Event-ID"));
    if (!resumed)
      throw usage_error("the Last-Event-ID header is not an id this stream gave",
                        "ids are ATTEMPT.STDOUT_BYTES.STDERR_BYTES; leave it out to start from the beginning");
    from = *resumed;
  }
  // The slot is taken and counted at once: a test then count let two
  // requests at the same moment both pass.
  if (++g_streams > g_most_streams) {
    const int open = --g_streams;
    throw Error(ExitCode::store, fmt::format("{} output streams are open, as many as this server allows", open),
                "try again later, or start jobctl serve with more --threads (half of them may stream)");
  }
  auto stream = std::make_shared<LogStream>();
  stream->dsn = c.dsn;
  for (auto& r : runs) stream->runs.push_back(
        Followed{r, ops::RunOutput(r.run_id, runs.size() == 1 ? from : ops::OutputPosition{}), {}});
  Reply reply;
  reply.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
  reply.stream_type = "text/event-stream";
  reply.stream = [stream](size_t, httplib::DataSink& sink) { return look(*stream, sink); };
  return reply;
}

}  // namespace jobctl::server
