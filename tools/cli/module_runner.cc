#include "tools/cli/module_runner.h"

#include <cstring>
#include <random>
#include <set>

#include "agate/runtime.h"
#include "c_api/dlpack_dtype.h"
#include "core/support/error.h"
#include "runtime_minimal/cuda/driver.h"

namespace agate {
namespace cli {
namespace {

// Turns a runtime status into the compiler's error type, with the runtime's message.
void Check(agate_status_t status, const std::string& what) {
  if (status == AGATE_OK) return;
  throw Error(static_cast<StatusCode>(status), what + ": " + agate_last_error_message());
}

TensorDescription Describe(const agate_tensor_info& info) {
  TensorDescription d;
  d.name = info.name;
  d.dtype = FromDLPack(info.dtype);
  d.shape.assign(info.shape, info.shape + info.ndim);
  return d;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

ModuleRunner::ModuleRunner(const std::string& path, int num_threads, int device,
                           const std::vector<uint8_t>& public_key) {
  if (num_threads > 0) Check(agate_runtime_set_num_threads(num_threads), "setting the thread count");
  agate_module_options options{sizeof(agate_module_options), device};
  if (public_key.empty()) {
    Check(agate_module_load_from_file_with_options(path.c_str(), nullptr, &options, &module_),
          "cannot load module '" + path + "'");
  } else {
    Check(agate_module_load_from_file_signed(path.c_str(), nullptr, &options, public_key.data(), &module_),
          "cannot load module '" + path + "'");
  }
  uint32_t n = 0;
  Check(agate_module_num_inputs(module_, &n), "module inputs");
  for (uint32_t i = 0; i < n; ++i) {
    agate_tensor_info info;
    Check(agate_module_input_info(module_, i, &info), "module input");
    inputs_.push_back(Describe(info));
  }
  Check(agate_module_num_outputs(module_, &n), "module outputs");
  for (uint32_t i = 0; i < n; ++i) {
    agate_tensor_info info;
    Check(agate_module_output_info(module_, i, &info), "module output");
    outputs_.push_back(Describe(info));
  }
  Check(agate_executor_create(module_, nullptr, &executor_), "cannot create an executor");
}

ModuleRunner::~ModuleRunner() {
  if (executor_) agate_executor_free(executor_);
  if (module_) agate_module_free(module_);
  const rt::cu::DriverApi* driver = nullptr;
  if (!device_inputs_.empty() && rt::GetCudaDriver(&driver) == AGATE_OK) {
    for (uint64_t address : device_inputs_) driver->MemFree(static_cast<rt::cu::DevicePtr>(address));
  }
}

std::string ModuleRunner::target() const {
  const char* target = nullptr;
  Check(agate_module_target(module_, &target), "module target");
  return target;
}

std::string ModuleRunner::device() const {
  DLDevice where{};
  Check(agate_module_device(module_, &where), "module device");
  return where.device_type == kDLCPU ? "cpu" : "cuda:" + std::to_string(where.device_id);
}

uint64_t ModuleRunner::arena_bytes() const {
  uint64_t bytes = 0;
  Check(agate_executor_arena_bytes(executor_, &bytes), "executor arena");
  return bytes;
}

namespace {

// True when some axis of input `index` may take another extent than its description's (a
// symbolic batch dimension): the runtime then checks the bounds and names them.
bool HasDynamicDims(agate_module_t* module, uint32_t index, size_t ndim) {
  for (size_t axis = 0; axis < ndim; ++axis) {
    agate_dim_info dim;
    if (agate_module_input_dim(module, index, static_cast<int32_t>(axis), &dim) == AGATE_OK &&
        dim.kind != AGATE_DIM_STATIC) {
      return true;
    }
  }
  return false;
}

// A copy of `array` in memory of CUDA device `ordinal`: its device address.
uint64_t CopyToGpu(int32_t ordinal, const npz::Array& array) {
  const rt::cu::DriverApi* driver = nullptr;
  const rt::CudaDevice* device = nullptr;
  Check(rt::GetCudaDriver(&driver), "input '" + array.name + "' on the GPU");
  Check(rt::GetCudaDevice(ordinal, &device), "input '" + array.name + "' on the GPU");
  Check(rt::MakeCurrent(*driver, *device), "input '" + array.name + "' on the GPU");
  rt::cu::DevicePtr address = 0;
  // cuMemAlloc refuses 0 bytes; an empty input still gets an address.
  const size_t bytes = array.data.empty() ? 1 : array.data.size();
  rt::cu::Result r = driver->MemAlloc(&address, bytes);
  AGATE_REQUIRE(r == rt::cu::kSuccess, kResourceExhausted)
      << "cannot allocate " << bytes << " bytes on CUDA device " << ordinal << " for input '" << array.name
      << "' (CUDA error " << r << ")";
  if (!array.data.empty()) r = driver->MemcpyHtoD(address, array.data.data(), array.data.size());
  if (r != rt::cu::kSuccess) {
    driver->MemFree(address);
    AGATE_THROW(kInternal) << "cannot copy input '" << array.name << "' to CUDA device " << ordinal
                           << " (CUDA error " << r << ")";
  }
  return static_cast<uint64_t>(address);
}

}  // namespace

void ModuleRunner::BindInputs(const std::vector<npz::Array>& arrays, bool on_device) {
  DLDevice where{};
  Check(agate_module_device(module_, &where), "module device");
  on_device = on_device && where.device_type == kDLCUDA;
  std::set<std::string> bound;
  for (const npz::Array& array : arrays) {
    uint32_t index = 0;
    if (agate_module_find_input(module_, array.name.c_str(), &index) != AGATE_OK) {
      std::string names;
      for (const auto& in : inputs_) names += (names.empty() ? "" : ", ") + in.name;
      AGATE_THROW(kInvalidArgument) << "the inputs file has '" << array.name
                                    << "', which is not an input of the module (inputs: " << names << ")";
    }
    const TensorDescription& want = inputs_[index];
    const bool shape_ok = array.shape == want.shape || (array.shape.size() == want.shape.size() &&
                                                         HasDynamicDims(module_, index, want.shape.size()));
    AGATE_REQUIRE(array.dtype == want.dtype && shape_ok, kInvalidArgument)
        << "input '" << array.name << "' is " << array.dtype << ShapeText(array.shape) << ", the module expects "
        << want.dtype << ShapeText(want.shape);
    DLTensor tensor;
    std::memset(&tensor, 0, sizeof(tensor));
    tensor.data = const_cast<uint8_t*>(array.data.data());
    tensor.device = DLDevice{kDLCPU, 0};
    if (on_device) {
      device_inputs_.push_back(CopyToGpu(where.device_id, array));
      tensor.data = reinterpret_cast<void*>(static_cast<uintptr_t>(device_inputs_.back()));
      tensor.device = where;
    }
    tensor.ndim = static_cast<int32_t>(array.shape.size());
    tensor.dtype = ToDLPack(array.dtype);
    tensor.shape = const_cast<int64_t*>(array.shape.data());
    Check(agate_executor_set_input(executor_, index, &tensor), "input '" + array.name + "'");
    bound.insert(array.name);
  }
  for (const TensorDescription& in : inputs_) {
    AGATE_REQUIRE(bound.count(in.name), kInvalidArgument)
        << "input '" << in.name << "' (" << in.dtype << ShapeText(in.shape) << ") is missing from the inputs";
  }
}

void ModuleRunner::Run() { Check(agate_executor_run(executor_), "run failed"); }

std::vector<std::string> ModuleRunner::CallKernelNames() const {
  uint32_t count = 0;
  Check(agate_module_num_calls(module_, &count), "plan length");
  std::vector<std::string> names;
  for (uint32_t c = 0; c < count; ++c) {
    const char* name = nullptr;
    Check(agate_module_call_kernel_name(module_, c, &name), "kernel of plan call " + std::to_string(c));
    names.push_back(name);
  }
  return names;
}

std::vector<uint64_t> ModuleRunner::RunProfiled() {
  uint32_t count = 0;
  Check(agate_module_num_calls(module_, &count), "plan length");
  std::vector<uint64_t> ns(count);
  Check(agate_executor_run_profiled(executor_, ns.data(), count), "profiled run failed");
  return ns;
}

std::vector<npz::Array> ModuleRunner::Outputs() const {
  std::vector<npz::Array> out;
  for (uint32_t i = 0; i < outputs_.size(); ++i) {
    // The run-time shape (dynamic outputs: what the last run produced).
    std::vector<int64_t> shape(outputs_[i].shape.size());
    int32_t ndim = 0;
    Check(agate_executor_output_shape(executor_, i, shape.data(), static_cast<int32_t>(shape.size()), &ndim),
          "output '" + outputs_[i].name + "' shape");
    npz::Array array{outputs_[i].name, outputs_[i].dtype, shape, {}};
    array.data.resize(array.num_elements() * array.dtype.element_bytes());
    DLTensor tensor;
    std::memset(&tensor, 0, sizeof(tensor));
    tensor.data = array.data.empty() ? nullptr : array.data.data();
    tensor.device = DLDevice{kDLCPU, 0};
    tensor.ndim = static_cast<int32_t>(array.shape.size());
    tensor.dtype = ToDLPack(array.dtype);
    tensor.shape = array.shape.data();
    Check(agate_executor_copy_output(executor_, i, &tensor), "output '" + outputs_[i].name + "'");
    out.push_back(std::move(array));
  }
  return out;
}

std::vector<npz::Array> ModuleRunner::RandomInputs(uint64_t seed) const {
  std::mt19937_64 rng(seed);
  std::vector<npz::Array> arrays;
  for (const TensorDescription& in : inputs_) {
    npz::Array array{in.name, in.dtype, in.shape, {}};
    int64_t n = array.num_elements();
    array.data.resize(n * in.dtype.element_bytes());
    if (in.dtype == ir::DType::Float(32)) {
      std::uniform_real_distribution<float> dist(0.0f, 1.0f);
      float* p = reinterpret_cast<float*>(array.data.data());
      for (int64_t i = 0; i < n; ++i) p[i] = dist(rng);
    } else {
      // Integers and booleans: small non-negative values valid as indices and flags.
      for (int64_t i = 0; i < n; ++i) array.data[i * in.dtype.element_bytes()] = static_cast<uint8_t>(rng() % 2);
    }
    arrays.push_back(std::move(array));
  }
  return arrays;
}

}  // namespace cli
}  // namespace agate
