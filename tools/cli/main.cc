// `agate`: the compiler's command line, in the spirit of TVM's tvmc.
// The launcher ./agate at the repository root builds this binary and forwards to it.
// No input may abort it: every exception is caught here and reported as one line, exit 1.
#include <iostream>
#include <exception>
#include <map>
#include <new>
#include <string>

#include "core/support/error.h"
#include "tools/cli/command.h"

namespace {

constexpr agate::cli::CommandRegistrar kCommands[] = {
    &agate::cli::RegisterDemoCommand,   &agate::cli::RegisterCompileCommand, &agate::cli::RegisterRunCommand,
    &agate::cli::RegisterTuneCommand,    &agate::cli::RegisterInspectCommand, &agate::cli::RegisterKeygenCommand,
    &agate::cli::RegisterVersionCommand,
};

int Main(int argc, char** argv) {
  CLI::App app{"agate: compile ONNX models into small, fast modules and run them", "agate"};
  app.require_subcommand(1);
  std::map<const CLI::App*, agate::cli::CommandRunner> runners;
  for (auto registrar : kCommands) {
    agate::cli::CommandRunner runner = registrar(app);
    runners[app.get_subcommands({}).back()] = runner;
  }
  // CLI11 would say only "A subcommand is required" for a mistyped command: name it.
  if (argc >= 2 && argv[1][0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->check_name(argv[1]);
    if (!known) {
      std::cerr << "agate: unknown command '" << argv[1] << "'\n" << app.help() << std::flush;
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "agate: " << e.what() << "\n" << app.help() << std::flush;
    return 2;
  }
  try {
    for (const CLI::App* sub : app.get_subcommands()) return runners.at(sub)();
  } catch (const agate::Error& e) {
    std::cerr << "agate: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    // A size agate failed to check before allocating: a bug, but never an abort.
    std::cerr << "agate: error: resource exhausted: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    // Any other exception is a bug in agate (every input check throws agate::Error).
    std::cerr << "agate: error: internal error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << "agate: error: internal error: unknown exception\n";
    return 1;
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
