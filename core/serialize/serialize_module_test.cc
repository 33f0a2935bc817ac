#include "core/serialize/serialize_module.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/serialize/content_hash.h"
#include "core/serialize/module_metadata.h"
#include "core/support/error.h"
#include "runtime_minimal/core/verify.h"
#include "runtime_minimal/schema/module_generated.h"

namespace agate {
namespace serialize {
namespace {

// A small micro-target module: y = relu(x + c), with an arena intermediate.
ModuleSpec SmallSpec() {
  ModuleSpec spec;
  spec.target = "c -mcpu=cortex-m4";
  spec.target_kind = TargetKind::kMicro;
  spec.inputs = {TensorSpec{"x", ir::DType::Float(32), {2, 4}}};
  spec.outputs = {TensorSpec{"y", ir::DType::Float(32), {2, 4}}};
  spec.constants = {ConstantSpec{std::vector<uint8_t>(32, 1), 64}, ConstantSpec{std::vector<uint8_t>(3, 2), 4096}};
  spec.kernels = {KernelSpec{"add", {32, 32, 32}}, KernelSpec{"relu", {32, 32}}};
  spec.kernels[1].workspace_bytes = 128;
  spec.arena_bytes = 64;
  spec.plan = {CallSpec{0, {ArgSpec::Input(0, 32), ArgSpec::Constant(0, 32), ArgSpec::Arena(32, 32)}},
               CallSpec{1, {ArgSpec::Arena(32, 32), ArgSpec::Output(0, 32)}}};
  spec.metadata.compiler_version = "agate 0.1";
  spec.metadata.options = {{"target", "c"}, {"opt_level", "2"}};
  return spec;
}

TEST(SerializeModuleTest, RoundTripsEveryField) {
  const std::vector<uint8_t> bytes = SerializeModule(SmallSpec());
  ASSERT_TRUE(flatbuffers::BufferHasIdentifier(bytes.data(), "AGTM"));
  const fb::Module* m = fb::GetModule(bytes.data());
  EXPECT_EQ(m->format_major(), 1u);
  EXPECT_EQ(m->target()->str(), "c -mcpu=cortex-m4");
  EXPECT_EQ(m->target_kind(), fb::TargetKind::Micro);
  ASSERT_EQ(m->inputs()->size(), 1u);
  EXPECT_EQ(m->inputs()->Get(0)->name()->str(), "x");
  EXPECT_EQ(m->inputs()->Get(0)->dtype()->code(), fb::ElemCode::Float);
  EXPECT_EQ(m->inputs()->Get(0)->dtype()->bits(), 32);
  EXPECT_EQ(m->inputs()->Get(0)->shape()->Get(1), 4);
  EXPECT_EQ(m->arena_bytes(), 64u);
  EXPECT_EQ(m->arena_alignment(), 64u);
  EXPECT_EQ(m->workspace_bytes(), 128u);  // raised to the largest kernel workspace
  ASSERT_EQ(m->plan()->size(), 2u);
  const fb::Arg* arg = m->plan()->Get(0)->args()->Get(2);
  EXPECT_EQ(arg->kind(), fb::ArgKind::Arena);
  EXPECT_EQ(arg->offset(), 32u);
  EXPECT_EQ(m->kernels()->Get(1)->name()->str(), "relu");
  const fb::Metadata* metadata = ReadModuleMetadata(bytes);
  ASSERT_NE(metadata, nullptr);
  EXPECT_EQ(metadata->compiler_version()->str(), "agate 0.1");
  EXPECT_EQ(metadata->options()->Get(1)->key()->str(), "opt_level");
  EXPECT_EQ(metadata->options()->Get(1)->value()->str(), "2");
}

TEST(SerializeModuleTest, AlignsConstantsForUseInPlace) {
  const std::vector<uint8_t> bytes = SerializeModule(SmallSpec());
  const fb::Module* m = fb::GetModule(bytes.data());
  for (const fb::Constant* c : *m->constants()) {
    const size_t offset = static_cast<size_t>(c->data()->data() - bytes.data());
    EXPECT_EQ(offset % c->alignment(), 0u) << "alignment " << c->alignment();
  }
  EXPECT_EQ(m->constants()->Get(1)->alignment(), 4096u);
  EXPECT_EQ(bytes.size() % 4096, 0u);  // so an aligned mapping keeps every constant aligned
}

TEST(SerializeModuleTest, IsDeterministicAndHashesItsContent) {
  const std::vector<uint8_t> a = SerializeModule(SmallSpec());
  const std::vector<uint8_t> b = SerializeModule(SmallSpec());
  EXPECT_EQ(a, b);
  EXPECT_EQ(StoredContentHash(a), ComputeContentHash(a));
  EXPECT_EQ(StoredContentHash(a).rfind("fnv1a64:", 0), 0u);
  ModuleSpec changed = SmallSpec();
  changed.constants[0].data[5] = 9;
  EXPECT_NE(StoredContentHash(SerializeModule(changed)), StoredContentHash(a));
}

TEST(SerializeModuleTest, RefusesAnArenaArgumentOutsideTheArena) {
  ModuleSpec spec = SmallSpec();
  spec.plan[0].args[2] = ArgSpec::Arena(48, 32);
  try {
    SerializeModule(spec);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kOutOfRange);
    EXPECT_NE(e.message().find("call 0 argument 2"), std::string::npos) << e.message();
  }
}

TEST(SerializeModuleTest, RefusesInconsistentSpecsNamingTheFault) {
  struct Case {
    const char* what;
    void (*mutate)(ModuleSpec&);
    const char* expected;
  };
  const Case cases[] = {
      {"unknown kernel", [](ModuleSpec& s) { s.plan[1].kernel = 5; }, "call 1 names kernel 5"},
      {"input bytes", [](ModuleSpec& s) { s.plan[0].args[0].bytes = 16; }, "call 0 argument 0"},
      {"arity", [](ModuleSpec& s) { s.plan[1].args.pop_back(); }, "passes 1 arguments"},
      {"unwritten output", [](ModuleSpec& s) { s.plan.pop_back(); }, "output 0 'y' is never written"},
      {"duplicate names", [](ModuleSpec& s) { s.outputs[0].name = "x"; s.inputs.push_back(s.outputs[0]); },
       "both named 'x'"},
      {"constant index", [](ModuleSpec& s) { s.plan[0].args[1].index = 7; }, "constant 7 of 2"},
  };
  for (const Case& c : cases) {
    ModuleSpec spec = SmallSpec();
    c.mutate(spec);
    try {
      SerializeModule(spec);
      ADD_FAILURE() << c.what << ": expected an error";
    } catch (const Error& e) {
      EXPECT_NE(e.message().find(c.expected), std::string::npos) << c.what << ": " << e.message();
    }
  }
}

// A zero-element output has no bytes a caller could read: the plan need not write it.
TEST(SerializeModuleTest, AcceptsAnUnwrittenZeroElementOutput) {
  ModuleSpec spec = SmallSpec();
  spec.outputs.push_back(TensorSpec{"empty", ir::DType::Float(32), {3, 0}});
  const std::vector<uint8_t> bytes = SerializeModule(spec);
  const fb::Module* m = fb::GetModule(bytes.data());
  ASSERT_EQ(m->outputs()->size(), 2u);
  EXPECT_EQ(m->outputs()->Get(1)->shape()->Get(1), 0);
}

TEST(SerializeModuleTest, RefusesAnUnencodableAlignment) {
  ModuleSpec spec = SmallSpec();
  spec.constants[0].alignment = 48;
  try {
    SerializeModule(spec);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("constant 0 alignment 48"), std::string::npos) << e.message();
  }
}

TEST(SerializeModuleTest, CudaModulesCarryAnImagePerKernel) {
  ModuleSpec spec = SmallSpec();
  spec.target = "cuda -arch=sm_90";
  spec.target_kind = TargetKind::kCuda;
  try {
    SerializeModule(spec);
    FAIL() << "a CUDA module without images must be refused";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("no CUDA launch description"), std::string::npos) << e.message();
  }
  for (KernelSpec& k : spec.kernels) {
    k.has_cuda = true;
    k.cuda.image = {'.', 'v', 'e', 'r', 's', 'i', 'o', 'n'};
    k.cuda.grid = {4, 1, 1};
    k.cuda.block = {128, 1, 1};
  }
  const std::vector<uint8_t> bytes = SerializeModule(spec);
  const fb::Module* m = fb::GetModule(bytes.data());
  EXPECT_EQ(m->kernels()->Get(0)->cuda()->grid()->x(), 4u);
  EXPECT_EQ(m->kernels()->Get(1)->cuda()->block()->x(), 128u);
  EXPECT_EQ(m->format_minor(), 2u);
  EXPECT_EQ(m->cuda_images(), nullptr);
}

TEST(SerializeModuleTest, CudaModulesWithOneImagePerArchitecture) {
  ModuleSpec spec = SmallSpec();
  spec.target = "cuda -arch=sm_90";
  spec.target_kind = TargetKind::kCuda;
  for (KernelSpec& k : spec.kernels) {
    k.has_cuda = true;  // no image of its own: the entry k.name of the module's images
    k.cuda.grid = {4, 1, 1};
    k.cuda.block = {256, 1, 1};
    k.cuda.registers_per_thread = 40;
    k.cuda.static_shared_memory_bytes = 4096;
  }
  try {
    SerializeModule(spec);
    FAIL() << "a kernel with neither its own image nor the module's must be refused";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("neither its own (format 1.0) nor the module's (1.1)"), std::string::npos)
        << e.message();
  }
  spec.cuda_images = {CudaImageSpec{CudaImageKind::kCubin, 90, {0x7f, 'E', 'L', 'F'}},
                      CudaImageSpec{CudaImageKind::kPtx, 90, {'.', 'v', 'e', 'r'}}};
  const std::vector<uint8_t> bytes = SerializeModule(spec);
  const fb::Module* m = fb::GetModule(bytes.data());
  ASSERT_NE(m->cuda_images(), nullptr);
  ASSERT_EQ(m->cuda_images()->size(), 2u);
  EXPECT_EQ(m->cuda_images()->Get(0)->kind(), fb::CudaImageKind::Cubin);
  EXPECT_EQ(m->cuda_images()->Get(0)->arch(), 90u);
  EXPECT_EQ(m->cuda_images()->Get(1)->kind(), fb::CudaImageKind::Ptx);
  EXPECT_EQ(m->cuda_images()->Get(1)->image()->size(), 4u);
  EXPECT_EQ(m->cuda_images()->Get(1)->fnv1a64(), rt::Fnv1a64(m->cuda_images()->Get(1)->image()->data(), 4));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m->cuda_images()->Get(0)->image()->data()) % 16, 0u);
  EXPECT_EQ(m->kernels()->Get(0)->cuda()->image()->size(), 0u);
  EXPECT_EQ(m->kernels()->Get(0)->cuda()->registers_per_thread(), 40u);
  EXPECT_EQ(m->kernels()->Get(0)->cuda()->static_shared_memory_bytes(), 4096u);
  // Duplicate architectures are ambiguous.
  spec.cuda_images[1].kind = CudaImageKind::kCubin;
  EXPECT_THROW(SerializeModule(spec), Error);
}

// Format 1.1: one image per architecture for the whole module (cubin first, then
// PTX); kernels carry their launch and ptxas's figures and an empty image of their own.
TEST(SerializeModuleTest, CudaModulesCarryOneImagePerArchitecture) {
  ModuleSpec spec = SmallSpec();
  spec.target = "cuda -arch=sm_80";
  spec.target_kind = TargetKind::kCuda;
  spec.cuda_images.push_back({CudaImageKind::kCubin, 80, {0x7f, 'E', 'L', 'F'}});
  spec.cuda_images.push_back({CudaImageKind::kPtx, 80, {'.', 'v', 'e', 'r', 's', 'i', 'o', 'n'}});
  for (KernelSpec& k : spec.kernels) {
    k.has_cuda = true;
    k.cuda.kind = CudaImageKind::kCubin;
    k.cuda.grid = {2, 3, 1};
    k.cuda.block = {64, 2, 1};
    k.cuda.shared_memory_bytes = 4096;
    k.cuda.registers_per_thread = 40;
    k.cuda.static_shared_memory_bytes = 16;
  }
  const std::vector<uint8_t> bytes = SerializeModule(spec);
  const fb::Module* m = fb::GetModule(bytes.data());
  ASSERT_EQ(m->cuda_images()->size(), 2u);
  EXPECT_EQ(m->cuda_images()->Get(0)->kind(), fb::CudaImageKind::Cubin);
  EXPECT_EQ(m->cuda_images()->Get(0)->arch(), 80u);
  EXPECT_EQ(m->cuda_images()->Get(1)->kind(), fb::CudaImageKind::Ptx);
  EXPECT_EQ(m->cuda_images()->Get(0)->fnv1a64(), rt::Fnv1a64(spec.cuda_images[0].image.data(), 4));
  const fb::CudaKernel* k = m->kernels()->Get(0)->cuda();
  EXPECT_EQ(k->image()->size(), 0u);
  EXPECT_EQ(k->registers_per_thread(), 40u);
  EXPECT_EQ(k->static_shared_memory_bytes(), 16u);
  EXPECT_EQ(k->shared_memory_bytes(), 4096u);
  // A kernel image next to module images is refused: the loader would not know which to use.
  spec.kernels[0].cuda.image = {1};
  EXPECT_THROW(SerializeModule(spec), Error);
}

}  // namespace
}  // namespace serialize
}  // namespace agate
