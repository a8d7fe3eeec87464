#pragma once
// Load on jobctl serve's POST /api/v1/jobs from many keep-alive clients, for
// scripts/bench: as fast as answers come (throughput), or on a fixed
// schedule (latency at a given rate); and the client that posts the
// serve-latency figure's jobs one at a time.
#include <string>

#include <httplib.h>

#include "bench/measure.hpp"

namespace jobctl::bench {

// A keep-alive client of jobctl serve at URL (http://HOST:PORT) with a
// bearer token.
httplib::Client serve_client(const std::string& url, const std::string& token);

// POST /api/v1/jobs of one job (JSON); throws unless it is answered 201.
void post_job(httplib::Client& c, const std::string& job);

// serve URL TOKEN CLIENTS N: prints requests, seconds, jobs_per_s, p50_ms,
// p99_ms, errors.
void serve_closed_loop(const Args& args);

// serve-paced URL TOKEN CLIENTS RATE SECONDS: prints requests, rate,
// p50_ms, p99_ms, max_ms, errors; each latency from the request's planned
// send time, so a stall counts for every request it delays.
void serve_paced(const Args& args);

}  // namespace jobctl::bench
