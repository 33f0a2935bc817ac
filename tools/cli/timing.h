// Run statistics for `agate run --print-time/--json` and `agate demo`, in tvmc's style.
#ifndef AGATE_TOOLS_CLI_TIMING_H_
#define AGATE_TOOLS_CLI_TIMING_H_

#include <functional>
#include <string>
#include <vector>

#include "tools/npz/npz.h"

namespace agate {
namespace cli {

struct RunStatistics {
  std::vector<double> ms;  // one entry per measurement (mean of `number` runs)
  int number = 1;
  double mean() const;
  double median() const;
  double min() const;
  double max() const;
  double std() const;
  std::string ToTable() const;  // "Execution time summary:" with mean/median/max/min/std (ms)
  std::string ToJson() const;   // {"mean_ms":..., "median_ms":..., ...}
};

// `repeat` measurements, each timing `number` consecutive calls of fn.
RunStatistics MeasureRuns(const std::function<void()>& fn, int repeat, int number);

// `agate run --profile`: per-kernel medians over `runs` profiled runs (each a
// vector of per-call ns in plan order), calls of one kernel summed, sorted by
// time, with each kernel's share of the total: TVM's debug-executor report.
std::string ProfileTable(const std::vector<std::string>& call_kernels, const std::vector<std::vector<uint64_t>>& runs);

// "name: float32[1x10] = [0.0901, 0.0833, ...]".
std::string DescribeArray(const npz::Array& array, int max_values = 6);

}  // namespace cli
}  // namespace agate

#endif  // AGATE_TOOLS_CLI_TIMING_H_
