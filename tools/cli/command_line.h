// The shared entry point of agate's command-line binaries: the full `agate` (compiler and
// runtime) and `agate-runtime` (run and version only: what a deployment machine needs, with no
// compiler, LLVM, ONNX or protobuf to install there).
#ifndef AGATE_TOOLS_CLI_COMMAND_LINE_H_
#define AGATE_TOOLS_CLI_COMMAND_LINE_H_

#include <initializer_list>

#include "tools/cli/command.h"

namespace agate {
namespace cli {

// Registers `commands` on one CLI11 app called `name`, parses argv and runs the chosen command.
// Exit codes: the command's own (0 on success), 1 for an error the command reported (one line
// on stderr), 2 for a usage error (unknown command or flag, printed with the help). No input
// aborts: every exception is caught here and reported as one line.
int RunCommandLine(int argc, char** argv, const char* name, const char* description,
                   std::initializer_list<CommandRegistrar> commands);

}  // namespace cli
}  // namespace agate

#endif  // AGATE_TOOLS_CLI_COMMAND_LINE_H_
