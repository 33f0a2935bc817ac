// The command line's use of the minimal runtime: load a module file through the C ABI
// (agate/runtime.h), bind .npz arrays to its inputs, run, read outputs back as arrays.
//
// Why through the C ABI and not the runtime's C++ internals: `agate run` and `agate demo`
// must exercise exactly what users link, so what works here works for them.
#ifndef AGATE_TOOLS_CLI_MODULE_RUNNER_H_
#define AGATE_TOOLS_CLI_MODULE_RUNNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/npz/npz.h"

struct agate_module;
struct agate_executor;

namespace agate {
namespace cli {

struct TensorDescription {
  std::string name;
  ir::DType dtype;
  std::vector<int64_t> shape;
};

class ModuleRunner {
 public:
  // Loads and verifies the module (mmap, zero-copy constants); a CUDA module onto GPU
  // `device` (CPU modules take only 0). With a `public_key` (32 bytes), only a module signed
  // with its secret key loads (agate_module_load_from_file_signed). Throws agate::Error with
  // the runtime's status and message (kUnavailable naming what is missing for a CUDA module
  // without a GPU).
  ModuleRunner(const std::string& path, int num_threads, int device = 0,
               const std::vector<uint8_t>& public_key = {});
  ~ModuleRunner();
  ModuleRunner(const ModuleRunner&) = delete;
  ModuleRunner& operator=(const ModuleRunner&) = delete;

  const std::vector<TensorDescription>& inputs() const { return inputs_; }
  const std::vector<TensorDescription>& outputs() const { return outputs_; }
  std::string target() const;
  uint64_t arena_bytes() const;
  // Where the kernels run: "cpu" or "cuda:N".
  std::string device() const;

  // Binds arrays to inputs by name. Every input must be given once, with its exact dtype
  // and shape; an unknown name, a missing input or a mismatch is kInvalidArgument naming it.
  // The arrays are borrowed until the last Run() that uses them.
  //
  // With `on_device` and a CUDA module, each array is instead copied once into memory of the
  // module's GPU (owned by this runner) and bound as a kDLCUDA tensor, so runs read it in place
  // and copy nothing from the host: the latency of a caller whose data is already on the GPU
  // (`agate run --device-resident`). For a CPU module host memory is the device's: no copy.
  void BindInputs(const std::vector<npz::Array>& arrays, bool on_device = false);
  void Run();

  // The kernel each plan call runs, in plan order.
  std::vector<std::string> CallKernelNames() const;
  // One run with per-call times (ns, plan order): agate_executor_run_profiled (wall
  // times on CPUs, device times between CUDA events on GPUs).
  std::vector<uint64_t> RunProfiled();
  // The outputs copied to host memory (agate_executor_copy_output), also from a GPU.
  std::vector<npz::Array> Outputs() const;

  // Random inputs of the right shapes and dtypes (uniform [0, 1) for floats), deterministic in `seed`.
  std::vector<npz::Array> RandomInputs(uint64_t seed) const;

 private:
  agate_module* module_ = nullptr;
  agate_executor* executor_ = nullptr;
  std::vector<TensorDescription> inputs_;
  std::vector<TensorDescription> outputs_;
  std::vector<uint64_t> device_inputs_;  // CUDA device addresses of inputs bound on_device (freed last)
};

}  // namespace cli
}  // namespace agate

#endif  // AGATE_TOOLS_CLI_MODULE_RUNNER_H_
