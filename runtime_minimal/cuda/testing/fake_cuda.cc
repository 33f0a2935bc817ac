// The fake CUDA driver (see fake_cuda.h for what it models and what it does not).
#include "runtime_minimal/cuda/testing/fake_cuda.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime_minimal/cuda/driver_api.h"

namespace cu = agate::rt::cu;

namespace {

constexpr uint64_t kDefaultSharedLimit = 48 * 1024;

struct FakeDevice {
  int arch = 80;
  uint64_t memory = uint64_t{16} << 30;
  uint64_t used = 0;
};

struct FakeFunction {
  std::string name;
  int num_params = 0;
  int registers = 32;
  int static_shared = 0;
  int max_dynamic_shared = 0;  // set by cuFuncSetAttribute; 0: the default limit applies
};

struct FakeModule {
  int device = 0;
  std::vector<std::unique_ptr<FakeFunction>> functions;
};

struct Node {
  enum Kind { kKernel, kCopy, kEvent } kind = kKernel;
  FakeFunction* function = nullptr;
  std::vector<uint64_t> params;
  uint64_t blocks = 1;
  uint64_t dst = 0, src = 0, bytes = 0;  // copies (host or device addresses)
  struct FakeEvent* event = nullptr;
};

struct FakeEvent {
  bool recorded = false;
  uint64_t time_ns = 0;
};

struct FakeStream {
  int device = 0;
  bool capturing = false;
  bool capture_invalid = false;
  int capture_mode = 0;
  std::thread::id capture_thread;
  cu::Result capture_error = cu::kSuccess;
  std::vector<Node> captured;
};

struct FakeGraph {
  std::vector<Node> nodes;
};

struct FakeContext {
  int device = 0;
};

struct Allocation {
  uint64_t size = 0;
  int device = 0;
};

struct Injection {
  int after = 0;
  cu::Result result = cu::kSuccess;
};

struct Fake {
  std::mutex mutex;
  bool configured = false;
  bool initialized = false;
  cu::Result init_error = cu::kSuccess;
  int ptx_isa = 90;
  std::vector<FakeDevice> devices;
  std::vector<std::unique_ptr<FakeContext>> contexts;
  std::map<uint64_t, Allocation> allocations;  // by base address
  std::map<std::string, Injection> injections;
  std::vector<FakeModule*> modules;  // loaded, oldest first
  bool capture_supported = true;
  cu::Result sticky = cu::kSuccess;
  uint64_t clock_ns = 0;
  agate_fake_cuda_kernel_fn hook = nullptr;
  void* hook_user = nullptr;
  agate_fake_cuda_stats stats = {};
};

Fake& F() {
  static Fake* fake = new Fake();
  return *fake;
}

thread_local FakeContext* g_current = nullptr;

uint64_t ParseBytes(const std::string& text, bool* ok) {
  char* end = nullptr;
  const unsigned long long value = strtoull(text.c_str(), &end, 10);
  uint64_t scale = 1;
  if (*end == 'K') scale = uint64_t{1} << 10;
  if (*end == 'M') scale = uint64_t{1} << 20;
  if (*end == 'G') scale = uint64_t{1} << 30;
  if (end == text.c_str() || (*end != '\0' && end[1] != '\0')) *ok = false;
  return value * scale;
}

// Parses the spec of agate_fake_cuda_configure into `fake`; false when malformed.
bool ParseSpec(Fake& fake, const std::string& spec) {
  std::vector<FakeDevice> devices;
  size_t start = 0;
  bool ok = true;
  bool first = true;
  while (start <= spec.size() && ok) {
    const size_t end = std::min(spec.find(';', start), spec.size());
    const std::string part = spec.substr(start, end - start);
    if (first) {
      first = false;
      if (part != "none") {
        size_t at = 0;
        while (at <= part.size() && ok) {
          const size_t comma = std::min(part.find(',', at), part.size());
          const std::string device = part.substr(at, comma - at);
          const size_t colon = device.find(':');
          FakeDevice d;
          d.arch = atoi(device.substr(0, colon).c_str());
          if (colon != std::string::npos) d.memory = ParseBytes(device.substr(colon + 1), &ok);
          if (d.arch < 10) ok = false;
          devices.push_back(d);
          at = comma + 1;
        }
      }
    } else if (part.rfind("init=", 0) == 0) {
      fake.init_error = atoi(part.c_str() + 5);
    } else if (part.rfind("ptx_isa=", 0) == 0) {
      fake.ptx_isa = atoi(part.c_str() + 8);
    } else if (!part.empty()) {
      ok = false;
    }
    start = end + 1;
  }
  if (ok) fake.devices = devices;
  return ok;
}

int OptinShared(int arch) {
  switch (arch) {
    case 70: return 96 * 1024;
    case 75: return 64 * 1024;
    case 80: return 163 * 1024;
    case 86:
    case 87:
    case 89: return 99 * 1024;
    case 90: return 227 * 1024;
    default: return arch >= 100 ? 227 * 1024 : 48 * 1024;
  }
}

// The pending injection for `name` fires on this call: its result, else success.
cu::Result Injected(Fake& f, const char* name) {
  auto it = f.injections.find(name);
  if (it == f.injections.end()) return cu::kSuccess;
  if (it->second.after > 0) {
    --it->second.after;
    return cu::kSuccess;
  }
  const cu::Result result = it->second.result;
  f.injections.erase(it);
  return result;
}

#define FAKE_ENTRY(name)                          \
  Fake& f = F();                                  \
  std::lock_guard<std::mutex> lock(f.mutex);      \
  if (cu::Result injected = Injected(f, name)) { \
    return injected;                              \
  }

#define FAKE_NEEDS_INIT() \
  if (!f.initialized) return cu::kErrorNotInitialized

#define FAKE_NEEDS_CONTEXT()                   \
  FAKE_NEEDS_INIT();                           \
  if (g_current == nullptr) return cu::kErrorInvalidContext

// The allocation holding [address, address + bytes), or NULL.
const Allocation* Find(Fake& f, uint64_t address, uint64_t bytes, uint64_t* base = nullptr) {
  auto it = f.allocations.upper_bound(address);
  if (it == f.allocations.begin()) return nullptr;
  --it;
  if (address < it->first || address - it->first > it->second.size || bytes > it->second.size - (address - it->first)) {
    return nullptr;
  }
  if (bytes == 0 && address == it->first + it->second.size) return nullptr;  // one past the end
  if (base != nullptr) *base = it->first;
  return &it->second;
}

std::vector<FakeStream*>& Streams() {
  static std::vector<FakeStream*>* streams = new std::vector<FakeStream*>();
  return *streams;
}

// True (and the capture invalidated) when the calling thread is capturing: an
// unsafe call such as a synchronous copy or an allocation was made.
bool UnsafeDuringCapture() {
  for (FakeStream* s : Streams()) {
    if (s->capturing && s->capture_mode != cu::kStreamCaptureModeRelaxed &&
        s->capture_thread == std::this_thread::get_id()) {
      s->capture_invalid = true;
      return true;
    }
  }
  return false;
}

void Execute(Fake& f, const Node& node, int device) {
  if (node.kind == Node::kEvent) {
    node.event->recorded = true;
    node.event->time_ns = f.clock_ns;
    ++f.stats.events_recorded;
    return;
  }
  if (node.kind == Node::kCopy) {
    memcpy(reinterpret_cast<void*>(node.dst), reinterpret_cast<const void*>(node.src), node.bytes);
    return;
  }
  ++f.stats.kernel_executions;
  f.clock_ns += 1000 + 10 * node.blocks;
  if (f.sticky != cu::kSuccess) return;  // a faulted context runs nothing
  for (uint64_t p : node.params) {
    const Allocation* a = Find(f, p, 0);
    if (p != 0 && (a == nullptr || a->device != device)) {
      f.sticky = cu::kErrorIllegalAddress;
      return;
    }
  }
  if (f.hook != nullptr) {
    const int result = f.hook(node.function->name.c_str(), node.params.data(), static_cast<int>(node.params.size()),
                              f.hook_user);
    if (result != 0) f.sticky = result;
  }
}

// ---- image parsing --------------------------------------------------------------

template <typename T>
bool Read(const std::vector<uint8_t>& data, uint64_t offset, T* out) {
  if (offset > data.size() || sizeof(T) > data.size() - offset) return false;
  memcpy(out, data.data() + offset, sizeof(T));
  return true;
}

struct ParsedImage {
  bool cubin = false;
  int arch = 0;
  int ptx_version = 0;  // major * 10 + minor
  std::vector<FakeFunction> functions;
};

// A cubin: ELF64, EM_CUDA (190). The arch is e_flags' low byte (ELF ABI
// version < 8) or its second byte (ABI version 8, CUDA 12.8 and later).
bool ParseCubin(const std::vector<uint8_t>& d, ParsedImage* out) {
  uint16_t machine = 0;
  uint32_t flags = 0;
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  if (d.size() < 64 || d[4] != 2 || !Read(d, 18, &machine) || machine != 190 || !Read(d, 48, &flags) ||
      !Read(d, 40, &shoff) || !Read(d, 58, &shentsize) || !Read(d, 60, &shnum) || !Read(d, 62, &shstrndx) ||
      shentsize < 64 || shstrndx >= shnum) {
    return false;
  }
  out->cubin = true;
  out->arch = d[8] >= 8 ? static_cast<int>((flags >> 8) & 0xff) : static_cast<int>(flags & 0xff);
  struct Section {
    uint32_t name, type;
    uint64_t offset, size;
    uint32_t link;
    uint64_t entsize;
  };
  std::vector<Section> sections(shnum);
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t at = shoff + uint64_t{i} * shentsize;
    Section& s = sections[i];
    if (!Read(d, at, &s.name) || !Read(d, at + 4, &s.type) || !Read(d, at + 24, &s.offset) ||
        !Read(d, at + 32, &s.size) || !Read(d, at + 40, &s.link) || !Read(d, at + 56, &s.entsize)) {
      return false;
    }
    if (s.offset > d.size() || s.size > d.size() - s.offset) return false;
  }
  auto string_at = [&](const Section& table, uint32_t offset) -> std::string {
    if (offset >= table.size) return "";
    const char* begin = reinterpret_cast<const char*>(d.data() + table.offset + offset);
    return std::string(begin, strnlen(begin, table.size - offset));
  };
  const Section& names = sections[shstrndx];
  std::map<std::string, int> params;  // entry -> parameter count from .nv.info.<entry>
  for (const Section& s : sections) {
    const std::string name = string_at(names, s.name);
    if (name.rfind(".nv.info.", 0) != 0) continue;
    int count = 0;
    for (uint64_t at = s.offset; at + 2 <= s.offset + s.size;) {
      const uint8_t format = d[at];
      const uint8_t attribute = d[at + 1];
      uint16_t size = 0;
      if (format == 0x04) {  // a value of `size` bytes follows
        if (!Read(d, at + 2, &size)) return false;
        if (attribute == 0x17) ++count;  // EIATTR_KPARAM_INFO: one per parameter
        at += 4 + size;
      } else {
        at += 4;  // no value (0x01), a byte (0x02) or a half word (0x03): 4 bytes in all
      }
    }
    params[name.substr(9)] = count;
  }
  for (const Section& s : sections) {
    if (s.type != 2 || s.entsize < 24) continue;  // SHT_SYMTAB
    const Section& strings = sections[s.link < shnum ? s.link : 0];
    for (uint64_t at = s.offset; at + 24 <= s.offset + s.size; at += s.entsize) {
      uint32_t name = 0;
      if (!Read(d, at, &name)) return false;
      const uint8_t info = d[at + 4];
      const uint8_t other = d[at + 5];
      if ((info & 0xf) != 2 || (other & 0x10) == 0) continue;  // STT_FUNC with STO_CUDA_ENTRY
      FakeFunction f;
      f.name = string_at(strings, name);
      f.num_params = params.count(f.name) ? params[f.name] : 0;
      out->functions.push_back(f);
    }
  }
  return true;
}

// PTX: ".version X.Y", ".target sm_XX", ".entry NAME(.param ..., ...)" and the
// fake's own comment "// agate-fake-cuda: NAME regs=R static_shared=S".
bool ParsePtx(const std::string& text, ParsedImage* out) {
  const size_t version = text.find(".version");
  const size_t target = text.find(".target");
  if (version == std::string::npos || target == std::string::npos) return false;
  int major = 0, minor = 0;
  if (sscanf(text.c_str() + version, ".version %d.%d", &major, &minor) != 2) return false;
  out->ptx_version = major * 10 + minor;
  const size_t sm = text.find("sm_", target);
  if (sm == std::string::npos) return false;
  out->arch = atoi(text.c_str() + sm + 3);
  for (size_t at = text.find(".entry"); at != std::string::npos; at = text.find(".entry", at + 6)) {
    size_t name_begin = at + 6;
    while (name_begin < text.size() && (text[name_begin] == ' ' || text[name_begin] == '\t')) ++name_begin;
    size_t name_end = name_begin;
    while (name_end < text.size() && (isalnum(static_cast<unsigned char>(text[name_end])) || text[name_end] == '_' ||
                                      text[name_end] == '$')) {
      ++name_end;
    }
    FakeFunction f;
    f.name = text.substr(name_begin, name_end - name_begin);
    const size_t open = text.find('(', name_end);
    const size_t close = text.find(')', name_end);
    if (open != std::string::npos && close != std::string::npos && open < close) {
      for (size_t p = text.find(".param", open); p != std::string::npos && p < close; p = text.find(".param", p + 6)) {
        ++f.num_params;
      }
    }
    const std::string marker = "// agate-fake-cuda: " + f.name + " ";
    const size_t note = text.find(marker);
    if (note != std::string::npos) {
      sscanf(text.c_str() + note + marker.size(), "regs=%d static_shared=%d", &f.registers, &f.static_shared);
    }
    out->functions.push_back(f);
  }
  return !out->functions.empty();
}

struct ErrorText {
  cu::Result result;
  const char* name;
  const char* text;  // as the real driver words it
};

const ErrorText kErrors[] = {
    {cu::kSuccess, "CUDA_SUCCESS", "no error"},
    {cu::kErrorInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {cu::kErrorOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {cu::kErrorNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {cu::kErrorNoDevice, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {cu::kErrorInvalidDevice, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {cu::kErrorInvalidImage, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {cu::kErrorInvalidContext, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {cu::kErrorNoBinaryForGpu, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {cu::kErrorInvalidPtx, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {cu::kErrorUnsupportedPtxVersion, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {cu::kErrorInvalidHandle, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {cu::kErrorNotFound, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {cu::kErrorIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {cu::kErrorLaunchOutOfResources, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {cu::kErrorLaunchFailed, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {cu::kErrorNotSupported, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {cu::kErrorStreamCaptureUnsupported, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {cu::kErrorStreamCaptureInvalidated, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {cu::kErrorUnknown, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* ErrorOf(cu::Result r) {
  for (const ErrorText& e : kErrors) {
    if (e.result == r) return &e;
  }
  return nullptr;
}

cu::Result Copy(Fake& f, uint64_t dst, bool dst_device, uint64_t src, bool src_device, uint64_t bytes,
                FakeStream* stream) {
  if ((dst_device && Find(f, dst, bytes) == nullptr) || (src_device && Find(f, src, bytes) == nullptr)) {
    return cu::kErrorInvalidValue;
  }
  if (f.sticky != cu::kSuccess) return f.sticky;
  if (stream != nullptr && stream->capturing) {
    Node node;
    node.kind = Node::kCopy;
    node.dst = dst;
    node.src = src;
    node.bytes = bytes;
    stream->captured.push_back(node);
    return cu::kSuccess;
  }
  if (bytes != 0) memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  if (dst_device && src_device) {
    ++f.stats.dtod_copies;
  } else if (dst_device) {
    ++f.stats.htod_copies;
    f.stats.htod_bytes += bytes;
  } else {
    ++f.stats.dtoh_copies;
  }
  return cu::kSuccess;
}

}  // namespace

extern "C" {

// ---- control API (fake_cuda.h) -----------------------------------------------------

int agate_fake_cuda_configure(const char* spec) {
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (f.initialized || spec == nullptr || !ParseSpec(f, spec)) return -1;
  f.configured = true;
  return 0;
}

void agate_fake_cuda_fail_call(const char* name, int after, int result) {
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (result == 0) {
    f.injections.erase(name);
  } else {
    f.injections[name] = Injection{after, result};
  }
}

void agate_fake_cuda_reset(void) {
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mutex);
  const uint64_t live_allocations = f.stats.live_allocations;
  const uint64_t live_bytes = f.stats.live_bytes;
  const uint64_t live_modules = f.stats.live_modules;
  const uint64_t live_graph_execs = f.stats.live_graph_execs;
  f.stats = {};
  f.stats.live_allocations = live_allocations;
  f.stats.live_bytes = live_bytes;
  f.stats.live_modules = live_modules;
  f.stats.live_graph_execs = live_graph_execs;
  f.stats.last_image_cubin = -1;
  f.injections.clear();
  f.hook = nullptr;
  f.hook_user = nullptr;
  f.sticky = cu::kSuccess;
  f.capture_supported = true;
}

void agate_fake_cuda_set_capture_supported(int supported) {
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.capture_supported = supported != 0;
}

void agate_fake_cuda_get_stats(agate_fake_cuda_stats* out) {
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mutex);
  *out = f.stats;
}

int agate_fake_cuda_dynamic_shared_limit(const char* entry) {
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mutex);
  for (auto m = f.modules.rbegin(); m != f.modules.rend(); ++m) {
    for (const auto& function : (*m)->functions) {
      if (function->name == entry) return function->max_dynamic_shared;
    }
  }
  return -1;
}

void agate_fake_cuda_set_kernel_hook(agate_fake_cuda_kernel_fn hook, void* user) {
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.hook = hook;
  f.hook_user = user;
}

uint64_t agate_fake_cuda_alloc(int device, uint64_t bytes) {
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mutex);
  void* p = nullptr;
  if (device < 0 || device >= static_cast<int>(f.devices.size()) || posix_memalign(&p, 256, bytes ? bytes : 1) != 0) {
    return 0;
  }
  memset(p, 0, bytes ? bytes : 1);
  const uint64_t address = reinterpret_cast<uintptr_t>(p);
  f.allocations[address] = Allocation{bytes, device};
  return address;
}

void agate_fake_cuda_free(uint64_t address) {
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (f.allocations.erase(address) != 0) free(reinterpret_cast<void*>(address));
}

int agate_fake_cuda_run_test_kernel(const char* entry, const uint64_t* params, int num_params, void*) {
  constexpr int n = 256;
  auto at = [](uint64_t address) { return reinterpret_cast<float*>(static_cast<uintptr_t>(address)); };
  const std::string name = entry;
  if (name == "agate_cuda_add" && num_params == 3) {
    for (int i = 0; i < n; ++i) at(params[2])[i] = at(params[0])[i] + at(params[1])[i];
  } else if (name == "agate_cuda_twice_via_workspace" && num_params == 3) {
    for (int i = 0; i < n; ++i) {
      at(params[2])[i] = 2.0f * at(params[0])[i];
      at(params[1])[i] = at(params[2])[i];
    }
  } else if (name == "agate_cuda_copy_via_shared" && num_params == 2) {
    for (int i = 0; i < n; ++i) at(params[1])[i] = at(params[0])[n - 1 - i];
  } else {
    return cu::kErrorLaunchFailed;
  }
  return 0;
}

// ---- the driver API ------------------------------------------------------------

cu::Result cuInit(unsigned int flags) {
  FAKE_ENTRY("cuInit");
  if (flags != 0) return cu::kErrorInvalidValue;
  if (!f.configured) {
    const char* spec = getenv("AGATE_FAKE_CUDA_DEVICES");
    if (spec == nullptr || !ParseSpec(f, spec)) f.devices = {FakeDevice{}};
    f.configured = true;
    f.stats.last_image_cubin = -1;
    const char* twins = getenv("AGATE_FAKE_CUDA_TEST_KERNELS");
    if (twins != nullptr && strcmp(twins, "1") == 0) f.hook = agate_fake_cuda_run_test_kernel;
  }
  if (f.init_error != cu::kSuccess) return f.init_error;
  if (f.devices.empty()) return cu::kErrorNoDevice;
  if (!f.initialized) {
    for (size_t i = 0; i < f.devices.size(); ++i) {
      f.contexts.push_back(std::unique_ptr<FakeContext>(new FakeContext{static_cast<int>(i)}));
    }
  }
  f.initialized = true;
  return cu::kSuccess;
}

cu::Result cuDriverGetVersion(int* version) {
  FAKE_ENTRY("cuDriverGetVersion");
  *version = 13000;
  return cu::kSuccess;
}

cu::Result cuDeviceGetCount(int* count) {
  FAKE_ENTRY("cuDeviceGetCount");
  FAKE_NEEDS_INIT();
  *count = static_cast<int>(f.devices.size());
  return cu::kSuccess;
}

cu::Result cuDeviceGet(cu::Device* device, int ordinal) {
  FAKE_ENTRY("cuDeviceGet");
  FAKE_NEEDS_INIT();
  if (ordinal < 0 || ordinal >= static_cast<int>(f.devices.size())) return cu::kErrorInvalidDevice;
  *device = ordinal;
  return cu::kSuccess;
}

cu::Result cuDeviceGetAttribute(int* value, cu::DeviceAttribute attribute, cu::Device device) {
  FAKE_ENTRY("cuDeviceGetAttribute");
  FAKE_NEEDS_INIT();
  if (device < 0 || device >= static_cast<int>(f.devices.size())) return cu::kErrorInvalidDevice;
  const FakeDevice& d = f.devices[device];
  switch (attribute) {
    case cu::kDeviceAttributeComputeCapabilityMajor: *value = d.arch / 10; return cu::kSuccess;
    case cu::kDeviceAttributeComputeCapabilityMinor: *value = d.arch % 10; return cu::kSuccess;
    case cu::kDeviceAttributeMaxThreadsPerBlock: *value = 1024; return cu::kSuccess;
    case cu::kDeviceAttributeMaxRegistersPerBlock: *value = 65536; return cu::kSuccess;
    case cu::kDeviceAttributeMaxSharedMemoryPerBlockOptin: *value = OptinShared(d.arch); return cu::kSuccess;
    default: return cu::kErrorInvalidValue;
  }
}

cu::Result cuDeviceGetName(char* name, int length, cu::Device device) {
  FAKE_ENTRY("cuDeviceGetName");
  FAKE_NEEDS_INIT();
  if (device < 0 || device >= static_cast<int>(f.devices.size()) || length <= 0) return cu::kErrorInvalidValue;
  snprintf(name, static_cast<size_t>(length), "agate fake GPU sm_%d", f.devices[device].arch);
  return cu::kSuccess;
}

cu::Result cuDeviceTotalMem_v2(size_t* bytes, cu::Device device) {
  FAKE_ENTRY("cuDeviceTotalMem_v2");
  FAKE_NEEDS_INIT();
  if (device < 0 || device >= static_cast<int>(f.devices.size())) return cu::kErrorInvalidDevice;
  *bytes = static_cast<size_t>(f.devices[device].memory);
  return cu::kSuccess;
}

cu::Result cuDevicePrimaryCtxRetain(cu::Context* context, cu::Device device) {
  FAKE_ENTRY("cuDevicePrimaryCtxRetain");
  FAKE_NEEDS_INIT();
  if (device < 0 || device >= static_cast<int>(f.devices.size())) return cu::kErrorInvalidDevice;
  *context = reinterpret_cast<cu::Context>(f.contexts[device].get());
  return cu::kSuccess;
}

cu::Result cuDevicePrimaryCtxRelease_v2(cu::Device device) {
  FAKE_ENTRY("cuDevicePrimaryCtxRelease_v2");
  FAKE_NEEDS_INIT();
  return device >= 0 && device < static_cast<int>(f.devices.size()) ? cu::kSuccess : cu::kErrorInvalidDevice;
}

cu::Result cuCtxSetCurrent(cu::Context context) {
  FAKE_ENTRY("cuCtxSetCurrent");
  FAKE_NEEDS_INIT();
  g_current = reinterpret_cast<FakeContext*>(context);
  return cu::kSuccess;
}

cu::Result cuModuleLoadData(cu::Module* module, const void* image) {
  FAKE_ENTRY("cuModuleLoadData");
  FAKE_NEEDS_CONTEXT();
  if (module == nullptr || image == nullptr) return cu::kErrorInvalidValue;
  const FakeDevice& device = f.devices[g_current->device];
  ParsedImage parsed;
  const uint8_t* bytes = static_cast<const uint8_t*>(image);
  if (bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F') {
    // The driver reads the ELF headers to know its size; the fake reads what the headers say.
    uint64_t shoff = 0;
    uint16_t shentsize = 0, shnum = 0;
    memcpy(&shoff, bytes + 40, 8);
    memcpy(&shentsize, bytes + 58, 2);
    memcpy(&shnum, bytes + 60, 2);
    const uint64_t size = shoff + uint64_t{shentsize} * shnum;
    if (size > (uint64_t{1} << 30) || !ParseCubin(std::vector<uint8_t>(bytes, bytes + size), &parsed)) {
      return cu::kErrorInvalidImage;
    }
    if (parsed.arch / 10 != device.arch / 10 || parsed.arch > device.arch) return cu::kErrorNoBinaryForGpu;
  } else {
    if (!ParsePtx(static_cast<const char*>(image), &parsed)) return cu::kErrorInvalidImage;
    if (parsed.ptx_version > f.ptx_isa) return cu::kErrorUnsupportedPtxVersion;
    if (parsed.arch > device.arch) return cu::kErrorInvalidPtx;
  }
  FakeModule* m = new FakeModule();
  m->device = g_current->device;
  for (const FakeFunction& function : parsed.functions) {
    m->functions.push_back(std::unique_ptr<FakeFunction>(new FakeFunction(function)));
  }
  f.modules.push_back(m);
  ++f.stats.module_loads;
  ++f.stats.live_modules;
  f.stats.last_image_cubin = parsed.cubin ? 1 : 0;
  f.stats.last_image_arch = parsed.arch;
  *module = reinterpret_cast<cu::Module>(m);
  return cu::kSuccess;
}

cu::Result cuModuleUnload(cu::Module module) {
  FAKE_ENTRY("cuModuleUnload");
  FAKE_NEEDS_INIT();
  FakeModule* m = reinterpret_cast<FakeModule*>(module);
  for (auto it = f.modules.begin(); it != f.modules.end(); ++it) {
    if (*it == m) {
      f.modules.erase(it);
      delete m;
      --f.stats.live_modules;
      return cu::kSuccess;
    }
  }
  return cu::kErrorInvalidHandle;
}

cu::Result cuModuleGetFunction(cu::Function* function, cu::Module module, const char* name) {
  FAKE_ENTRY("cuModuleGetFunction");
  FAKE_NEEDS_INIT();
  FakeModule* m = reinterpret_cast<FakeModule*>(module);
  if (m == nullptr || name == nullptr) return cu::kErrorInvalidValue;
  for (const auto& candidate : m->functions) {
    if (candidate->name == name) {
      *function = reinterpret_cast<cu::Function>(candidate.get());
      return cu::kSuccess;
    }
  }
  return cu::kErrorNotFound;
}

cu::Result cuFuncGetAttribute(int* value, cu::FunctionAttribute attribute, cu::Function function) {
  FAKE_ENTRY("cuFuncGetAttribute");
  FAKE_NEEDS_INIT();
  const FakeFunction& fn = *reinterpret_cast<FakeFunction*>(function);
  switch (attribute) {
    case cu::kFuncAttributeMaxThreadsPerBlock: *value = std::min(1024, 65536 / fn.registers / 32 * 32); break;
    case cu::kFuncAttributeSharedSizeBytes: *value = fn.static_shared; break;
    case cu::kFuncAttributeNumRegs: *value = fn.registers; break;
    case cu::kFuncAttributeMaxDynamicSharedSizeBytes:
      *value = fn.max_dynamic_shared != 0 ? fn.max_dynamic_shared
                                          : static_cast<int>(kDefaultSharedLimit) - fn.static_shared;
      break;
    default: return cu::kErrorInvalidValue;
  }
  return cu::kSuccess;
}

cu::Result cuFuncSetAttribute(cu::Function function, cu::FunctionAttribute attribute, int value) {
  FAKE_ENTRY("cuFuncSetAttribute");
  FAKE_NEEDS_CONTEXT();
  FakeFunction& fn = *reinterpret_cast<FakeFunction*>(function);
  if (attribute != cu::kFuncAttributeMaxDynamicSharedSizeBytes) return cu::kErrorInvalidValue;
  if (value < 0 || value + fn.static_shared > OptinShared(f.devices[g_current->device].arch)) {
    return cu::kErrorInvalidValue;
  }
  fn.max_dynamic_shared = value;
  ++f.stats.func_set_attribute_calls;
  return cu::kSuccess;
}

cu::Result cuMemAlloc_v2(cu::DevicePtr* pointer, size_t bytes) {
  FAKE_ENTRY("cuMemAlloc_v2");
  FAKE_NEEDS_CONTEXT();
  if (UnsafeDuringCapture()) return cu::kErrorStreamCaptureUnsupported;
  if (bytes == 0) return cu::kErrorInvalidValue;
  FakeDevice& device = f.devices[g_current->device];
  if (bytes > device.memory - device.used) return cu::kErrorOutOfMemory;
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes) != 0) return cu::kErrorOutOfMemory;
  memset(p, 0, bytes);  // deterministic for tests (a real GPU's memory is not cleared)
  *pointer = reinterpret_cast<uintptr_t>(p);
  f.allocations[*pointer] = Allocation{bytes, g_current->device};
  device.used += bytes;
  ++f.stats.allocations;
  ++f.stats.live_allocations;
  f.stats.live_bytes += bytes;
  return cu::kSuccess;
}

cu::Result cuMemFree_v2(cu::DevicePtr pointer) {
  FAKE_ENTRY("cuMemFree_v2");
  FAKE_NEEDS_CONTEXT();
  if (pointer == 0) return cu::kSuccess;
  if (UnsafeDuringCapture()) return cu::kErrorStreamCaptureUnsupported;
  auto it = f.allocations.find(pointer);
  if (it == f.allocations.end()) return cu::kErrorInvalidValue;
  f.devices[it->second.device].used -= it->second.size;
  f.stats.live_bytes -= it->second.size;
  --f.stats.live_allocations;
  ++f.stats.frees;
  f.allocations.erase(it);
  free(reinterpret_cast<void*>(pointer));
  return cu::kSuccess;
}

cu::Result cuMemGetAddressRange_v2(cu::DevicePtr* base, size_t* bytes, cu::DevicePtr pointer) {
  FAKE_ENTRY("cuMemGetAddressRange_v2");
  FAKE_NEEDS_CONTEXT();
  uint64_t start = 0;
  const Allocation* a = Find(f, pointer, 0, &start);
  if (a == nullptr) return cu::kErrorNotFound;
  if (base != nullptr) *base = start;
  if (bytes != nullptr) *bytes = static_cast<size_t>(a->size);
  return cu::kSuccess;
}

cu::Result cuPointerGetAttribute(void* data, cu::PointerAttribute attribute, cu::DevicePtr pointer) {
  FAKE_ENTRY("cuPointerGetAttribute");
  FAKE_NEEDS_INIT();
  const Allocation* a = Find(f, pointer, 0);
  if (a == nullptr) return cu::kErrorInvalidValue;
  if (attribute == cu::kPointerAttributeDeviceOrdinal) {
    *static_cast<int*>(data) = a->device;
  } else if (attribute == cu::kPointerAttributeMemoryType) {
    *static_cast<unsigned int*>(data) = cu::kMemoryTypeDevice;
  } else {
    return cu::kErrorInvalidValue;
  }
  return cu::kSuccess;
}

cu::Result cuMemcpyHtoD_v2(cu::DevicePtr dst, const void* src, size_t bytes) {
  FAKE_ENTRY("cuMemcpyHtoD_v2");
  FAKE_NEEDS_CONTEXT();
  if (UnsafeDuringCapture()) return cu::kErrorStreamCaptureUnsupported;
  return Copy(f, dst, true, reinterpret_cast<uintptr_t>(src), false, bytes, nullptr);
}

cu::Result cuMemcpyDtoH_v2(void* dst, cu::DevicePtr src, size_t bytes) {
  FAKE_ENTRY("cuMemcpyDtoH_v2");
  FAKE_NEEDS_CONTEXT();
  if (UnsafeDuringCapture()) return cu::kErrorStreamCaptureUnsupported;
  return Copy(f, reinterpret_cast<uintptr_t>(dst), false, src, true, bytes, nullptr);
}

cu::Result cuMemcpyHtoDAsync_v2(cu::DevicePtr dst, const void* src, size_t bytes, cu::Stream stream) {
  FAKE_ENTRY("cuMemcpyHtoDAsync_v2");
  FAKE_NEEDS_CONTEXT();
  return Copy(f, dst, true, reinterpret_cast<uintptr_t>(src), false, bytes, reinterpret_cast<FakeStream*>(stream));
}

cu::Result cuMemcpyDtoHAsync_v2(void* dst, cu::DevicePtr src, size_t bytes, cu::Stream stream) {
  FAKE_ENTRY("cuMemcpyDtoHAsync_v2");
  FAKE_NEEDS_CONTEXT();
  return Copy(f, reinterpret_cast<uintptr_t>(dst), false, src, true, bytes, reinterpret_cast<FakeStream*>(stream));
}

cu::Result cuMemcpyDtoDAsync_v2(cu::DevicePtr dst, cu::DevicePtr src, size_t bytes, cu::Stream stream) {
  FAKE_ENTRY("cuMemcpyDtoDAsync_v2");
  FAKE_NEEDS_CONTEXT();
  return Copy(f, dst, true, src, true, bytes, reinterpret_cast<FakeStream*>(stream));
}

cu::Result cuStreamCreate(cu::Stream* stream, unsigned int flags) {
  FAKE_ENTRY("cuStreamCreate");
  FAKE_NEEDS_CONTEXT();
  (void)flags;
  FakeStream* s = new FakeStream();
  s->device = g_current->device;
  Streams().push_back(s);
  *stream = reinterpret_cast<cu::Stream>(s);
  return cu::kSuccess;
}

cu::Result cuStreamDestroy_v2(cu::Stream stream) {
  FAKE_ENTRY("cuStreamDestroy_v2");
  FAKE_NEEDS_INIT();
  FakeStream* s = reinterpret_cast<FakeStream*>(stream);
  for (auto it = Streams().begin(); it != Streams().end(); ++it) {
    if (*it == s) {
      Streams().erase(it);
      delete s;
      return cu::kSuccess;
    }
  }
  return cu::kErrorInvalidHandle;
}

cu::Result cuStreamSynchronize(cu::Stream stream) {
  FAKE_ENTRY("cuStreamSynchronize");
  FAKE_NEEDS_CONTEXT();
  FakeStream* s = reinterpret_cast<FakeStream*>(stream);
  if (s != nullptr && s->capturing) {
    s->capture_invalid = true;
    return cu::kErrorStreamCaptureUnsupported;
  }
  return f.sticky;
}

cu::Result cuStreamBeginCapture_v2(cu::Stream stream, cu::StreamCaptureMode mode) {
  FAKE_ENTRY("cuStreamBeginCapture_v2");
  FAKE_NEEDS_CONTEXT();
  FakeStream* s = reinterpret_cast<FakeStream*>(stream);
  if (s == nullptr) return cu::kErrorStreamCaptureUnsupported;  // the legacy stream cannot be captured
  if (!f.capture_supported) return cu::kErrorStreamCaptureUnsupported;
  if (s->capturing) return cu::kErrorInvalidValue;
  s->capturing = true;
  s->capture_invalid = false;
  s->capture_mode = mode;
  s->capture_thread = std::this_thread::get_id();
  s->captured.clear();
  return cu::kSuccess;
}

cu::Result cuStreamEndCapture(cu::Stream stream, cu::Graph* graph) {
  FAKE_ENTRY("cuStreamEndCapture");
  FAKE_NEEDS_CONTEXT();
  FakeStream* s = reinterpret_cast<FakeStream*>(stream);
  if (s == nullptr || !s->capturing) return cu::kErrorInvalidValue;
  s->capturing = false;
  *graph = nullptr;
  if (s->capture_invalid) return cu::kErrorStreamCaptureInvalidated;
  FakeGraph* g = new FakeGraph();
  g->nodes.swap(s->captured);
  *graph = reinterpret_cast<cu::Graph>(g);
  ++f.stats.captures;
  return cu::kSuccess;
}

cu::Result cuGraphInstantiateWithFlags(cu::GraphExec* exec, cu::Graph graph, unsigned long long flags) {
  FAKE_ENTRY("cuGraphInstantiateWithFlags");
  FAKE_NEEDS_CONTEXT();
  if (graph == nullptr || flags != 0) return cu::kErrorInvalidValue;
  FakeGraph* copy = new FakeGraph(*reinterpret_cast<FakeGraph*>(graph));
  *exec = reinterpret_cast<cu::GraphExec>(copy);
  ++f.stats.graph_instantiations;
  ++f.stats.live_graph_execs;
  return cu::kSuccess;
}

cu::Result cuGraphLaunch(cu::GraphExec exec, cu::Stream stream) {
  FAKE_ENTRY("cuGraphLaunch");
  FAKE_NEEDS_CONTEXT();
  if (exec == nullptr) return cu::kErrorInvalidValue;
  if (f.sticky != cu::kSuccess) return f.sticky;
  const FakeStream* s = reinterpret_cast<FakeStream*>(stream);
  const int device = s != nullptr ? s->device : g_current->device;
  for (const Node& node : reinterpret_cast<FakeGraph*>(exec)->nodes) Execute(f, node, device);
  ++f.stats.graph_launches;
  return cu::kSuccess;
}

cu::Result cuGraphExecDestroy(cu::GraphExec exec) {
  FAKE_ENTRY("cuGraphExecDestroy");
  FAKE_NEEDS_INIT();
  delete reinterpret_cast<FakeGraph*>(exec);
  --f.stats.live_graph_execs;
  return cu::kSuccess;
}

cu::Result cuGraphDestroy(cu::Graph graph) {
  FAKE_ENTRY("cuGraphDestroy");
  FAKE_NEEDS_INIT();
  delete reinterpret_cast<FakeGraph*>(graph);
  return cu::kSuccess;
}

cu::Result cuEventCreate(cu::Event* event, unsigned int flags) {
  FAKE_ENTRY("cuEventCreate");
  FAKE_NEEDS_CONTEXT();
  (void)flags;
  *event = reinterpret_cast<cu::Event>(new FakeEvent());
  return cu::kSuccess;
}

cu::Result cuEventDestroy_v2(cu::Event event) {
  FAKE_ENTRY("cuEventDestroy_v2");
  FAKE_NEEDS_INIT();
  delete reinterpret_cast<FakeEvent*>(event);
  return cu::kSuccess;
}

cu::Result cuEventRecord(cu::Event event, cu::Stream stream) {
  FAKE_ENTRY("cuEventRecord");
  FAKE_NEEDS_CONTEXT();
  FakeStream* s = reinterpret_cast<FakeStream*>(stream);
  Node node;
  node.kind = Node::kEvent;
  node.event = reinterpret_cast<FakeEvent*>(event);
  if (s != nullptr && s->capturing) {
    s->captured.push_back(node);
  } else {
    Execute(f, node, g_current->device);
  }
  return cu::kSuccess;
}

cu::Result cuEventSynchronize(cu::Event event) {
  FAKE_ENTRY("cuEventSynchronize");
  FAKE_NEEDS_CONTEXT();
  return reinterpret_cast<FakeEvent*>(event)->recorded ? f.sticky : cu::kErrorInvalidHandle;
}

cu::Result cuEventElapsedTime_v2(float* milliseconds, cu::Event start, cu::Event end) {
  FAKE_ENTRY("cuEventElapsedTime_v2");
  FAKE_NEEDS_CONTEXT();
  const FakeEvent* a = reinterpret_cast<FakeEvent*>(start);
  const FakeEvent* b = reinterpret_cast<FakeEvent*>(end);
  if (!a->recorded || !b->recorded) return cu::kErrorInvalidHandle;
  *milliseconds = static_cast<float>(static_cast<double>(b->time_ns - a->time_ns) / 1e6);
  return cu::kSuccess;
}

cu::Result cuLaunchKernel(cu::Function function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                          unsigned int block_x, unsigned int block_y, unsigned int block_z,
                          unsigned int shared_memory_bytes, cu::Stream stream, void** params, void** extra) {
  FAKE_ENTRY("cuLaunchKernel");
  FAKE_NEEDS_CONTEXT();
  FakeStream* s = reinterpret_cast<FakeStream*>(stream);
  FakeFunction* fn = reinterpret_cast<FakeFunction*>(function);
  if (fn == nullptr || extra != nullptr || (fn->num_params > 0 && params == nullptr)) return cu::kErrorInvalidValue;
  if (grid_x == 0 || grid_y == 0 || grid_z == 0 || block_x == 0 || block_y == 0 || block_z == 0) {
    return cu::kErrorInvalidValue;
  }
  const uint64_t threads = uint64_t{block_x} * block_y * block_z;
  const uint64_t max_threads = std::min<uint64_t>(1024, 65536 / fn->registers / 32 * 32);
  const uint64_t shared_limit =
      fn->max_dynamic_shared != 0 ? fn->max_dynamic_shared : kDefaultSharedLimit - fn->static_shared;
  cu::Result result = cu::kSuccess;
  if (threads > max_threads) result = cu::kErrorLaunchOutOfResources;
  if (shared_memory_bytes > shared_limit) result = cu::kErrorInvalidValue;
  if (result == cu::kSuccess && f.sticky != cu::kSuccess) result = f.sticky;
  if (result != cu::kSuccess) {
    if (s != nullptr && s->capturing) s->capture_invalid = true;
    return result;
  }
  Node node;
  node.function = fn;
  node.blocks = uint64_t{grid_x} * grid_y * grid_z;
  for (int p = 0; p < fn->num_params; ++p) {
    uint64_t value = 0;
    memcpy(&value, params[p], sizeof(value));  // every agate kernel parameter is a device address
    node.params.push_back(value);
  }
  ++f.stats.kernel_launches;
  if (s != nullptr && s->capturing) {
    s->captured.push_back(node);
  } else {
    Execute(f, node, s != nullptr ? s->device : g_current->device);
  }
  return cu::kSuccess;
}

cu::Result cuGetErrorName(cu::Result error, const char** name) {
  const ErrorText* e = ErrorOf(error);
  if (e == nullptr) return cu::kErrorInvalidValue;
  *name = e->name;
  return cu::kSuccess;
}

cu::Result cuGetErrorString(cu::Result error, const char** text) {
  const ErrorText* e = ErrorOf(error);
  if (e == nullptr) return cu::kErrorInvalidValue;
  *text = e->text;
  return cu::kSuccess;
}

}  // extern "C"
