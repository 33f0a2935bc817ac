#include "tools/cli/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <sstream>

#include "core/support/statistics.h"

namespace agate {
namespace cli {

double RunStatistics::mean() const { return std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size(); }
double RunStatistics::median() const { return Median(ms); }
double RunStatistics::min() const { return *std::min_element(ms.begin(), ms.end()); }
double RunStatistics::max() const { return *std::max_element(ms.begin(), ms.end()); }
double RunStatistics::std() const {
  double m = mean(), v = 0;
  for (double x : ms) v += (x - m) * (x - m);
  return std::sqrt(v / ms.size());
}

std::string RunStatistics::ToTable() const {
  char buffer[256];
  std::snprintf(buffer, sizeof(buffer),
                "Execution time summary (%zu measurements x %d runs):\n"
                " mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)\n"
                "%10.4f   %11.4f   %10.4f   %10.4f   %10.4f\n",
                ms.size(), number, mean(), median(), max(), min(), std());
  return buffer;
}

std::string RunStatistics::ToJson() const {
  char buffer[256];
  std::snprintf(buffer, sizeof(buffer),
                "{\"mean_ms\": %.6f, \"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f, \"std_ms\": %.6f, "
                "\"repeat\": %zu, \"number\": %d}",
                mean(), median(), min(), max(), std(), ms.size(), number);
  return buffer;
}

std::string ProfileTable(const std::vector<std::string>& call_kernels, const std::vector<std::vector<uint64_t>>& runs) {
  struct Row {
    std::string kernel;
    int calls = 0;
    double ms = 0;
  };
  std::vector<Row> rows;
  double total = 0;
  for (size_t c = 0; c < call_kernels.size(); ++c) {
    RunStatistics call;
    for (const std::vector<uint64_t>& run : runs) call.ms.push_back(run[c] * 1e-6);
    auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.kernel == call_kernels[c]; });
    if (it == rows.end()) it = rows.insert(rows.end(), Row{call_kernels[c]});
    it->calls += 1;
    it->ms += call.median();
    total += call.median();
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.ms > b.ms; });
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "Per-kernel profile (median of %zu runs, %zu calls):\n%10s %7s %6s  %s\n",
                runs.size(), call_kernels.size(), "ms", "share", "calls", "kernel");
  out << line;
  for (const Row& r : rows) {
    std::snprintf(line, sizeof line, "%10.4f %6.1f%% %6d  %s\n", r.ms, total > 0 ? 100 * r.ms / total : 0.0, r.calls,
                  r.kernel.c_str());
    out << line;
  }
  std::snprintf(line, sizeof line, "%10.4f %6.1f%% %6zu  (total)\n", total, 100.0, call_kernels.size());
  out << line;
  return out.str();
}

RunStatistics MeasureRuns(const std::function<void()>& fn, int repeat, int number) {
  RunStatistics stats;
  stats.number = number;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < number; ++i) fn();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    stats.ms.push_back(ms / number);
  }
  return stats;
}

std::string DescribeArray(const npz::Array& array, int max_values) {
  std::ostringstream os;
  os << array.name << ": " << array.dtype << "[";
  for (size_t i = 0; i < array.shape.size(); ++i) os << (i ? "x" : "") << array.shape[i];
  os << "]";
  if (array.dtype == ir::DType::Float(32)) {
    os << " = [";
    int64_t n = std::min<int64_t>(array.num_elements(), max_values);
    for (int64_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, array.data.data() + 4 * i, 4);
      os << (i ? ", " : "") << v;
    }
    os << (array.num_elements() > n ? ", ...]" : "]");
  }
  return os.str();
}

}  // namespace cli
}  // namespace agate
