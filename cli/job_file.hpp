#pragma once
// A `submit --file` batch: one JSON job a line, read in parts of
// consecutive lines by a thread of its own while the store writes the
// parts before (store::JobParts), so that reading a large batch overlaps
// writing it.
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/model/job.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"

namespace jobctl::cli {

// Whether a batch may hold schedules (lines with cron). Under submit
// --wait it may not, as --cron excludes --wait: a schedule's first run
// waits for its first occurrence, which the wait would wait for.
enum class Schedules { allowed, refused };

class JobFile final : public store::JobParts {
 public:
  // Reads `path` ("-": standard input) and starts reading its jobs. Throws
  // a usage error when it cannot be read or holds no job. A schedule refused
  // is a line that is not a job, reported as one by next().
  explicit JobFile(const std::string& path, Schedules schedules = Schedules::allowed);
  JobFile(const JobFile&) = delete;
  JobFile& operator=(const JobFile&) = delete;

  // The next part's jobs once read; throws a usage error naming the line
  // when one of the part's lines is not a job ("nothing was submitted").
  std::span<const model::JobSpec> next() override;
  void rewind() override { next_part_ = 0; }
  // Waits for every line to be read, and throws the file's first error if
  // it has one: what is wrong with the input is reported before what else
  // stopped the submit (the store being down, say), as when every line was
  // read first.
  void check_all_read();
  // The file's job number `index` (from 0), once its part is read.
  const model::JobSpec& job(size_t index) const;
  // The store's refusal of one of the file's jobs, naming its line, as a
  // line that is not a job is named.
  Error refused(const store::JobRefused& e) const;

 private:
  struct Part {
    std::string_view text;
    size_t first_line = 1;  // among all the file's lines, from 1
    size_t first_job = 0;   // among all its jobs, from 0
    size_t jobs = 0;
    std::vector<model::JobSpec> specs;
    std::exception_ptr error;
  };

  const Part& part_of(size_t job) const;  // the part holding the file's job number `job`
  void read_parts(const std::stop_token& stop = {});  // in order, until one fails or the file is dropped
  void read_part(Part& part);
  // Whether part `index` has been read, or one before it has failed.
  bool ready(size_t index) const { return read_ > index || failed_; }

  std::string text_;
  Schedules schedules_;
  std::vector<Part> parts_;
  size_t next_part_ = 0;
  std::mutex mutex_;
  std::condition_variable read_more_;
  size_t read_ = 0;      // the parts read, in order (mutex_)
  bool failed_ = false;  // one of them failed: no more are read (mutex_)
  std::jthread reader_;   // last: stopped and joined first, when the submit is over
};

}  // namespace jobctl::cli
