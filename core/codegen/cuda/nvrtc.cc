#include "core/codegen/cuda/nvrtc.h"

#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>

#include "core/support/error.h"

namespace agate {
namespace codegen {
namespace {

// NVRTC's C API, declared from its documentation (nvrtcResult is an int enum; 0 is success).
using NvrtcProgram = struct NvrtcProgramOpaque*;
using NvrtcStatus = int;

struct NvrtcApi {
  std::string path;
  std::string open_error;  // why it could not be opened; empty when it was
  NvrtcStatus (*Version)(int*, int*) = nullptr;
  const char* (*GetErrorString)(NvrtcStatus) = nullptr;
  NvrtcStatus (*CreateProgram)(NvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) = nullptr;
  NvrtcStatus (*DestroyProgram)(NvrtcProgram*) = nullptr;
  NvrtcStatus (*CompileProgram)(NvrtcProgram, int, const char* const*) = nullptr;
  NvrtcStatus (*GetProgramLogSize)(NvrtcProgram, size_t*) = nullptr;
  NvrtcStatus (*GetProgramLog)(NvrtcProgram, char*) = nullptr;
  NvrtcStatus (*GetPTXSize)(NvrtcProgram, size_t*) = nullptr;
  NvrtcStatus (*GetPTX)(NvrtcProgram, char*) = nullptr;
  NvrtcStatus (*GetCUBINSize)(NvrtcProgram, size_t*) = nullptr;
  NvrtcStatus (*GetCUBIN)(NvrtcProgram, char*) = nullptr;
  NvrtcStatus (*GetNumSupportedArchs)(int*) = nullptr;
  NvrtcStatus (*GetSupportedArchs)(int*) = nullptr;
};

template <typename F>
bool Bind(void* library, const char* name, F* fn, std::string* missing) {
  *fn = reinterpret_cast<F>(dlsym(library, name));
  if (*fn == nullptr) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *fn != nullptr;
}

NvrtcApi Open() {
  NvrtcApi api;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("AGATE_NVRTC_LIBRARY")) {
    if (*env) candidates.push_back(env);
  }
  if (candidates.empty()) {
    for (const char* prefix : {"", "/usr/local/cuda/lib64/"}) {
      for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}) {
        candidates.push_back(std::string(prefix) + name);
      }
    }
  }
  void* library = nullptr;
  for (const std::string& c : candidates) {
    library = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library) {
      api.path = c;
      break;
    }
  }
  if (!library) {
    std::ostringstream os;
    os << "the cuda target needs NVIDIA's runtime compiler NVRTC (libnvrtc.so from the CUDA toolkit 11.2 or newer), "
          "which this machine does not have: tried ";
    for (size_t i = 0; i < candidates.size(); ++i) os << (i ? ", " : "") << candidates[i];
    os << "; install the CUDA toolkit or set AGATE_NVRTC_LIBRARY to the library's path";
    api.open_error = os.str();
    return api;
  }
  std::string missing;
  Bind(library, "nvrtcVersion", &api.Version, &missing);
  Bind(library, "nvrtcGetErrorString", &api.GetErrorString, &missing);
  Bind(library, "nvrtcCreateProgram", &api.CreateProgram, &missing);
  Bind(library, "nvrtcDestroyProgram", &api.DestroyProgram, &missing);
  Bind(library, "nvrtcCompileProgram", &api.CompileProgram, &missing);
  Bind(library, "nvrtcGetProgramLogSize", &api.GetProgramLogSize, &missing);
  Bind(library, "nvrtcGetProgramLog", &api.GetProgramLog, &missing);
  Bind(library, "nvrtcGetPTXSize", &api.GetPTXSize, &missing);
  Bind(library, "nvrtcGetPTX", &api.GetPTX, &missing);
  Bind(library, "nvrtcGetCUBINSize", &api.GetCUBINSize, &missing);
  Bind(library, "nvrtcGetCUBIN", &api.GetCUBIN, &missing);
  Bind(library, "nvrtcGetNumSupportedArchs", &api.GetNumSupportedArchs, &missing);
  Bind(library, "nvrtcGetSupportedArchs", &api.GetSupportedArchs, &missing);
  if (!missing.empty()) {
    api.open_error = api.path + " is too old for agate (it lacks " + missing + "); the cuda target needs NVRTC from "
                     "the CUDA toolkit 11.2 or newer";
  }
  return api;
}

const NvrtcApi& Api() {
  static const NvrtcApi api = Open();
  AGATE_REQUIRE(api.open_error.empty(), kUnavailable) << api.open_error;
  return api;
}

// Frees the program on every path.
class Program {
 public:
  explicit Program(const NvrtcApi& api) : api_(api) {}
  ~Program() {
    if (program_) api_.DestroyProgram(&program_);
  }
  NvrtcProgram* out() { return &program_; }
  NvrtcProgram get() const { return program_; }

 private:
  const NvrtcApi& api_;
  NvrtcProgram program_ = nullptr;
};

void Check(const NvrtcApi& api, NvrtcStatus status, const char* what) {
  AGATE_REQUIRE(status == 0, kInternal) << "NVRTC " << what << " failed: " << api.GetErrorString(status);
}

std::string ArchList(const std::vector<int>& archs) {
  std::string out;
  for (size_t i = 0; i < archs.size(); ++i) out += (i ? ", sm_" : "sm_") + std::to_string(archs[i]);
  return out;
}

}  // namespace

bool NvrtcAvailable() {
  try {
    Api();
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::string NvrtcDescription() {
  const NvrtcApi& api = Api();
  int major = 0, minor = 0;
  api.Version(&major, &minor);
  return "NVRTC " + std::to_string(major) + "." + std::to_string(minor) + " (" + api.path + ")";
}

std::vector<int> NvrtcSupportedArchs() {
  const NvrtcApi& api = Api();
  int count = 0;
  Check(api, api.GetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<size_t>(count > 0 ? count : 0));
  if (count > 0) Check(api, api.GetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  return archs;
}

NvrtcResult CompileCuda(const std::string& source, int arch, bool fast_math, const std::string& program_name) {
  const NvrtcApi& api = Api();
  std::vector<int> archs = NvrtcSupportedArchs();
  bool supported = false;
  for (int a : archs) supported = supported || a == arch;
  AGATE_REQUIRE(supported, kUnsupported)
      << NvrtcDescription() << " cannot compile for sm_" << arch << "; it compiles for " << ArchList(archs)
      << " (an NVRTC from an older CUDA toolkit still compiles for older GPUs: set AGATE_NVRTC_LIBRARY)";
  static std::mutex mutex;  // NVRTC is thread-safe per program; serialise compiles to bound memory
  std::lock_guard<std::mutex> lock(mutex);
  Program program(api);
  Check(api, api.CreateProgram(program.out(), source.c_str(), (program_name + ".cu").c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  std::string arch_option = "--gpu-architecture=sm_" + std::to_string(arch);
  std::vector<const char*> options = {arch_option.c_str(), "--ptxas-options=-v", "-std=c++14"};
  if (fast_math) options.push_back("--use_fast_math");
  NvrtcStatus status = api.CompileProgram(program.get(), static_cast<int>(options.size()), options.data());
  NvrtcResult result;
  size_t log_size = 0;
  if (api.GetProgramLogSize(program.get(), &log_size) == 0 && log_size > 1) {
    result.log.resize(log_size);
    api.GetProgramLog(program.get(), &result.log[0]);
    result.log.resize(log_size - 1);
  }
  AGATE_REQUIRE(status == 0, kInternal) << "NVRTC could not compile the generated CUDA source of " << program_name
                                        << " for sm_" << arch << " (" << api.GetErrorString(status) << "):\n"
                                        << result.log;
  size_t cubin_size = 0, ptx_size = 0;
  Check(api, api.GetCUBINSize(program.get(), &cubin_size), "nvrtcGetCUBINSize");
  result.cubin.resize(cubin_size);
  if (cubin_size) Check(api, api.GetCUBIN(program.get(), reinterpret_cast<char*>(result.cubin.data())), "nvrtcGetCUBIN");
  Check(api, api.GetPTXSize(program.get(), &ptx_size), "nvrtcGetPTXSize");
  result.ptx.resize(ptx_size);
  if (ptx_size) Check(api, api.GetPTX(program.get(), &result.ptx[0]), "nvrtcGetPTX");
  while (!result.ptx.empty() && result.ptx.back() == '\0') result.ptx.pop_back();
  AGATE_REQUIRE(!result.cubin.empty() && !result.ptx.empty(), kInternal)
      << "NVRTC returned no " << (result.cubin.empty() ? "cubin" : "PTX") << " for " << program_name;
  return result;
}

}  // namespace codegen
}  // namespace agate
