// fp32 GEMM: agate's generated kernel against OpenBLAS (cblas_sgemm) and oneDNN
// (dnnl_sgemm) in one run, with 1 and 2 threads, plus the machine's measured FMA
// peak. Prints GFLOP/s, agate/peer ratios and share of peak.
//
//   bazel run -c opt //benchmarks/gemm:gemm_benchmark [-- --sizes=256,512 --threads=1,2 --min_time=0.3]
#include <dlfcn.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include "benchmarks/gemm/gemm_kernel.h"
#include "core/codegen/llvm/build_llvm.h"
#include "core/ir/printer.h"
#include "core/target/target.h"
#include "agate/kernel_abi.h"

namespace agate {
namespace benchmarks {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// ------------------------------------------------------------------ thread pool

// A small pool for ctx->parallel_for: the caller plus (threads - 1) workers. Task t
// runs on participant t % threads. Workers spin briefly after a job (the next
// parallel loop of a kernel follows within microseconds: ~4000 pauses, tens of
// microseconds), then sleep so they do not steal the core from the peers.
class ThreadPool {
 public:
  explicit ThreadPool(int threads) : threads_(std::max(1, threads)) {
    for (int w = 1; w < threads_; ++w) workers_.emplace_back([this, w] { WorkerLoop(w); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int threads() const { return threads_; }

  static int32_t ParallelFor(void* pool, agate_parallel_task_fn task, void* closure, int32_t num_tasks) {
    return static_cast<ThreadPool*>(pool)->Run(task, closure, num_tasks);
  }

 private:
  int32_t Run(agate_parallel_task_fn task, void* closure, int32_t num_tasks) {
    if (threads_ == 1 || num_tasks <= 1) {
      for (int32_t t = 0; t < num_tasks; ++t) {
        if (int32_t s = task(t, num_tasks, closure)) return s;
      }
      return 0;
    }
    task_ = task;
    closure_ = closure;
    num_tasks_ = num_tasks;
    status_.store(0);
    pending_.store(threads_ - 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    RunShare(0);
    while (pending_.load(std::memory_order_acquire) != 0) _mm_pause();
    return status_.load();
  }

  void RunShare(int participant) {
    for (int32_t t = participant; t < num_tasks_; t += threads_) {
      int32_t s = task_(t, num_tasks_, closure_);
      if (s != 0) {
        int32_t expected = 0;
        status_.compare_exchange_strong(expected, s);
      }
    }
  }

  void WorkerLoop(int participant) {
    uint64_t seen = 0;
    for (;;) {
      // Spin for a while, then block.
      int spins = 0;
      while (generation_.load(std::memory_order_acquire) == seen && spins < 4000) {
        _mm_pause();
        ++spins;
      }
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_) return;
      RunShare(participant);
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int32_t> status_{0};
  bool stop_ = false;
  agate_parallel_task_fn task_ = nullptr;
  void* closure_ = nullptr;
  int32_t num_tasks_ = 0;
};

// ------------------------------------------------------------------ FMA peak

// Independent accumulator chains (more than FMA latency x FMA pipes on current
// cores), held in named variables: GCC keeps an accumulator *array* in memory.
#define AGATE_FMA_CHAINS(X) \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)

__attribute__((target("avx512f"))) double FmaLoop512(int64_t iterations) {
#define DECLARE(i) __m512 acc##i = _mm512_set1_ps(0.001f * i);
#define UPDATE(i) acc##i = _mm512_fmadd_ps(acc##i, a, b);
#define SUM(i) sum = _mm512_add_ps(sum, acc##i);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  AGATE_FMA_CHAINS(DECLARE)
  for (int64_t it = 0; it < iterations; ++it) {
    AGATE_FMA_CHAINS(UPDATE)
  }
  __m512 sum = _mm512_setzero_ps();
  AGATE_FMA_CHAINS(SUM)
  return static_cast<double>(_mm512_reduce_add_ps(sum));
#undef DECLARE
#undef UPDATE
#undef SUM
}

__attribute__((target("avx2,fma"))) double FmaLoop256(int64_t iterations) {
#define DECLARE(i) __m256 acc##i = _mm256_set1_ps(0.001f * i);
#define UPDATE(i) acc##i = _mm256_fmadd_ps(acc##i, a, b);
#define SUM(i) sum = _mm256_add_ps(sum, acc##i);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  AGATE_FMA_CHAINS(DECLARE)
  for (int64_t it = 0; it < iterations; ++it) {
    AGATE_FMA_CHAINS(UPDATE)
  }
  __m256 sum = _mm256_setzero_ps();
  AGATE_FMA_CHAINS(SUM)
  float out[8];
  _mm256_storeu_ps(out, sum);
  return out[0];
#undef DECLARE
#undef UPDATE
#undef SUM
}

// Measured FP32 FMA peak in GFLOP/s with `threads` threads running the loop at once.
double MeasurePeak(int threads, bool avx512, std::string* how) {
  // Many short runs, best one: on a shared machine, the fastest run is the one
  // that had the cores to itself.
  const int64_t iterations = 1000000;
  const double flops_per_iteration = avx512 ? 24.0 * 16 * 2 : 24.0 * 8 * 2;
  *how = avx512 ? "24 independent 512-bit FMA chains" : "24 independent 256-bit FMA chains";
  double best = 0;
  for (int rep = 0; rep < 40; ++rep) {
    std::atomic<int> ready{0};
    std::vector<std::thread> workers;
    std::vector<double> sink(threads);
    auto start = Clock::now();
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < threads) {
        }
        sink[t] = avx512 ? FmaLoop512(iterations) : FmaLoop256(iterations);
      });
    }
    for (auto& w : workers) w.join();
    double seconds = Seconds(start, Clock::now());
    best = std::max(best, threads * iterations * flops_per_iteration / seconds / 1e9);
    if (sink[0] == 12345.678) std::printf(" ");  // keep the loops alive
  }
  return best;
}

// ------------------------------------------------------------------ measurement

// Best-of timing, interleaved: each round calls every contender once, rounds go on
// until `min_time` has passed (at least 5 rounds). The machine is shared, so other
// processes only ever slow a call down; the fastest call of each contender is the
// best estimate of what it does with the cores to itself, and interleaving gives
// every contender the same chances of a quiet moment.
std::vector<double> BestSeconds(const std::vector<std::function<void()>>& calls, double min_time) {
  for (const auto& call : calls) call();  // warm up: page faults, packing buffers, library initialisation
  std::vector<double> best(calls.size(), 1e30);
  auto begin = Clock::now();
  for (int round = 0; round < 5 || (Seconds(begin, Clock::now()) < min_time && round < 500); ++round) {
    for (size_t i = 0; i < calls.size(); ++i) {
      // Let the previous contender's worker threads stop spinning (GNU OpenMP and
      // OpenBLAS poll for up to ~0.1 s after a call) so that they do not slow this one.
      std::this_thread::sleep_for(std::chrono::milliseconds(120));
      auto t0 = Clock::now();
      calls[i]();
      best[i] = std::min(best[i], Seconds(t0, Clock::now()));
    }
  }
  return best;
}

std::vector<float> RandomMatrix(size_t count, unsigned seed) {
  std::vector<float> v(count);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& x : v) x = dist(rng);
  return v;
}

struct AlignedFloats {
  explicit AlignedFloats(size_t n) : data(static_cast<float*>(std::aligned_alloc(64, (n * 4 + 63) / 64 * 64)), std::free) {}
  std::unique_ptr<float, void (*)(void*)> data;
};

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, 10, "model name") == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

std::string CpuFamily() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, family, model;
  while (std::getline(in, line)) {
    if (line.compare(0, 10, "cpu family") == 0 && family.empty()) family = line.substr(line.find(':') + 2);
    if (line.compare(0, 6, "model\t") == 0 && model.empty()) model = line.substr(line.find(':') + 2);
  }
  return "family " + family + " model " + model;
}

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "(unset)";
}

void SetOpenMPThreads(int threads) {
  // oneDNN's Debian build uses GNU OpenMP; its libgomp is already loaded with libdnnl.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) set(threads);
}

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::atoi(item.c_str()));
  return out;
}

int Main(int argc, char** argv) {
  std::vector<int> sizes = {256, 512, 1000, 1024, 2048};
  std::vector<int> thread_counts = {1, 2};
  double min_time = 2.0;
  std::string dump_asm;
  int mr = 0, nr = 0, mc = 0, kc = 0;  // blocking overrides for tuning (0: DefaultBlocking)  // write the generated assembly of each GEMM kernel here (for tuning)
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--sizes=", 0) == 0) sizes = ParseList(arg.substr(8));
    if (arg.rfind("--threads=", 0) == 0) thread_counts = ParseList(arg.substr(10));
    if (arg.rfind("--min_time=", 0) == 0) min_time = std::atof(arg.substr(11).c_str());
    if (arg.rfind("--dump_asm=", 0) == 0) dump_asm = arg.substr(11);
    if (arg.rfind("--mr=", 0) == 0) mr = std::atoi(arg.substr(5).c_str());
    if (arg.rfind("--nr=", 0) == 0) nr = std::atoi(arg.substr(5).c_str());
    if (arg.rfind("--mc=", 0) == 0) mc = std::atoi(arg.substr(5).c_str());
    if (arg.rfind("--kc=", 0) == 0) kc = std::atoi(arg.substr(5).c_str());
  }
  target::Target host = target::Target::Host();
  const dnnl_version_t* dnnl = dnnl_version();
  std::printf("== environment\n");
  std::printf("cpu model          : %s (%s), %u hardware threads\n", CpuModel().c_str(), CpuFamily().c_str(),
              std::thread::hardware_concurrency());
  std::printf("agate target       : %s\n", host.ToString().c_str());
  std::printf("OPENBLAS_CORETYPE  : %s\n", Env("OPENBLAS_CORETYPE"));
  std::printf("OMP_NUM_THREADS    : %s\n", Env("OMP_NUM_THREADS"));
  std::printf("DNNL_MAX_CPU_ISA   : %s\n", Env("DNNL_MAX_CPU_ISA"));
  std::printf("openblas           : %s (core %s)\n", openblas_get_config(), openblas_get_corename());
  std::printf("onednn             : %d.%d.%d (%s), cpu runtime %s\n", dnnl->major, dnnl->minor, dnnl->patch, dnnl->hash,
              dnnl->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other");
  {
    std::ifstream load("/proc/loadavg");
    std::string loadavg;
    std::getline(load, loadavg);
    std::printf("load average       : %s (the machine is shared: run under `chrt -r 10` for stable figures)\n",
                loadavg.c_str());
  }
  std::printf("timing             : best call of >= 5 interleaved rounds and >= %.1f s per size and thread count, after a warm-up call\n", min_time);

  bool avx512 = host.HasFeature("avx512f");
  std::string how;
  std::vector<double> peak(3, 0);
  for (int t : thread_counts) {
    if (t >= 1 && t <= 2) peak[t] = MeasurePeak(t, avx512, &how);
  }
  std::printf("fma peak           : %s: ", how.c_str());
  for (int t : thread_counts) std::printf("%d thread(s) %.1f GFLOP/s  ", t, peak[t]);
  std::printf("\n\n");

  std::printf("%-16s %3s %8s %8s %8s %8s %6s %6s %6s %6s %6s %6s %8s %8s\n", "M=N=K", "thr", "agateTE", "agateIR",
              "openblas", "onednn", "TE/dn", "IR/dn", "ag/ob", "ag/dn", "ag%pk", "dn%pk", "compile", "max_err");
  std::vector<std::string> blockings;
  for (int size : sizes) {
    const int m = size, n = size, k = size;
    const double flops = 2.0 * m * n * k;
    AlignedFloats a(size_t(m) * k), b(size_t(k) * n), c_agate(size_t(m) * n), c_ir(size_t(m) * n), c_peer(size_t(m) * n);
    std::vector<float> ra = RandomMatrix(size_t(m) * k, 1), rb = RandomMatrix(size_t(k) * n, 2);
    std::copy(ra.begin(), ra.end(), a.data.get());
    std::copy(rb.begin(), rb.end(), b.data.get());
    for (int threads : thread_counts) {
      GemmBlocking blocking = DefaultBlocking(m, n, k, host.vector_width_bits(), threads);
      if (mr) blocking.mr = mr;
      if (nr) blocking.nr = nr;
      if (mc) blocking.mc = mc;
      if (kc) blocking.kc = kc;
      blocking.mc = (blocking.mc + blocking.mr - 1) / blocking.mr * blocking.mr;
      // Two agate kernels: the TE schedule lowered by core/lower, and the same
      // algorithm written directly as loop IR (with A packing and edge predicates).
      auto compile_start = Clock::now();
      GemmBlocking te_blocking = TeBlocking(m, n, k, host.vector_width_bits(), threads);
      if (mr) te_blocking.mr = mr;
      if (nr) te_blocking.nr = nr;
      if (mc) te_blocking.mc = mc;
      if (kc) te_blocking.kc = kc;
      ir::LoweredFunc te_func = MakeTeGemmKernel("gemm_te", m, n, k, te_blocking);
      ir::LoweredFunc ir_func = MakeGemmKernel("gemm_ir", m, n, k, blocking);
      codegen::HostKernels kernels = codegen::HostKernels::Build({te_func, ir_func}, host);
      double compile_seconds = Seconds(compile_start, Clock::now());
      if (!dump_asm.empty()) {
        std::ofstream(dump_asm + "." + std::to_string(size) + "." + std::to_string(threads) + ".ir")
            << ir::ToString(te_func) << "\n" << ir::ToString(ir_func);
        codegen::LLVMBuildOptions options;
        options.keep_assembly = true;
        std::ofstream(dump_asm + "." + std::to_string(size) + "." + std::to_string(threads) + ".s")
            << codegen::BuildLLVMObject({te_func, ir_func}, host, options).assembly;
      }
      ThreadPool pool(threads);
      struct AgateKernel {
        agate_kernel_fn fn;
        std::unique_ptr<AlignedFloats> workspace;
        agate_kernel_ctx ctx;
      };
      auto make = [&](const ir::LoweredFunc& f) {
        AgateKernel kernel;
        kernel.fn = kernels.Get(f.name);
        kernel.workspace = std::make_unique<AlignedFloats>(static_cast<size_t>(f.workspace_bytes / 4 + 16));
        kernel.ctx.abi_version = AGATE_KERNEL_ABI_VERSION;
        kernel.ctx.parallel_for = ThreadPool::ParallelFor;
        kernel.ctx.pool = &pool;
        kernel.ctx.num_threads = threads;
        kernel.ctx.workspace = kernel.workspace->data.get();
        kernel.ctx.workspace_bytes = static_cast<uint64_t>(f.workspace_bytes);
        return kernel;
      };
      AgateKernel te_kernel = make(te_func), ir_kernel = make(ir_func);
      void* args[3] = {a.data.get(), b.data.get(), c_agate.data.get()};
      void* ir_args[3] = {a.data.get(), b.data.get(), c_ir.data.get()};
      int32_t status = 0;
      auto run_te = [&] { status |= te_kernel.fn(args, &te_kernel.ctx); };
      auto run_ir = [&] { status |= ir_kernel.fn(ir_args, &ir_kernel.ctx); };
      auto run_openblas = [&] {
        openblas_set_num_threads(threads);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data.get(), k, b.data.get(), n, 0.0f,
                    c_peer.data.get(), n);
      };
      auto run_onednn = [&] {
        SetOpenMPThreads(threads);
        dnnl_sgemm('N', 'N', m, n, k, 1.0f, a.data.get(), k, b.data.get(), n, 0.0f, c_peer.data.get(), n);
      };
      run_te();
      run_ir();
      run_openblas();
      double max_error = 0;
      for (size_t i = 0; i < size_t(m) * n; ++i) {
        double ref = c_peer.data.get()[i], scale = std::max(1.0, std::fabs(ref));
        max_error = std::max(max_error, std::fabs(c_agate.data.get()[i] - ref) / scale);
        max_error = std::max(max_error, std::fabs(c_ir.data.get()[i] - ref) / scale);
      }
      std::vector<double> best = BestSeconds({run_te, run_ir, run_openblas, run_onednn}, min_time);
      double te_gflops = flops / best[0] / 1e9, ir_gflops = flops / best[1] / 1e9,
             openblas_gflops = flops / best[2] / 1e9, onednn_gflops = flops / best[3] / 1e9;
      double agate_gflops = std::max(te_gflops, ir_gflops);
      double pk = threads <= 2 ? peak[threads] : 0;
      std::printf("%-16s %3d %8.1f %8.1f %8.1f %8.1f %6.2f %6.2f %6.2f %6.2f %5.1f%% %5.1f%% %7.2fs %8.1e%s\n",
                  (std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k)).c_str(), threads, te_gflops,
                  ir_gflops, openblas_gflops, onednn_gflops, te_gflops / onednn_gflops, ir_gflops / onednn_gflops,
                  agate_gflops / openblas_gflops, agate_gflops / onednn_gflops, pk > 0 ? 100 * agate_gflops / pk : 0.0,
                  pk > 0 ? 100 * onednn_gflops / pk : 0.0, compile_seconds, max_error,
                  status != 0 ? "  KERNEL FAILED" : "");
      std::fflush(stdout);
      auto describe = [](const GemmBlocking& b) {
        return std::to_string(b.mr) + "x" + std::to_string(b.nr) + " mc " + std::to_string(b.mc) + " kc " +
               std::to_string(b.kc);
      };
      blockings.push_back(std::to_string(m) + " " + std::to_string(threads) + "T: TE " + describe(te_blocking) +
                          "; IR " + describe(blocking));
    }
  }
  std::printf("\nblocking (micro-kernel MRxNR, rows per parallel block, K slice):\n");
  for (const std::string& b : blockings) std::printf("  %s\n", b.c_str());
  std::printf("\nGFLOP/s: agateTE = TE schedule lowered by core/lower, agateIR = the same algorithm as hand-written "
              "loop IR (plus A packing, edge predicates); agate = the better of the two.\n"
              "TE/dn, IR/dn, ag/ob, ag/dn: ratios to oneDNN / OpenBLAS; ag%%pk, dn%%pk: share of the measured FMA peak "
              "for that thread count;\ncompile: lowering + LLVM O3 + link of both kernels; max_err: max |agate - "
              "OpenBLAS| / max(1, |OpenBLAS|) over both kernels.\n");
  return 0;
}

}  // namespace
}  // namespace benchmarks
}  // namespace agate

int main(int argc, char** argv) { return agate::benchmarks::Main(argc, argv); }
