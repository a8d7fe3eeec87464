#include "common/exec/output_tail.hpp"

namespace jobctl::exec {

void OutputTail::append(std::string_view data) {
  total_ += data.size();
  if (capacity_ == 0) return;
  if (data.size() >= capacity_) {
    ring_.assign(data.substr(data.size() - capacity_));
    head_ = 0;
    return;
  }
  if (ring_.size() < capacity_) {
    size_t room = capacity_ - ring_.size();
    size_t n = std::min(room, data.size());
    ring_.append(data.substr(0, n));
    data.remove_prefix(n);
    head_ = 0;
  }
  while (!data.empty()) {
    size_t n = std::min(capacity_ - head_, data.size());
    ring_.replace(head_, n, data.substr(0, n));
    head_ = (head_ + n) % capacity_;
    data.remove_prefix(n);
  }
}

std::string OutputTail::str() const {
  if (ring_.size() < capacity_ || head_ == 0) return ring_;
  return ring_.substr(head_) + ring_.substr(0, head_);
}

}  // namespace jobctl::exec
