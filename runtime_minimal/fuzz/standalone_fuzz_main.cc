// A main for the fuzz target when it is not built with libFuzzer (gcc builds):
// replays every input file or directory given, then runs deterministic
// mutations of them (bit flips, truncations, byte overwrites), accepting the
// libFuzzer flags the CI script passes (-runs=N, -seed=S; -malloc_limit_mb=M caps the
// address space at what is mapped at start plus M MiB, so an allocation beyond the cap
// fails (std::bad_alloc, which the targets let escape: a crash); -artifact_prefix=P writes
// each input to P + "last-input" before running it, so after a crash that file holds the
// input that crashed; others are ignored).
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void Collect(const std::string& path, std::vector<std::vector<uint8_t>>* inputs) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    inputs->push_back(ReadAll(path));
    return;
  }
  DIR* dir = opendir(path.c_str());
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') Collect(path + "/" + e->d_name, inputs);
  }
  closedir(dir);
}

// Caps the address space at what is mapped now plus `megabytes`.
void CapAllocations(long megabytes) {
  unsigned long pages = 0;
  if (FILE* f = fopen("/proc/self/statm", "r")) {
    if (fscanf(f, "%lu", &pages) != 1) pages = 0;
    fclose(f);
  }
  rlimit limit{};
  limit.rlim_cur = limit.rlim_max =
      static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (static_cast<rlim_t>(megabytes) << 20);
  setrlimit(RLIMIT_AS, &limit);
}

}  // namespace

int main(int argc, char** argv) {
  long runs = 0;
  unsigned seed = 1;
  std::string last_input;
  std::vector<std::vector<uint8_t>> inputs;
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], "-runs=", 6) == 0) {
      runs = strtol(argv[i] + 6, nullptr, 10);
    } else if (strncmp(argv[i], "-malloc_limit_mb=", 17) == 0) {
      CapAllocations(strtol(argv[i] + 17, nullptr, 10));
    } else if (strncmp(argv[i], "-artifact_prefix=", 17) == 0) {
      last_input = std::string(argv[i] + 17) + "last-input";
    } else if (strncmp(argv[i], "-seed=", 6) == 0) {
      seed = static_cast<unsigned>(strtoul(argv[i] + 6, nullptr, 10));
    } else if (argv[i][0] != '-') {
      Collect(argv[i], &inputs);
    }
  }
  auto run_one = [&last_input](const std::vector<uint8_t>& input) {
    if (!last_input.empty()) {
      std::ofstream(last_input, std::ios::binary | std::ios::trunc)
          .write(reinterpret_cast<const char*>(input.data()), static_cast<std::streamsize>(input.size()));
    }
    LLVMFuzzerTestOneInput(input.data(), input.size());
  };
  for (const auto& input : inputs) run_one(input);
  std::mt19937 rng(seed);
  for (long run = 0; run < runs && !inputs.empty(); ++run) {
    std::vector<uint8_t> m = inputs[rng() % inputs.size()];
    if (m.empty()) continue;
    switch (rng() % 3) {
      case 0:
        for (unsigned flips = 1 + rng() % 4; flips > 0; --flips) m[rng() % m.size()] ^= 1u << (rng() % 8);
        break;
      case 1:
        m.resize(rng() % m.size());
        break;
      default:
        m[rng() % m.size()] = static_cast<uint8_t>(rng());
        break;
    }
    run_one(m);
  }
  printf("standalone fuzz driver: %zu inputs replayed, %ld mutations run\n", inputs.size(), runs);
  return 0;
}
