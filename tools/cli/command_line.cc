#include "tools/cli/command_line.h"

#include <exception>
#include <iostream>
#include <map>
#include <new>
#include <string>

#include "core/support/error.h"

namespace agate {
namespace cli {

int RunCommandLine(int argc, char** argv, const char* name, const char* description,
                   std::initializer_list<CommandRegistrar> commands) {
  CLI::App app{description, name};
  app.require_subcommand(1);
  std::map<const CLI::App*, CommandRunner> runners;
  for (CommandRegistrar registrar : commands) {
    CommandRunner runner = registrar(app);
    runners[app.get_subcommands({}).back()] = runner;
  }
  // CLI11 would say only "A subcommand is required" for a mistyped command: name it.
  if (argc >= 2 && argv[1][0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->check_name(argv[1]);
    if (!known) {
      std::cerr << name << ": unknown command '" << argv[1] << "'\n" << app.help() << std::flush;
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << name << ": " << e.what() << "\n" << app.help() << std::flush;
    return 2;
  }
  try {
    for (const CLI::App* sub : app.get_subcommands()) return runners.at(sub)();
  } catch (const Error& e) {
    std::cerr << name << ": error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    // A size agate failed to check before allocating: a bug, but never an abort.
    std::cerr << name << ": error: resource exhausted: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    // Any other exception is a bug in agate (every input check throws agate::Error).
    std::cerr << name << ": error: internal error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << name << ": error: internal error: unknown exception\n";
    return 1;
  }
  return 2;
}

}  // namespace cli
}  // namespace agate
