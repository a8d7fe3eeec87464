#include "cli/retry_flags.hpp"

#include <fmt/format.h>

#include "common/util/duration.hpp"

namespace jobctl::cli {

std::vector<std::string> add_retry_flags(CLI::App& cmd, RetryFlags& f) {
  const model::RetryPolicy d;  // the defaults, shown in the help
  cmd.add_option("--retries", f.retries, fmt::format("Retries after a failed attempt (default {})", d.max_retries))
      ->check(CLI::Range(0, 1000));
  cmd.add_option("--backoff", f.backoff,
                 fmt::format("Spacing of retries: {} (default {})", model::join_or(model::names_of(model::kBackoffNames)),
                             model::to_string(d.backoff)))
      ->check(CLI::IsMember(model::names_of(model::kBackoffNames)));
  cmd.add_option("--retry-delay", f.retry_delay,
                 fmt::format("Base delay before the first retry (default {})", util::format_duration(util::Micros(d.delay_us))));
  cmd.add_option("--max-retry-delay", f.max_retry_delay,
                 fmt::format("Cap on one retry delay (default {})", util::format_duration(util::Micros(d.max_delay_us))));
  cmd.add_option("--retry-for", f.retry_for, "Start no retry later than this after the first attempt");
  cmd.add_option("--no-retry-exit-codes", f.no_retry_exit_codes,
                 "Exit codes that fail permanently, straight to the dead-letter queue (e.g. 2,64-78)");
  cmd.add_option("--max-deliveries", f.max_deliveries,
                 fmt::format("Claims without any result before the run is dead as poison (default {})",
                             d.max_deliveries))
      ->check(CLI::Range(1, 1000));
  cmd.add_option("--delivery", f.delivery,
                 fmt::format("{} or {} (never run twice); default {}", model::to_string(model::Delivery::at_least_once),
                             model::to_string(model::Delivery::at_most_once), model::to_string(d.delivery)))
      ->check(CLI::IsMember(model::names_of(model::kDeliveryNames)));
  return {"--retries", "--backoff", "--retry-delay", "--max-retry-delay", "--retry-for", "--no-retry-exit-codes",
          "--max-deliveries", "--delivery"};
}

model::RetryOverrides to_overrides(const RetryFlags& f) {
  model::RetryOverrides o;
  o.max_retries = f.retries;
  o.max_deliveries = f.max_deliveries;
  if (!f.backoff.empty()) o.backoff = model::parse_backoff(f.backoff);
  if (!f.retry_delay.empty()) o.delay_us = util::parse_duration(f.retry_delay, "--retry-delay").count();
  if (!f.max_retry_delay.empty())
    o.max_delay_us = util::parse_duration(f.max_retry_delay, "--max-retry-delay").count();
  if (!f.retry_for.empty()) o.retry_for_us = util::parse_duration(f.retry_for, "--retry-for").count();
  if (!f.no_retry_exit_codes.empty()) o.no_retry_exit_codes = model::ExitCodeSet::parse(f.no_retry_exit_codes);
  if (!f.delivery.empty()) o.delivery = model::parse_delivery(f.delivery);
  return o;
}

}  // namespace jobctl::cli
