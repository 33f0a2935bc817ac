// `agate-runtime`: `agate run` and `agate version` without the compiler, for the machines a
// module is deployed to (a GPU server, a phone's shell, a CI runner): it links only the minimal
// runtime (CPU and cuda profiles), the .npz reader and libsodium for signed modules, so it needs
// no LLVM, ONNX, protobuf or XGBoost there. Same flags, output and exit codes as `agate run`.
#include "tools/cli/command_line.h"

int main(int argc, char** argv) {
  return agate::cli::RunCommandLine(argc, argv, "agate-runtime", "agate-runtime: run compiled agate modules",
                                    {&agate::cli::RegisterRunCommand, &agate::cli::RegisterVersionCommand});
}
