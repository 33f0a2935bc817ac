// `agate`: the compiler's command line, in the spirit of TVM's tvmc.
// The launcher ./agate at the repository root builds this binary and forwards to it.
// No input may abort it: tools/cli/command_line catches every exception and reports it as one line, exit 1.
#include "tools/cli/command_line.h"

int main(int argc, char** argv) {
  using namespace agate::cli;
  return RunCommandLine(argc, argv, "agate", "agate: compile ONNX models into small, fast modules and run them",
                        {&RegisterDemoCommand, &RegisterCompileCommand, &RegisterRunCommand, &RegisterTuneCommand,
                         &RegisterInspectCommand, &RegisterKeygenCommand, &RegisterVersionCommand});
}
