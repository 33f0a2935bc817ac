#include "bindings/testdata/fixture_modules.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "agate/runtime.h"
#include "bindings/testdata/fixture_kernels.h"
#include "core/serialize/serialize_module.h"
#include "core/support/file.h"

namespace agate {
namespace bindings_testdata {
namespace {

std::vector<uint8_t> KernelObject() { return ReadFile("bindings/testdata/libagate_fixture_kernels.so"); }

DLTensor FloatTensor(float* data, int64_t* shape, int32_t ndim) {
  DLTensor t;
  std::memset(&t, 0, sizeof(t));
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

class Loaded {
 public:
  explicit Loaded(const std::vector<uint8_t>& bytes) {
    EXPECT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module_), AGATE_OK)
        << agate_last_error_message();
    EXPECT_EQ(agate_executor_create(module_, nullptr, &executor_), AGATE_OK) << agate_last_error_message();
  }
  ~Loaded() {
    agate_executor_free(executor_);
    agate_module_free(module_);
  }
  agate_executor_t* executor() { return executor_; }

 private:
  agate_module_t* module_ = nullptr;
  agate_executor_t* executor_ = nullptr;
};

TEST(FixtureModulesTest, AddReluComputesReluOfSum) {
  Loaded loaded(serialize::SerializeModule(AddReluSpec(KernelObject())));
  float a[AGATE_FX_ADD_COUNT] = {1.0f, -2.0f, 3.5f, 0.0f, -0.5f, 4.0f};
  float b[AGATE_FX_ADD_COUNT] = {0.5f, 1.0f, -4.0f, 0.25f, 0.25f, -1.0f};
  int64_t shape[2] = {AGATE_FX_ADD_ROWS, AGATE_FX_ADD_COLS};
  DLTensor ta = FloatTensor(a, shape, 2);
  DLTensor tb = FloatTensor(b, shape, 2);
  ASSERT_EQ(agate_executor_set_input(loaded.executor(), 0, &ta), AGATE_OK) << agate_last_error_message();
  ASSERT_EQ(agate_executor_set_input(loaded.executor(), 1, &tb), AGATE_OK) << agate_last_error_message();
  ASSERT_EQ(agate_executor_run(loaded.executor()), AGATE_OK) << agate_last_error_message();
  DLTensor y;
  ASSERT_EQ(agate_executor_get_output(loaded.executor(), 0, &y), AGATE_OK);
  const float* out = static_cast<const float*>(y.data);
  for (int i = 0; i < AGATE_FX_ADD_COUNT; ++i) {
    const float sum = a[i] + b[i];
    EXPECT_FLOAT_EQ(out[i], sum > 0.0f ? sum : 0.0f) << "element " << i;
  }
}

TEST(FixtureModulesTest, ClassifierComputesLogitsAndArgmax) {
  Loaded loaded(serialize::SerializeModule(ClassifierSpec(KernelObject())));
  float x[AGATE_FX_BATCH * AGATE_FX_FEATURES];
  for (int i = 0; i < AGATE_FX_BATCH * AGATE_FX_FEATURES; ++i) x[i] = static_cast<float>(i % 5) - 1.5f;
  int64_t shape[2] = {AGATE_FX_BATCH, AGATE_FX_FEATURES};
  DLTensor tx = FloatTensor(x, shape, 2);
  ASSERT_EQ(agate_executor_set_input(loaded.executor(), 0, &tx), AGATE_OK) << agate_last_error_message();
  ASSERT_EQ(agate_executor_run(loaded.executor()), AGATE_OK) << agate_last_error_message();
  DLTensor logits, classes;
  ASSERT_EQ(agate_executor_get_output(loaded.executor(), 0, &logits), AGATE_OK);
  ASSERT_EQ(agate_executor_get_output(loaded.executor(), 1, &classes), AGATE_OK);
  EXPECT_EQ(classes.dtype.code, kDLInt);
  const std::vector<float> w = ClassifierWeights();
  const std::vector<float> bias = ClassifierBias();
  for (int r = 0; r < AGATE_FX_BATCH; ++r) {
    int best = 0;
    float row[AGATE_FX_CLASSES];
    for (int j = 0; j < AGATE_FX_CLASSES; ++j) {
      row[j] = bias[j];
      for (int k = 0; k < AGATE_FX_FEATURES; ++k) row[j] += x[r * AGATE_FX_FEATURES + k] * w[k * AGATE_FX_CLASSES + j];
      EXPECT_NEAR(static_cast<const float*>(logits.data)[r * AGATE_FX_CLASSES + j], row[j], 1e-5f);
      if (row[j] > row[best]) best = j;
    }
    EXPECT_EQ(static_cast<const int32_t*>(classes.data)[r], best) << "row " << r;
  }
}

TEST(FixtureModulesTest, WeightsFollowTheDocumentedFormula) {
  const std::vector<float> w = ClassifierWeights();
  EXPECT_FLOAT_EQ(w[0], -0.75f);                       // k=0, j=0: (0 % 7 - 3) / 4
  EXPECT_FLOAT_EQ(w[2 * AGATE_FX_CLASSES + 1], 0.25f);  // k=2, j=1: (11 % 7 - 3) / 4
  EXPECT_FLOAT_EQ(ClassifierBias()[0], -0.5f);
}

}  // namespace
}  // namespace bindings_testdata
}  // namespace agate
