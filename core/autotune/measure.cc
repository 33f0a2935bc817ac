#include "core/autotune/measure.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <sstream>
#include <thread>

#include "agate/runtime.h"
#include "core/compiler/compiler.h"
#include "core/support/error.h"
#include "core/support/statistics.h"

namespace agate {
namespace autotune {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// The child's side: run, report "O" + output or "E" + message on the pipe, exit without
// running the parent's atexit handlers or destructors.
[[noreturn]] void ChildMain(const std::function<std::string()>& fn, int fd) {
  std::string message;
  int status = 0;
  try {
    message = "O" + fn();
  } catch (const std::exception& e) {
    message = std::string("E") + e.what();
    status = 1;
  } catch (...) {
    message = "Eunknown exception";
    status = 1;
  }
  WriteAll(fd, message);
  ::close(fd);
  ::_exit(status);
}

struct Running {
  size_t index = 0;
  pid_t pid = -1;
  int fd = -1;
  Clock::time_point start;
  std::string data;
  bool eof = false;
  bool killed = false;
};

ChildOutcome Finish(Running* r, double timeout_s) {
  int status = 0;
  while (::waitpid(r->pid, &status, 0) < 0 && errno == EINTR) {
  }
  ChildOutcome out;
  out.wall_ms = MsSince(r->start);
  if (r->killed) {
    out.error = "timed out after " + std::to_string(static_cast<int64_t>(timeout_s)) + " s (killed)";
  } else if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    out.error = "killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  } else if (!r->data.empty() && r->data[0] == 'O' && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    out.ok = true;
    out.output = r->data.substr(1);
  } else if (!r->data.empty() && r->data[0] == 'E') {
    out.error = r->data.substr(1);
  } else {
    out.error = "exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                " without a result";
  }
  return out;
}

int OnlineCpus() {
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

void Check(agate_status_t status, const char* what) {
  if (status == AGATE_OK) return;
  throw Error(static_cast<StatusCode>(status), std::string(what) + ": " + agate_last_error_message());
}

// Twice the last-level cache (sysconf), within [32, 64] MiB. The cap: a VM may report the
// whole socket's L3 (508 MiB on the 2-core Zen 5 VM this was written on, whose core sees one
// 32 MiB slice), and a flush of 1 GiB per timed run would cost more than the kernels.
size_t FlushBytes() {
  long llc = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
  size_t bytes = llc > 0 ? 2 * static_cast<size_t>(llc) : 0;
  return std::min<size_t>(size_t{64} << 20, std::max<size_t>(size_t{32} << 20, bytes));
}

// Writes a buffer larger than the last-level cache: afterwards nothing the kernel touched is cached.
void FlushCaches(std::vector<uint8_t>* buffer) {
  static uint8_t value = 0;
  ++value;
  for (size_t i = 0; i < buffer->size(); i += 64) (*buffer)[i] = value;
}

// Reads every input once, as the kernel before this one left them (written, so cached).
uint64_t TouchInputs(const std::vector<std::vector<uint8_t>>& inputs) {
  uint64_t sum = 0;
  for (const auto& in : inputs)
    for (size_t i = 0; i < in.size(); i += 64) sum += in[i];
  return sum;
}

struct ModuleHandle {
  agate_module_t* module = nullptr;
  agate_executor_t* executor = nullptr;
  ~ModuleHandle() {
    if (executor) agate_executor_free(executor);
    if (module) agate_module_free(module);
  }
};

}  // namespace

const char* CacheStateName(CacheState state) {
  switch (state) {
    case CacheState::kNetwork: return "network (LLC flushed, inputs re-read)";
    case CacheState::kWarm: return "warm";
    case CacheState::kCold: return "cold (LLC flushed)";
  }
  return "?";
}

std::vector<ChildOutcome> RunInChildren(const std::vector<std::function<std::string()>>& fns, int jobs,
                                        double timeout_s) {
  std::vector<ChildOutcome> outcomes(fns.size());
  if (jobs <= 0) jobs = OnlineCpus();
  std::vector<Running> running;
  size_t next = 0;
  auto timeout = std::chrono::duration<double>(timeout_s);
  while (next < fns.size() || !running.empty()) {
    while (next < fns.size() && static_cast<int>(running.size()) < jobs) {
      int fds[2];
      AGATE_REQUIRE(::pipe(fds) == 0, kIo) << "cannot create a pipe for a measurement child: " << std::strerror(errno);
      std::fflush(nullptr);
      pid_t pid = ::fork();
      AGATE_REQUIRE(pid >= 0, kIo) << "cannot fork a measurement child: " << std::strerror(errno);
      if (pid == 0) {
        ::close(fds[0]);
        ChildMain(fns[next], fds[1]);
      }
      ::close(fds[1]);
      Running r;
      r.index = next++;
      r.pid = pid;
      r.fd = fds[0];
      r.start = Clock::now();
      running.push_back(std::move(r));
    }
    std::vector<pollfd> polls;
    for (const Running& r : running) polls.push_back(pollfd{r.fd, POLLIN, 0});
    ::poll(polls.data(), polls.size(), 50);
    for (size_t i = 0; i < running.size(); ++i) {
      Running& r = running[i];
      if (polls[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buffer[1 << 16];
        ssize_t n = ::read(r.fd, buffer, sizeof(buffer));
        if (n > 0) r.data.append(buffer, static_cast<size_t>(n));
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) r.eof = true;
      }
      if (!r.eof && Clock::now() - r.start > timeout) {
        ::kill(r.pid, SIGKILL);
        r.killed = true;
        r.eof = true;
      }
    }
    for (size_t i = 0; i < running.size();) {
      if (!running[i].eof) {
        ++i;
        continue;
      }
      ::close(running[i].fd);
      outcomes[running[i].index] = Finish(&running[i], timeout_s);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  return outcomes;
}

namespace {

// Each kernel's time in one run (its calls summed), the median over `repeats` profiled runs
// under options.cache.
std::map<std::string, double> TimeKernels(const ModuleHandle& h, const MeasureOptions& options) {
  uint32_t calls = 0;
  Check(agate_module_num_calls(h.module, &calls), "module plan length");
  std::vector<std::string> names(calls);
  for (uint32_t c = 0; c < calls; ++c) {
    const char* name = nullptr;
    Check(agate_module_call_kernel_name(h.module, c, &name), "kernel of a plan call");
    names[c] = name;
  }
  std::vector<uint8_t> flush;
  if (options.cache != CacheState::kWarm) flush.assign(FlushBytes(), 0);
  std::vector<uint64_t> ns(calls);
  std::map<std::string, std::vector<double>> runs;
  for (int r = 0; r < std::max(1, options.repeats); ++r) {
    if (options.cache != CacheState::kWarm) FlushCaches(&flush);
    Check(agate_executor_run_profiled(h.executor, ns.data(), calls), "a profiled run of the candidate");
    std::map<std::string, double> run;
    for (uint32_t c = 0; c < calls; ++c) run[names[c]] += static_cast<double>(ns[c]) * 1e-6;
    for (const auto& [name, ms] : run) runs[name].push_back(ms);
  }
  std::map<std::string, double> medians;
  for (const auto& [name, times] : runs) medians[name] = Median(times);
  return medians;
}

}  // namespace

MeasureResult TimeModule(const std::string& module_bytes, const MeasureOptions& options) {
  if (options.threads > 0) Check(agate_runtime_set_num_threads(options.threads), "setting the thread count");
  ModuleHandle h;
  Check(agate_module_load_from_memory(module_bytes.data(), module_bytes.size(), nullptr, &h.module),
        "loading the candidate module");
  Check(agate_executor_create(h.module, nullptr, &h.executor), "creating an executor");
  uint32_t count = 0;
  Check(agate_module_num_inputs(h.module, &count), "module inputs");
  std::vector<std::vector<uint8_t>> buffers(count);
  std::vector<std::vector<int64_t>> shapes(count);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (uint32_t i = 0; i < count; ++i) {
    agate_tensor_info info;
    Check(agate_module_input_info(h.module, i, &info), "module input");
    shapes[i].assign(info.shape, info.shape + info.ndim);
    int64_t numel = 1;
    for (int64_t d : shapes[i]) numel *= d;
    size_t element = (static_cast<size_t>(info.dtype.bits) * info.dtype.lanes + 7) / 8;
    buffers[i].assign(static_cast<size_t>(numel) * element, 0);
    if (info.dtype.code == kDLFloat && info.dtype.bits == 32) {
      float* f = reinterpret_cast<float*>(buffers[i].data());
      for (int64_t e = 0; e < numel; ++e) f[e] = uniform(rng);
    }
    DLTensor t{};
    t.data = buffers[i].empty() ? nullptr : buffers[i].data();
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = info.ndim;
    t.dtype = info.dtype;
    t.shape = shapes[i].data();
    Check(agate_executor_set_input(h.executor, i, &t), "binding an input");
  }
  for (int w = 0; w < options.warmup; ++w) Check(agate_executor_run(h.executor), "running the candidate");
  std::vector<uint8_t> flush;
  if (options.cache != CacheState::kWarm) flush.assign(FlushBytes(), 0);
  volatile uint64_t sink = 0;
  std::vector<double> times;
  for (int r = 0; r < std::max(1, options.repeats); ++r) {
    if (options.cache != CacheState::kWarm) FlushCaches(&flush);
    if (options.cache == CacheState::kNetwork) sink = sink + TouchInputs(buffers);
    auto t0 = Clock::now();
    Check(agate_executor_run(h.executor), "running the candidate");
    times.push_back(MsSince(t0));
  }
  MeasureResult result;
  result.ok = true;
  result.ms = Median(times);
  result.min_ms = *std::min_element(times.begin(), times.end());
  result.max_ms = *std::max_element(times.begin(), times.end());
  if (options.kernel_times) result.kernel_ms = TimeKernels(h, options);
  return result;
}

namespace {

// Times serialized module bytes in a child of their own (TimeModule there).
MeasureResult TimeInChild(const std::string& bytes, const MeasureOptions& options) {
  MeasureResult result;
  ChildOutcome timed = RunInChild([&] {
    MeasureResult r = TimeModule(bytes, options);
    char text[96];
    std::snprintf(text, sizeof(text), "%.17g %.17g %.17g", r.ms, r.min_ms, r.max_ms);
    std::string out = text;
    for (const auto& [name, ms] : r.kernel_ms) {  // kernel names are identifiers: no spaces
      std::snprintf(text, sizeof(text), " %.17g", ms);
      out += "\n" + name + text;
    }
    return out;
  }, options.timeout_s);
  if (!timed.ok) {
    result.error = "run failed: " + timed.error;
    return result;
  }
  double ms = 0, lo = 0, hi = 0;
  std::istringstream lines(timed.output);
  std::string line;
  std::getline(lines, line);
  if (std::sscanf(line.c_str(), "%lf %lf %lf", &ms, &lo, &hi) != 3) {
    result.error = "run failed: unreadable timing '" + timed.output + "'";
    return result;
  }
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name;
    double kernel = 0;
    if (!(fields >> name >> kernel)) {
      result.error = "run failed: unreadable kernel time '" + line + "'";
      return result;
    }
    result.kernel_ms[name] = kernel;
  }
  result.ok = true;
  result.ms = ms;
  result.min_ms = lo;
  result.max_ms = hi;
  return result;
}

}  // namespace

std::vector<MeasureResult> MeasureModules(const std::vector<std::function<std::string()>>& builders,
                                          const MeasureOptions& options) {
  std::vector<ChildOutcome> built = RunInChildren(builders, options.build_jobs, options.build_timeout_s);
  std::vector<MeasureResult> results(builders.size());
  for (size_t i = 0; i < builders.size(); ++i) {
    double build_ms = built[i].wall_ms;
    if (!built[i].ok) {
      results[i].error = "build failed: " + built[i].error;
    } else {
      results[i] = TimeInChild(built[i].output, options);
    }
    results[i].build_ms = build_ms;
  }
  return results;
}

std::vector<MeasureResult> MeasureModelVariants(const graph::Graph& model,
                                                const std::vector<compiler::CompileOptions>& variants,
                                                const MeasureOptions& options, int rounds) {
  std::vector<std::function<std::string()>> builders;
  for (const compiler::CompileOptions& o : variants) {
    builders.push_back([&model, &o] {
      compiler::CompileResult r = compiler::CompileGraph(model, o);
      return std::string(r.module.begin(), r.module.end());
    });
  }
  std::vector<ChildOutcome> built = RunInChildren(builders, options.build_jobs, options.build_timeout_s);
  std::vector<MeasureResult> results(variants.size());
  std::vector<std::vector<double>> medians(variants.size());
  std::vector<std::map<std::string, std::vector<double>>> kernel_rounds(variants.size());
  for (size_t i = 0; i < variants.size(); ++i) {
    results[i].build_ms = built[i].wall_ms;
    if (!built[i].ok) results[i].error = "build failed: " + built[i].error;
  }
  for (int round = 0; round < std::max(1, rounds); ++round) {
    for (size_t k = 0; k < variants.size(); ++k) {
      size_t i = round % 2 ? variants.size() - 1 - k : k;  // every other round in reverse order
      if (!built[i].ok || !results[i].error.empty()) continue;
      MeasureResult r = TimeInChild(built[i].output, options);
      if (!r.ok) {
        results[i].error = r.error;
        continue;
      }
      medians[i].push_back(r.ms);
      for (const auto& [name, ms] : r.kernel_ms) kernel_rounds[i][name].push_back(ms);
      results[i].min_ms = medians[i].size() == 1 ? r.min_ms : std::min(results[i].min_ms, r.min_ms);
      results[i].max_ms = std::max(results[i].max_ms, r.max_ms);
    }
  }
  for (size_t i = 0; i < variants.size(); ++i) {
    if (!results[i].error.empty()) continue;
    results[i].ok = true;
    results[i].ms = Median(medians[i]);
    for (const auto& [name, rounds_ms] : kernel_rounds[i]) results[i].kernel_ms[name] = Median(rounds_ms);
  }
  return results;
}

KernelMeasurer::KernelMeasurer(const graph::Graph& planned, size_t group_index, target::Target target,
                               MeasureOptions options)
    : planned_(planned), group_index_(group_index), target_(std::move(target)), options_(options) {
  AGATE_REQUIRE(group_index < planned.groups.size(), kInvalidArgument)
      << "fused group " << group_index << " does not exist (the graph has " << planned.groups.size() << ")";
}

std::vector<MeasureResult> KernelMeasurer::Measure(const std::vector<ops::KnobConfig>& configs) const {
  std::vector<std::function<std::string()>> builders;
  for (const ops::KnobConfig& config : configs) {
    builders.push_back([this, config] {
      compiler::CompileResult r =
          compiler::CompileGroup(planned_, group_index_, target_, ops::ApplyKnobConfig(config));
      return std::string(r.module.begin(), r.module.end());
    });
  }
  return MeasureModules(builders, options_);
}

}  // namespace autotune
}  // namespace agate
