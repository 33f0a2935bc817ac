// One subcommand of the `agate` command line.
//
// Each command registers its flags on a CLI11 subcommand and runs after parsing.
// Commands throw agate::Error for user errors; main() turns that into one line on
// stderr and exit code 1. Flag errors (unknown flag, bad value) exit with code 2.
#ifndef AGATE_TOOLS_CLI_COMMAND_H_
#define AGATE_TOOLS_CLI_COMMAND_H_

#include <CLI/CLI.hpp>
#include <functional>

namespace agate {
namespace cli {

// Adds a subcommand to `app`; returns the function that runs it after parsing (its exit code).
using CommandRunner = std::function<int()>;
using CommandRegistrar = CommandRunner (*)(CLI::App& app);

CommandRunner RegisterCompileCommand(CLI::App& app);
CommandRunner RegisterDemoCommand(CLI::App& app);
CommandRunner RegisterInspectCommand(CLI::App& app);
CommandRunner RegisterKeygenCommand(CLI::App& app);
CommandRunner RegisterRunCommand(CLI::App& app);
CommandRunner RegisterTuneCommand(CLI::App& app);
CommandRunner RegisterVersionCommand(CLI::App& app);

}  // namespace cli
}  // namespace agate

#endif  // AGATE_TOOLS_CLI_COMMAND_H_
