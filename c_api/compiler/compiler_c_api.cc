// The compiler's C ABI (c_api/include/agate/compiler.h) over core/compiler.
//
// Every entry point catches agate::Error (and any other exception) at the boundary, so no
// C++ exception crosses it: the status is the error's StatusCode, the message thread-local.
#include "agate/compiler.h"

#include <exception>
#include <map>
#include <new>
#include <string>

#include "core/compiler/compiler.h"
#include "core/ops/weight_precision.h"
#include "core/support/error.h"
#include "core/support/file.h"
#include "frontends/onnx/importer.h"

struct agate_model {
  agate::graph::Graph graph;
};
struct agate_compiled {
  agate::compiler::CompileResult result;
};
struct agate_compile_options {
  std::map<std::string, std::string> values;
};

namespace {

thread_local std::string last_error;

// Records "<prefix><detail>" as the message; nothing here may throw (it runs inside catch
// handlers at the boundary): if the message cannot be allocated, the status still reports.
agate_status_t Fail(agate_status_t status, const char* prefix, const char* detail = "") noexcept {
  try {
    last_error = prefix;
    last_error += detail;
  } catch (...) {
    last_error.clear();
  }
  return status;
}

// Runs `body`, turning every exception into a status and the thread-local message.
template <typename Body>
agate_status_t Guard(Body body) noexcept {
  try {
    body();
    return AGATE_OK;
  } catch (const agate::Error& e) {
    return Fail(static_cast<agate_status_t>(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return Fail(AGATE_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return Fail(AGATE_INTERNAL, "internal error: ", e.what());
  } catch (...) {
    return Fail(AGATE_INTERNAL, "internal error: unknown exception");
  }
}

#define REQUIRE_NOT_NULL(arg) \
  if ((arg) == nullptr) return Fail(AGATE_INVALID_ARGUMENT, #arg " is NULL")

// Turns the key/value options into CompileOptions; unknown keys and bad values are errors.
agate::compiler::CompileOptions ParseOptions(const agate_compile_options* options) {
  agate::compiler::CompileOptions out;
  if (options == nullptr) return out;
  for (const auto& [key, value] : options->values) {
    out.recorded_options.emplace_back(key, value);
    if (key == "target") {
      out.target = value;
    } else if (key == "fusion") {
      out.fusion = agate::fusion::ParseFusionPolicy(value);
    } else if (key == "opt_level") {
      AGATE_REQUIRE(value.size() == 1 && value[0] >= '0' && value[0] <= '3', kInvalidArgument)
          << "option opt_level='" << value << "': expected 0, 1, 2 or 3";
      out.opt_level = value[0] - '0';
    } else if (key == "input_shape") {
      // Input shapes are fixed when the model is imported (agate_model_load_*, which takes no
      // options); the graph handed to the compiler already has them, so this key is only
      // validated and recorded in the module's metadata.
      agate::onnx_frontend::ParseInputShapes(value);
    } else if (key == "kernel_prefix") {
      agate::compiler::CheckKernelPrefix(value);
      out.kernel_prefix = value;
    } else if (key == "precision") {
      out.precision = agate::ops::ParseWeightPrecision(value);
    } else {
      AGATE_THROW(kInvalidArgument) << "unknown compile option '" << key
                                    << "' (known: target, fusion, opt_level, input_shape, kernel_prefix, precision)";
    }
  }
  return out;
}

}  // namespace

extern "C" {

uint32_t agate_compiler_abi_version(void) { return AGATE_COMPILER_ABI_VERSION; }

const char* agate_compiler_last_error_message(void) { return last_error.c_str(); }

agate_status_t agate_model_load_onnx_file(const char* path, agate_model_t** out_model) {
  REQUIRE_NOT_NULL(path);
  REQUIRE_NOT_NULL(out_model);
  return Guard([&] { *out_model = new agate_model{agate::onnx_frontend::ImportOnnxFile(path)}; });
}

agate_status_t agate_model_load_onnx_memory(const void* data, size_t size, agate_model_t** out_model) {
  REQUIRE_NOT_NULL(data);
  REQUIRE_NOT_NULL(out_model);
  return Guard([&] {
    onnx::ModelProto model =
        agate::onnx_frontend::ParseModel(std::string(static_cast<const char*>(data), size), "model in memory");
    *out_model = new agate_model{agate::onnx_frontend::ImportOnnxModel(model)};
  });
}

agate_status_t agate_model_free(agate_model_t* model) {
  delete model;
  return AGATE_OK;
}

agate_status_t agate_compile_options_create(agate_compile_options_t** out_options) {
  REQUIRE_NOT_NULL(out_options);
  return Guard([&] { *out_options = new agate_compile_options(); });
}

agate_status_t agate_compile_options_set(agate_compile_options_t* options, const char* key, const char* value) {
  REQUIRE_NOT_NULL(options);
  REQUIRE_NOT_NULL(key);
  REQUIRE_NOT_NULL(value);
  return Guard([&] { options->values[key] = value; });
}

agate_status_t agate_compile_options_free(agate_compile_options_t* options) {
  delete options;
  return AGATE_OK;
}

agate_status_t agate_compile(const agate_model_t* model, const agate_compile_options_t* options,
                             agate_compiled_t** out_compiled) {
  REQUIRE_NOT_NULL(model);
  REQUIRE_NOT_NULL(out_compiled);
  return Guard([&] {
    agate::compiler::CompileOptions parsed = ParseOptions(options);
    *out_compiled = new agate_compiled{agate::compiler::CompileGraph(model->graph, parsed)};
  });
}

agate_status_t agate_compiled_bytes(const agate_compiled_t* compiled, const uint8_t** out_data, size_t* out_size) {
  REQUIRE_NOT_NULL(compiled);
  REQUIRE_NOT_NULL(out_data);
  REQUIRE_NOT_NULL(out_size);
  *out_data = compiled->result.module.data();
  *out_size = compiled->result.module.size();
  return AGATE_OK;
}

agate_status_t agate_compiled_write(const agate_compiled_t* compiled, const char* path) {
  REQUIRE_NOT_NULL(compiled);
  REQUIRE_NOT_NULL(path);
  return Guard([&] { agate::WriteFileAtomically(path, compiled->result.module); });
}

agate_status_t agate_compiled_free(agate_compiled_t* compiled) {
  delete compiled;
  return AGATE_OK;
}

}  // extern "C"
