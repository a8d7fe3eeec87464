#pragma once
// Keeps the last `capacity` bytes written to it: a job may print gigabytes,
// the agent holds at most this much per stream.
#include <string>
#include <string_view>

namespace jobctl::exec {

class OutputTail {
 public:
  explicit OutputTail(size_t capacity) : capacity_(capacity) {}

  void append(std::string_view data);
  // The kept bytes, oldest first.
  std::string str() const;
  // Total bytes ever appended (to tell the user how much was cut).
  size_t total() const { return total_; }

 private:
  size_t capacity_;
  std::string ring_;   // grows to capacity_, then wraps at head_
  size_t head_ = 0;    // next write position once full
  size_t total_ = 0;
};

}  // namespace jobctl::exec
