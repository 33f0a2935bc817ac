// agate's one benchmark harness: timing, the machine's measured peak, and result tables.
//
// Speed goals are ratios against peers measured in the same run on the same machine
// (machines differ between sessions), so every benchmark prints the CPU model, the
// measured fp32 FMA peak, the environment the peers ran with, and its figures as a
// Markdown table. Benchmarks are binaries under benchmarks/, never timed unit tests.
#ifndef AGATE_BENCHMARKS_HARNESS_HARNESS_H_
#define AGATE_BENCHMARKS_HARNESS_HARNESS_H_

#include <functional>
#include <string>
#include <vector>

namespace agate {
namespace bench {

// Statistics of repeated runs, in milliseconds.
struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0, mean_ms = 0, std_ms = 0;
  int runs = 0;
};

// Runs `fn` `warmup` times, then `runs` times (each run repeats fn until it took at least
// min_run_ms, so sub-millisecond kernels are timed accurately) and returns per-call figures.
Timing TimeIt(const std::function<void()>& fn, int warmup = 3, int runs = 20, double min_run_ms = 2.0);

// "AMD EPYC 9R14 96-Core Processor" etc., from /proc/cpuinfo.
std::string CpuModel();

// The widest fp32 FMA vector this CPU runs: "avx512", "avx2" or "scalar".
std::string VectorIsa();

// Measured fp32 FMA peak in GFLOP/s on `threads` threads (independent FMA chains in registers,
// the widest ISA the CPU has). Takes about 0.3 s.
double MeasurePeakGflops(int threads);

// Environment variables that change the peers' speed (OPENBLAS_CORETYPE, OMP_NUM_THREADS, ...),
// as "NAME=value" lines ("NAME unset" when not set).
std::vector<std::string> PeerEnvironment();

// Prints the CPU model, ISA, peak for 1 and 2 threads, and the peer environment; returns the
// peaks (index 0: 1 thread, 1: 2 threads).
std::vector<double> PrintMachine();

// A Markdown table printed to stdout and optionally appended to a file.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string ToMarkdown() const;
  void Print() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Formats a number with `digits` decimals.
std::string Fixed(double value, int digits = 2);

}  // namespace bench
}  // namespace agate

#endif  // AGATE_BENCHMARKS_HARNESS_HARNESS_H_
