// jobctl submit: one job from flags, or a batch from JSON lines.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <functional>
#include <iterator>
#include <new>
#include <system_error>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/complete.hpp"
#include "cli/context.hpp"
#include "cli/job_flags.hpp"
#include "cli/output.hpp"
#include "cli/read_input.hpp"
#include "cli/waiting.hpp"
#include "common/jobdef/fields.hpp"
#include "common/jobdef/job_input.hpp"
#include "common/ops/job_actions.hpp"
#include "common/store/jobs.hpp"
#include "common/util/error.hpp"
#include "common/util/json_input.hpp"
#include "common/util/time.hpp"

namespace jobctl::cli {
namespace {

struct SubmitFlags {
  std::vector<std::string> command;
  std::string file;
  bool wait = false;
  std::unique_ptr<JobFlags> job;
};

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

// Room for `n` more jobs, if it can be had: a JobSpec is a kilobyte, and a
// vector grown by doubling moved 100,000 of them about twice over, page
// faults and all (a quarter of jobctl's CPU in `submit --file` of that
// many). The room is a hint only: what cannot be had is grown into, and a
// file of junk fails at its first line, not for want of room.
void make_room(std::vector<model::JobSpec>& specs, size_t n) {
  try {
    specs.reserve(specs.size() + n);
  } catch (const std::bad_alloc&) {
  }
}

// A run of whole lines of a --file: its text, the number of its first line
// among all the file's lines, and how many job lines it holds.
struct Part {
  std::string_view text;
  size_t first_line = 1;
  size_t jobs = 0;
};

// The fewest job lines worth a thread of their own: about 5 ms of reading
// (a line takes about 2 µs), against a tenth of a millisecond to start one.
constexpr size_t kMinLinesPerPart = 2500;

// `text` (holding `jobs` job lines) cut into runs of consecutive lines, as
// many as there are cores while each gets kMinLinesPerPart, with about as
// many job lines each.
std::vector<Part> parts_of(std::string_view text, size_t jobs) {
  const size_t cores = std::max(1U, std::thread::hardware_concurrency());
  const size_t count = std::clamp<size_t>(jobs / kMinLinesPerPart, 1, cores);
  if (count == 1) return {{text, 1, jobs}};
  std::vector<Part> parts(1);
  const char* start = text.data();
  size_t seen = 0;
  for_each_job_line(text, 1, [&](size_t n, std::string_view line) {
    ++seen;
    ++parts.back().jobs;
    if (parts.size() < count && seen == jobs * parts.size() / count) {  // the part ends with this line
      const char* end = std::min(line.data() + line.size() + 1, text.data() + text.size());
      parts.back().text = std::string_view(start, static_cast<size_t>(end - start));
      start = end;
      parts.push_back({{}, n + 1, 0});
    }
    return true;
  });
  parts.back().text = std::string_view(start, static_cast<size_t>(text.data() + text.size() - start));
  return parts;
}

// What the threads reading a --file share: each part's error, and the
// first part that failed (parts.size() while none has). A part after it
// stops: the error reported is the file's first, as a read in order gives.
struct PartsRead {
  explicit PartsRead(size_t parts) : failed(parts), first_failed(parts) {}
  std::vector<std::exception_ptr> failed;
  std::atomic<size_t> first_failed;
};

// Part `index`'s jobs, appended to `specs`, until its first line that is
// not a job, or until an earlier part has failed.
void read_part(const Part& part, size_t index, std::vector<model::JobSpec>& specs, PartsRead& read) {
  try {
    for_each_job_line(part.text, part.first_line, [&](size_t n, std::string_view line) {
      if (read.first_failed.load(std::memory_order_relaxed) < index) return false;
      try {
        specs.push_back(jobdef::job_spec_from_json(util::parse_json_input(line, "the job", "")));
      } catch (const Error& e) {
        throw usage_error(fmt::format("line {}: {}", n, e.what()),
                          e.hint().empty() ? "nothing was submitted" : e.hint() + "; nothing was submitted");
      }
      return true;
    });
  } catch (...) {
    read.failed[index] = std::current_exception();
    size_t first = read.first_failed.load();
    while (index < first && !read.first_failed.compare_exchange_weak(first, index)) {
    }
  }
}

// A --file's jobs, in line order. A batch file's parse is the part of
// `submit --file` with nothing else to do (a tenth of its wall time for
// 100,000 jobs on PostgreSQL, before the first statement goes out), so a
// large one is read in parts side by side, one thread a part. The first
// part is read into the result, the others into vectors of their own,
// moved after it once all are read. While they move, the jobs of all but
// the first part are held twice: with two parts the parse's peak is half as
// high again as one thread's, though not the submit's, whose writing of the
// jobs needs as much (157 and 160 MB for 100,000 jobs).
std::vector<model::JobSpec> specs_from_file(const std::string& path) {
  const std::string text = read_input(path, "--file");
  size_t jobs = 0;
  for_each_job_line(text, 1, [&](size_t, std::string_view) {
    ++jobs;
    return true;
  });
  if (jobs == 0)
    throw usage_error(fmt::format("--file '{}' holds no jobs", path),
                      "write one JSON job per line, e.g. {\"command\": [\"make\", \"test\"]}");
  const auto parts = parts_of(text, jobs);
  PartsRead read(parts.size());
  std::vector<model::JobSpec> specs;
  make_room(specs, jobs);
  std::vector<std::vector<model::JobSpec>> later(parts.size() - 1);
  {
    std::vector<std::jthread> threads;
    for (size_t i = 1; i < parts.size(); ++i) {
      make_room(later[i - 1], parts[i].jobs);
      try {
        threads.emplace_back(read_part, std::cref(parts[i]), i, std::ref(later[i - 1]), std::ref(read));
      } catch (const std::system_error&) {  // no thread to be had: this one reads the part
        read_part(parts[i], i, later[i - 1], read);
      }
    }
    read_part(parts[0], 0, specs, read);
  }  // joins the threads
  for (const auto& e : read.failed)
    if (e) std::rethrow_exception(e);
  for (auto& part : later) {
    specs.insert(specs.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    std::vector<model::JobSpec>().swap(part);  // freed at once
  }
  return specs;
}

void report(Context& ctx, const std::vector<store::SubmitResult>& results, const std::vector<model::JobSpec>& specs) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (r.existed)
      std::fprintf(stderr, "jobctl: job %s already exists with idempotency key '%s'; not submitted again\n",
                   r.job_id.c_str(), specs[i].idempotency_key.c_str());
    ids.push_back(r.job_id);
  }
  if (ctx.output != "json") {
    for (const auto& id : ids) std::printf("%s\n", id.c_str());
    return;
  }
  print_json(ops::submitted_json(ctx.store(), results, results.size() > 1));
}

}  // namespace

void register_submit(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<SubmitFlags>();
  auto* cmd = app.add_subcommand("submit", "Submit a job: jobctl submit [options] -- CMD [ARGS...] | --webhook URL");
  cmd->footer("One argument after -- is run by `sh -c`; several are executed directly.\n"
              "A webhook: jobctl submit --webhook https://example.com/hook --data '{\"n\": 1}'\n"
              "Prints the job id alone on stdout: id=$(jobctl submit -- make test)\n"
              "A schedule: jobctl submit --cron '0 3 * * *' --tz Europe/Berlin -- backup.sh");
  completes(cmd->add_option("command", f->command, "The command to run"), Completes::command);
  f->job = std::make_unique<JobFlags>(*cmd, jobdef::kSubmit);
  cmd->add_flag("--wait", f->wait, "Block until the job finishes; exit as `jobctl wait` does")->excludes("--cron");
  auto* file = completes(cmd->add_option("--file", f->file, "Submit a batch: one JSON job per line, FILE or - for stdin"),
                         Completes::file);
  // A batch line carries its own fields: per-job flags beside --file would
  // be silently ignored, so they are refused.
  file->excludes(cmd->get_option("command"));
  for (const auto& name : f->job->names()) file->excludes(cmd->get_option(name));
  cmd->callback([f, &ctx] {
    std::vector<model::JobSpec> specs;
    if (!f->file.empty()) specs = specs_from_file(f->file);
    else specs.push_back(spec_from_flags(f->command, *f->job));
    auto results = ctx.store().jobs().submit(specs);
    report(ctx, results, specs);
    if (f->wait) {
      std::fflush(stdout);
      int worst = 0;
      for (const auto& r : results) worst = std::max(worst, wait_for_job(ctx, r.job_id, std::nullopt, WaitReport::status_only));
      ctx.exit_code = worst;
    }
  });
}

}  // namespace jobctl::cli
