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

// Statistics of per-call samples (ms).
Timing Summarize(std::vector<double> samples_ms);

// Times `contenders` (agate and its peers on one problem) in `rounds`
// interleaved rounds: each round takes one sample of every contender in turn
// (each sample repeats the call until it lasted min_run_ms), so a busy spell on
// a shared machine hits all of them alike. Calls each contender once first
// (warm-up: page faults, lazy initialisation). Before each sample it sleeps
// settle_ms (untimed) so that the previous contender's worker threads, which
// spin for a while after a call (OpenMP, agate's pool), have gone idle. Returns
// per-call statistics over the rounds, in the contenders' order.
//
// With `thread_cpu_time`, samples are the calling thread's CPU time instead of
// wall time: on a machine shared with other work, time slices given to other
// processes then do not count. Only meaningful when every contender runs on the
// calling thread alone (1 thread; GNU OpenMP runs a 1-thread team on the caller).
std::vector<Timing> TimeInterleaved(const std::vector<std::function<void()>>& contenders, int rounds,
                                    double min_run_ms = 5.0, double settle_ms = 0.0, bool thread_cpu_time = false);

// "AMD EPYC 9R14 96-Core Processor" etc., from /proc/cpuinfo.
std::string CpuModel();

// The widest fp32 FMA vector this CPU runs: "avx512", "avx2" or "scalar".
std::string VectorIsa();

// Measured fp32 FMA peak in GFLOP/s on `threads` threads: every thread runs
// enough independent FMA chains in registers (more than latency x pipes) of the
// widest ISA the CPU has; the fastest of 40 short runs. Takes about 0.3 s.
double MeasurePeakGflops(int threads);

// /proc/loadavg: the machine's load, printed beside every table.
std::string LoadAverage();

// Environment variables that change the peers' speed (OPENBLAS_CORETYPE, OMP_NUM_THREADS, ...),
// as "NAME=value" lines ("NAME unset" when not set).
std::vector<std::string> PeerEnvironment();

// Prints the CPU model, ISA, peak for 1 and 2 threads, the load average and the peer
// environment; returns the peaks (index 0: 1 thread, 1: 2 threads).
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
