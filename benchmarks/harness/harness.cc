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

#include <time.h>

namespace agate {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The FMA loops: `kChains512`/`kChains256` independent accumulator chains per
// thread, each a named variable (an accumulator array may live in memory, and
// then the loop measures the store-to-load latency instead of the FMA units).
// A core reaches its FMA peak only when chains >= FMA latency x FMA pipes:
// 4 x 2 = 8 on Skylake-SP, Ice Lake, Sapphire Rapids and Zen 4/5, up to 5 x 2 on
// older cores; 24 chains (AVX-512, 32 registers) and 12 (AVX2, 16 registers)
// leave room for the two constants and cover every current core.
#define AGATE_CHAINS12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define AGATE_CHAINS24(X) AGATE_CHAINS12(X) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)
constexpr int kChains512 = 24, kChains256 = 12;

__attribute__((target("avx512f"))) float FmaLoopAvx512(int64_t iterations) {
#define DECLARE(i) __m512 acc##i = _mm512_set1_ps(1.0f + 0.001f * i);
#define UPDATE(i) acc##i = _mm512_fmadd_ps(acc##i, b, c);
#define SUM(i) sum = _mm512_add_ps(sum, acc##i);
  const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  AGATE_CHAINS24(DECLARE)
  for (int64_t it = 0; it < iterations; ++it) {
    AGATE_CHAINS24(UPDATE)
  }
  __m512 sum = _mm512_setzero_ps();
  AGATE_CHAINS24(SUM)
  return _mm512_reduce_add_ps(sum);
#undef DECLARE
#undef UPDATE
#undef SUM
}

__attribute__((target("avx2,fma"))) float FmaLoopAvx2(int64_t iterations) {
#define DECLARE(i) __m256 acc##i = _mm256_set1_ps(1.0f + 0.001f * i);
#define UPDATE(i) acc##i = _mm256_fmadd_ps(acc##i, b, c);
#define SUM(i) sum = _mm256_add_ps(sum, acc##i);
  const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  AGATE_CHAINS12(DECLARE)
  for (int64_t it = 0; it < iterations; ++it) {
    AGATE_CHAINS12(UPDATE)
  }
  __m256 sum = _mm256_setzero_ps();
  AGATE_CHAINS12(SUM)
  float out[8];
  _mm256_storeu_ps(out, sum);
  return out[0];
#undef DECLARE
#undef UPDATE
#undef SUM
}

float FmaLoopScalar(int64_t iterations) {
#define DECLARE(i) float acc##i = 1.0f + 0.001f * i;
#define UPDATE(i) acc##i = std::fma(acc##i, 0.999999f, 1e-7f);
#define SUM(i) sum += acc##i;
  AGATE_CHAINS12(DECLARE)
  for (int64_t it = 0; it < iterations; ++it) {
    AGATE_CHAINS12(UPDATE)
  }
  float sum = 0;
  AGATE_CHAINS12(SUM)
  return sum;
#undef DECLARE
#undef UPDATE
#undef SUM
}

// Flops of one iteration of FmaLoop for the ISA.
double FlopsPerIteration(const std::string& isa) {
  if (isa == "avx512") return 2.0 * 16 * kChains512;
  if (isa == "avx2") return 2.0 * 8 * kChains256;
  return 2.0 * 12;
}

float FmaLoop(const std::string& isa, int64_t iterations) {
  if (isa == "avx512") return FmaLoopAvx512(iterations);
  if (isa == "avx2") return FmaLoopAvx2(iterations);
  return FmaLoopScalar(iterations);
}

std::atomic<float> g_sink{0};  // keeps the loops' results alive

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
  return Summarize(samples);
}

Timing Summarize(std::vector<double> samples) {
  Timing t;
  if (samples.empty()) return t;
  std::sort(samples.begin(), samples.end());
  size_t runs = samples.size();
  t.runs = static_cast<int>(runs);
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
  // Many short runs (about 5 ms each), the fastest one: on a shared machine the
  // fastest run is the one that had the cores to itself, and a long single run
  // would average in every interruption. The same threads run every round (a
  // fresh thread's first vector instructions can run slower while the unit
  // powers up); a round starts when all of them are waiting at a spinning
  // barrier and ends when the last one finishes. The calling thread takes part.
  const std::string isa = VectorIsa();
  const int64_t iterations = isa == "scalar" ? 2000000 : 400000;
  const int rounds = 40;
  std::atomic<int> started{0}, finished{0};
  std::atomic<int> round{-1};
  auto participate = [&](bool timer, double* best) {
    for (int r = 0; r < rounds; ++r) {
      started.fetch_add(1);
      Clock::time_point t0;
      if (timer) {
        while (started.load() < threads * (r + 1)) {
        }
        t0 = Clock::now();
        round.store(r, std::memory_order_release);
      } else {
        while (round.load(std::memory_order_acquire) < r) {
        }
      }
      g_sink.store(FmaLoop(isa, iterations), std::memory_order_relaxed);
      finished.fetch_add(1);
      if (timer) {
        while (finished.load() < threads * (r + 1)) {
        }
        *best = std::max(*best, threads * iterations * FlopsPerIteration(isa) / (MsSince(t0) * 1e6));
      }
    }
  };
  FmaLoop(isa, iterations);  // warm up the clocks and the vector unit
  double best = 0;
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back([&] { participate(false, nullptr); });
  participate(true, &best);
  for (auto& t : pool) t.join();
  return best;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  std::getline(in, line);
  return line.empty() ? "unknown" : line;
}

// The calling thread's CPU time in ms.
double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

std::vector<Timing> TimeInterleaved(const std::vector<std::function<void()>>& contenders, int rounds, double min_run_ms,
                                    double settle_ms, bool thread_cpu_time) {
  auto settle = [&] {
    if (settle_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(settle_ms));
  };
  std::vector<int> repeat(contenders.size(), 1);
  // Warm-up and calibration: enough calls per sample to last min_run_ms.
  for (size_t c = 0; c < contenders.size(); ++c) {
    settle();
    contenders[c]();
    for (;;) {
      auto t0 = Clock::now();
      for (int i = 0; i < repeat[c]; ++i) contenders[c]();
      double ms = MsSince(t0);
      if (ms >= min_run_ms || repeat[c] >= (1 << 20)) break;
      repeat[c] = ms <= 0 ? repeat[c] * 10
                          : std::max(repeat[c] + 1, static_cast<int>(repeat[c] * min_run_ms / ms * 1.2));
    }
  }
  std::vector<std::vector<double>> samples(contenders.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t c = 0; c < contenders.size(); ++c) {
      settle();
      auto t0 = Clock::now();
      double cpu0 = ThreadCpuMs();
      for (int i = 0; i < repeat[c]; ++i) contenders[c]();
      double ms = thread_cpu_time ? ThreadCpuMs() - cpu0 : MsSince(t0);
      samples[c].push_back(ms / repeat[c]);
    }
  }
  std::vector<Timing> out;
  for (std::vector<double>& s : samples) out.push_back(Summarize(s));
  return out;
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
  std::cout << "load average: " << LoadAverage() << "\n";
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
