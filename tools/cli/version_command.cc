// agate version: the compiler's version, the runtime's ABI, and whether this
// machine can run CUDA modules (and if not, why).
#include <iostream>

#include "agate/runtime.h"
#include "core/support/version.h"
#include "tools/cli/command.h"

namespace agate {
namespace cli {

CommandRunner RegisterVersionCommand(CLI::App& app) {
  app.add_subcommand("version", "print the compiler and runtime versions and the GPUs the runtime sees");
  return [] {
    std::cout << "agate " << AGATE_VERSION_STRING << "\n";
    const uint32_t abi = agate_runtime_abi_version();
    std::cout << "runtime ABI " << (abi >> 16) << "." << (abi & 0xffff) << " (profiles: core, host, cuda)\n";
    int32_t gpus = 0;
    if (agate_runtime_device_count(kDLCUDA, &gpus) == AGATE_OK) {
      std::cout << "CUDA: " << gpus << " GPU" << (gpus == 1 ? "" : "s") << "\n";
    } else {
      std::cout << "CUDA: unavailable (" << agate_last_error_message() << ")\n";
    }
    return 0;
  };
}

}  // namespace cli
}  // namespace agate
