#include "benchmarks/harness/harness.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>
#include <thread>

namespace agate {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// 12 independent accumulator chains hide the FMA latency (4 cycles, 2 ports) on every
// current x86 core. Each iteration does 12 FMAs of `lanes` floats: 24 * lanes flops.
__attribute__((target("avx512f"))) double FmaLoopAvx512(int64_t iterations) {
  __m512 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
  const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = _mm512_fmadd_ps(a[i], b, c);
  }
  __m512 sum = a[0];
  for (int i = 1; i < 12; ++i) sum = _mm512_add_ps(sum, a[i]);
  return 24.0 * 16 * iterations + _mm512_reduce_add_ps(sum) * 0.0;
}

__attribute__((target("avx2,fma"))) double FmaLoopAvx2(int64_t iterations) {
  __m256 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm256_set1_ps(1.0f + i * 1e-3f);
  const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = _mm256_fmadd_ps(a[i], b, c);
  }
  float out[8];
  __m256 sum = a[0];
  for (int i = 1; i < 12; ++i) sum = _mm256_add_ps(sum, a[i]);
  _mm256_storeu_ps(out, sum);
  return 24.0 * 8 * iterations + out[0] * 0.0;
}

double FmaLoopScalar(int64_t iterations) {
  float a[12];
  for (int i = 0; i < 12; ++i) a[i] = 1.0f + i * 1e-3f;
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = std::fma(a[i], 0.999999f, 1e-7f);
  }
  return 24.0 * iterations + a[0] * 0.0;
}

double FmaLoop(int64_t iterations) {
  std::string isa = VectorIsa();
  if (isa == "avx512") return FmaLoopAvx512(iterations);
  if (isa == "avx2") return FmaLoopAvx2(iterations);
  return FmaLoopScalar(iterations);
}

}  // namespace

Timing TimeIt(const std::function<void()>& fn, int warmup, int runs, double min_run_ms) {
  for (int i = 0; i < warmup; ++i) fn();
  // Calibrate how many calls make one timed run.
  int repeat = 1;
  for (;;) {
    auto t0 = Clock::now();
    for (int i = 0; i < repeat; ++i) fn();
    double ms = MsSince(t0);
    if (ms >= min_run_ms || repeat >= (1 << 20)) break;
    repeat = ms <= 0 ? repeat * 10 : std::max(repeat + 1, static_cast<int>(repeat * min_run_ms / ms * 1.2));
  }
  std::vector<double> samples;
  for (int r = 0; r < runs; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < repeat; ++i) fn();
    samples.push_back(MsSince(t0) / repeat);
  }
  std::sort(samples.begin(), samples.end());
  Timing t;
  t.runs = runs;
  t.min_ms = samples.front();
  t.max_ms = samples.back();
  t.median_ms = runs % 2 ? samples[runs / 2] : 0.5 * (samples[runs / 2 - 1] + samples[runs / 2]);
  t.mean_ms = std::accumulate(samples.begin(), samples.end(), 0.0) / runs;
  double var = 0;
  for (double s : samples) var += (s - t.mean_ms) * (s - t.mean_ms);
  t.std_ms = std::sqrt(var / runs);
  return t;
}

std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

std::string VectorIsa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2";
  return "scalar";
}

double MeasurePeakGflops(int threads) {
  const int64_t iterations = 20000000;
  FmaLoop(iterations / 20);  // warm up the clocks
  std::vector<std::thread> pool;
  std::atomic<double> flops{0};
  auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      double f = FmaLoop(iterations);
      double expected = flops.load();
      while (!flops.compare_exchange_weak(expected, expected + f)) {
      }
    });
  }
  for (auto& t : pool) t.join();
  return flops.load() / (MsSince(t0) * 1e6);
}

std::vector<std::string> PeerEnvironment() {
  std::vector<std::string> out;
  for (const char* name : {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                           "MKL_NUM_THREADS", "DNNL_MAX_CPU_ISA", "AGATE_NUM_THREADS"}) {
    const char* value = std::getenv(name);
    out.push_back(value ? std::string(name) + "=" + value : std::string(name) + " unset");
  }
  return out;
}

std::vector<double> PrintMachine() {
  std::vector<double> peaks = {MeasurePeakGflops(1), MeasurePeakGflops(2)};
  std::cout << "CPU: " << CpuModel() << " (" << std::thread::hardware_concurrency() << " logical cores, " << VectorIsa()
            << ")\n";
  std::cout << "measured fp32 FMA peak: " << Fixed(peaks[0], 1) << " GFLOP/s (1 thread), " << Fixed(peaks[1], 1)
            << " GFLOP/s (2 threads)\n";
  std::cout << "environment:";
  for (const std::string& e : PeerEnvironment()) std::cout << " " << e << ";";
  std::cout << "\n";
  return peaks;
}

std::string Table::ToMarkdown() const {
  std::ostringstream os;
  auto row = [&](const std::vector<std::string>& cells) {
    os << "|";
    for (const std::string& c : cells) os << " " << c << " |";
    os << "\n";
  };
  row(header_);
  os << "|";
  for (size_t i = 0; i < header_.size(); ++i) os << " --- |";
  os << "\n";
  for (const auto& r : rows_) row(r);
  return os.str();
}

void Table::Print() const { std::cout << ToMarkdown() << std::flush; }

std::string Fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

}  // namespace bench
}  // namespace agate
