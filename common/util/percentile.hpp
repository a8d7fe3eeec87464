#pragma once
// Percentiles of a sample, for jobctl stats and the benchmarks.
#include <vector>

namespace jobctl::util {

// Nearest-rank percentile, p in (0, 1]; 0 for no samples.
double percentile(std::vector<double> samples, double p);
// The same over samples already sorted ascending: no copy, no sort.
double percentile_sorted(const std::vector<double>& sorted, double p);

}  // namespace jobctl::util
