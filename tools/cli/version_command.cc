#include <iostream>

#include "core/support/version.h"
#include "tools/cli/command.h"

namespace agate {
namespace cli {

CommandRunner RegisterVersionCommand(CLI::App& app) {
  app.add_subcommand("version", "print the compiler version");
  return [] {
    std::cout << "agate " << AGATE_VERSION_STRING << "\n";
    return 0;
  };
}

}  // namespace cli
}  // namespace agate
