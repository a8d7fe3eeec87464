#pragma once
// A whole request's read, bounded. cpp-httplib bounds each wait for bytes
// (set_read_timeout), not the request: a client sending a byte now and
// then held a worker thread for as long as it liked, and --threads of them
// held the server (slowloris). The request being read on this thread gets
// a deadline; past it, the thread's next wait for the socket (cpp-httplib
// waits in poll(2) before each read and write, TLS included) fails at once
// (ETIMEDOUT) and cpp-httplib closes the connection. poll, and read for
// OpenSSL's reads of a TLS record, are interposed for this, in this
// program only: a thread with no deadline set (every thread but a worker
// reading a request; libpq's waits in a handler) calls them as it always did.
#include <chrono>

namespace jobctl::server {

// This thread reads a request from now on, for `budget` at most.
void start_reading(std::chrono::steady_clock::duration budget);
// The request is read (its handler runs, or it is refused): no deadline.
void done_reading();
// Whether this thread's last request ran out of its budget: its
// connection is then closed after the answer (400), not kept alive for
// another slow request.
bool reading_expired();
// The server stops: from now on a worker's wait for a request that has
// not begun, finding no byte ready, ends the connection at once (a request
// under way is read to its end). cpp-httplib waits out the
// keep-alive timeout of every idle connection before it stops (a browser
// keeps one open), and each such wait held SIGTERM back.
void stop_waiting();

}  // namespace jobctl::server
