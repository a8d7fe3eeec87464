#include "cli/job_file.hpp"

#include <algorithm>
#include <system_error>

#include <fmt/format.h>

#include "cli/read_input.hpp"
#include "common/jobdef/fields.hpp"
#include "common/jobdef/job_input.hpp"
#include "common/util/error.hpp"
#include "common/util/json_input.hpp"

namespace jobctl::cli {
namespace {

// Calls `each(n, line)` for every non-blank line of `text`, numbered from
// `first` among all the file's lines, until `each` returns false.
template <class Each>
void for_each_job_line(std::string_view text, size_t first, Each&& each) {
  size_t n = first - 1;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line(text.data() + at, end - at);
    at = end + 1;
    ++n;
    if (line.find_first_not_of(" \t\r") != std::string_view::npos && !each(n, line)) return;
  }
}

// A part's job lines: as many as one store statement writes (a
// PostgreSQL batch binds 5,000 rows), and the first part fewer, so that
// writing starts soon. A line takes about 2 µs to read, and its job
// 7-9 µs to write on PostgreSQL: one thread reads ahead of the store.
constexpr size_t kFirstPartJobs = 1000;
constexpr size_t kPartJobs = 5000;

}  // namespace

JobFile::JobFile(const std::string& path, Schedules schedules)
    : text_(read_input(path, "--file", kBatchLimit)), schedules_(schedules) {
  const char* start = text_.data();
  size_t jobs = 0;
  parts_.emplace_back();
  for_each_job_line(text_, 1, [&](size_t n, std::string_view line) {
    Part& last = parts_.back();
    if (last.jobs == (parts_.size() == 1 ? kFirstPartJobs : kPartJobs)) {  // it is full
      last.text = std::string_view(start, static_cast<size_t>(line.data() - start));
      start = line.data();
      parts_.push_back({{}, n, jobs, 0, {}, {}});
    }
    ++parts_.back().jobs;
    ++jobs;
    return true;
  });
  if (jobs == 0)
    throw usage_error(fmt::format("--file '{}' holds no jobs", path),
                      "write one JSON job per line, e.g. {\"command\": [\"make\", \"test\"]}");
  parts_.back().text = std::string_view(start, static_cast<size_t>(text_.data() + text_.size() - start));
  if (parts_.size() == 1) {  // no thread to wait for
    read_parts();
    return;
  }
  try {
    reader_ = std::jthread([this](const std::stop_token& stop) { read_parts(stop); });
  } catch (const std::system_error&) {  // no thread to be had: read it all now
    read_parts();
  }
}

void JobFile::read_parts(const std::stop_token& stop) {
  for (size_t i = 0; i < parts_.size() && !stop.stop_requested(); ++i) {
    read_part(parts_[i]);
    std::lock_guard lock(mutex_);
    read_ = i + 1;
    failed_ = parts_[i].error != nullptr;
    read_more_.notify_all();
    if (failed_) return;
  }
}

void JobFile::read_part(Part& part) {
  try {
    // A JobSpec is a kilobyte: a vector grown by doubling would move them
    // all about twice over, page faults and all.
    part.specs.reserve(part.jobs);
    for_each_job_line(part.text, part.first_line, [&](size_t n, std::string_view line) {
      try {
        part.specs.push_back(jobdef::job_spec_from_json(util::parse_json_input(line, "the job", "")));
        // Refused as it is read, as a line that is not a job: the batch's
        // transaction ends before anything of it is committed.
        if (schedules_ == Schedules::refused && part.specs.back().schedule)
          throw usage_error("--wait cannot wait for a schedule (field 'cron'): its runs start at its occurrences",
                            "submit schedules without --wait");
      } catch (const Error& e) {
        throw jobdef::refused_in_batch(e, fmt::format("line {}", n));
      }
      return true;
    });
  } catch (...) {
    part.error = std::current_exception();
  }
}

std::span<const model::JobSpec> JobFile::next() {
  if (next_part_ == parts_.size()) return {};
  {
    std::unique_lock lock(mutex_);
    read_more_.wait(lock, [&] { return ready(next_part_); });
  }
  const Part& part = parts_[next_part_];
  if (part.error) std::rethrow_exception(part.error);
  ++next_part_;
  return part.specs;
}

void JobFile::check_all_read() {
  {
    std::unique_lock lock(mutex_);
    read_more_.wait(lock, [&] { return ready(parts_.size() - 1); });
  }
  for (const auto& part : parts_)
    if (part.error) std::rethrow_exception(part.error);
}

const JobFile::Part& JobFile::part_of(size_t job) const {
  auto after = std::upper_bound(parts_.begin(), parts_.end(), job, [](size_t i, const Part& p) { return i < p.first_job; });
  return *(after - 1);
}

const model::JobSpec& JobFile::job(size_t index) const {
  const Part& part = part_of(index);
  return part.specs.at(index - part.first_job);
}

Error JobFile::refused(const store::JobRefused& e) const {
  const Part& part = part_of(e.index());
  size_t line = 0, jobs = part.first_job;
  for_each_job_line(part.text, part.first_line, [&](size_t n, std::string_view) {
    line = n;
    return jobs++ < e.index();
  });
  // A line names its fields by their keys.
  return jobdef::refused_in_batch(jobdef::in_line_terms(e), fmt::format("line {}", line));
}

}  // namespace jobctl::cli
