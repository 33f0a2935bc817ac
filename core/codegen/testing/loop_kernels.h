// Hand-built lowered kernels with reference results, shared by the tests of every
// code generator (LLVM host and cross, the C backend).
//
// Why hand-built: they pin down the LoweredFunc contract independently of the
// TE lowering, and cover what schedules produce: vector Ramp/Broadcast access,
// tails, predicated and strided access, parallel loops with captured variables,
// local and workspace allocations, math calls, integer floor division, bitwise operations and shifts, the
// dot4_u8s8 intrinsic (vpdpbusd), asserts.
#ifndef AGATE_CORE_CODEGEN_TESTING_LOOP_KERNELS_H_
#define AGATE_CORE_CODEGEN_TESTING_LOOP_KERNELS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "agate/kernel_abi.h"

namespace agate {
namespace codegen {
namespace testing {

// A 64-byte aligned host array for one kernel argument.
class HostArray {
 public:
  HostArray(ir::DType dtype, size_t count);
  ir::DType dtype() const { return dtype_; }
  size_t count() const { return count_; }
  size_t bytes() const { return count_ * static_cast<size_t>(dtype_.element_bytes()); }
  void* data() const { return data_.get(); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_.get());
  }

 private:
  ir::DType dtype_;
  size_t count_;
  std::shared_ptr<void> data_;
};

struct KernelCase {
  ir::LoweredFunc func;
  // Fresh argument arrays with the inputs filled in and outputs zeroed.
  std::function<std::vector<HostArray>()> make_args;
  // Computes the expected outputs into `args` (plain C++ loops).
  std::function<void(std::vector<HostArray>&)> reference;
  std::vector<int> outputs;  // indices of the params to compare
  double tolerance = 0;      // relative (and absolute near 0) for floats; ints exact
  int32_t expected_status = 0;
};

// Every test kernel; names are unique.
std::vector<KernelCase> AllKernelCases();
std::vector<ir::LoweredFunc> AllKernelFuncs();

// Compares `got` to `want` element by element; returns "" or a description of the first mismatches.
std::string CompareArrays(const HostArray& got, const HostArray& want, double tolerance);

// A kernel context whose parallel_for runs tasks on `threads` std::threads (1: in order).
struct TestContext {
  explicit TestContext(int threads, size_t workspace_bytes);
  agate_kernel_ctx ctx;
  HostArray workspace;
};

// Runs `kernel` on fresh arguments and checks status and outputs against the
// reference; returns "" or what went wrong.
std::string RunAndCheck(const KernelCase& c, agate_kernel_fn kernel, int threads);

}  // namespace testing
}  // namespace codegen
}  // namespace agate


namespace agate {
namespace codegen {
namespace testing {

// ---- Running kernels in another process (cross targets under qemu, the C backend).

// C99 source of a driver program: `driver KERNEL IN OUT` reads the arguments
// from IN (WriteArgsFile), calls KERNEL with a serial parallel_for and the
// workspace, and writes the status and every argument back to OUT.
std::string DriverSource(const std::vector<ir::LoweredFunc>& funcs);
void WriteArgsFile(const std::string& path, const std::vector<HostArray>& args, uint64_t workspace_bytes);
// Reads OUT into `args` (same shapes as written); returns the kernel's status.
int32_t ReadResultsFile(const std::string& path, std::vector<HostArray>* args);

// Runs a shell command; returns its exit status and appends its output to *output.
int RunCommand(const std::string& command, std::string* output);
// True when `tool` is on PATH.
bool HaveTool(const std::string& tool);
// A fresh directory under $TEST_TMPDIR (or /tmp).
std::string MakeTempDir();
void WriteTextFile(const std::string& path, const std::string& text);
// The public include root, c_api/include (for -I when compiling drivers).
std::string KernelAbiIncludeDir();

// ---- Running Cortex-M4 firmware on qemu-system-arm's mps2-an386 board, with
// semihosting for argv, file I/O and the exit status.

// True when arm-none-eabi-gcc and qemu-system-arm are installed.
bool HaveCortexM4Emulation();
// Links `inputs` (object or C files) with the driver, a vector table that enables
// the FPU, and newlib's semihosting runtime (rdimon) into dir/firmware.elf for
// Cortex-M4 with hard float. Returns "" or the toolchain's log.
std::string LinkCortexM4Firmware(const std::string& dir, const std::vector<std::string>& inputs,
                                 const std::vector<ir::LoweredFunc>& funcs);
// Runs `kernel` of dir/firmware.elf on in.bin, writing out.bin; returns the command's exit status.
int RunCortexM4Firmware(const std::string& dir, const std::string& kernel, std::string* log);

// Checks outputs of `args` (as returned by a run) against the case's reference.
std::string CheckOutputs(const KernelCase& c, int32_t status, const std::vector<HostArray>& args);

}  // namespace testing
}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_TESTING_LOOP_KERNELS_H_
