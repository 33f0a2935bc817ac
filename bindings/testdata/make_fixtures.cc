// make_fixtures: writes the language bindings' test modules.
//
//   make_fixtures <libagate_fixture_kernels.so> <output directory>
//
// Each binding's suite (tools/ci/suites/{rust,java,go}.sh) runs it once and
// points its tests at the directory (AGATE_TESTDATA_DIR).
#include <exception>
#include <string>

#include "bindings/testdata/fixture_modules.h"
#include "core/support/error.h"
#include "core/support/file.h"
#include "core/support/logging.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    AGATE_LOG(ERROR) << "usage: make_fixtures <libagate_fixture_kernels.so> <output directory>";
    return 2;
  }
  try {
    const std::vector<uint8_t> kernels = agate::ReadFile(argv[1]);
    for (const auto& [name, bytes] : agate::bindings_testdata::AllFixtures(kernels)) {
      const std::string path = std::string(argv[2]) + "/" + name;
      agate::WriteFileAtomically(path, bytes);
      AGATE_LOG(INFO) << "wrote " << path << " (" << bytes.size() << " bytes)";
    }
  } catch (const std::exception& e) {
    AGATE_LOG(ERROR) << "make_fixtures: " << e.what();
    return 1;
  }
  return 0;
}
