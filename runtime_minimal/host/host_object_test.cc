// Embedded kernel objects of several modules loaded at once: each module runs its own
// kernels. The loader recognises an already-loaded library by its path
// (/proc/self/fd/N), so the memory file of a loaded object must stay open: were it
// closed after dlopen, the next module's file could get the same descriptor number and
// its dlopen would return the first module's library (the same bug 0bb74e0 fixed in
// core/codegen/llvm's DynamicLibrary).
#include <gtest/gtest.h>

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "agate/runtime.h"
#include "core/compiler/compiler.h"
#include "core/graph/testing/graph_builder.h"
#include "runtime_minimal/testing/test_modules.h"

namespace agate {
namespace {

std::string Message() { return agate_last_error_message(); }

constexpr int64_t kN = 64;

// y = LeakyRelu(x, alpha): alpha is an attribute compiled into the kernel, so each module's
// kernel is different code under the same kernel name ("k0_leakyrelu"); or y = -x when
// `negate` (another kernel name).
std::vector<uint8_t> CompileLeakyRelu(double alpha, bool negate = false) {
  graph::Graph g;
  g.AddInput("x", graph::TensorType{graph::DType::Float(32), {kN}});
  if (negate) {
    graph::testing::Add(&g, "Neg", "op", {"x"}, {"y"});
  } else {
    graph::testing::Add(&g, "LeakyRelu", "op", {"x"}, {"y"}, {{"alpha", graph::Attribute(alpha)}});
  }
  return compiler::CompileGraph(graph::testing::Finish(g, {"y"}), compiler::CompileOptions{}).module;
}

float LeakyRelu(float x, double alpha) { return x < 0 ? x * static_cast<float>(alpha) : x; }

std::vector<float> RunModule(agate_module_t* module, std::vector<float> x) {
  std::vector<float> y;
  EXPECT_EQ(testing::RunVectorModule(module, std::move(x), &y), AGATE_OK) << Message();
  return y;
}

TEST(HostObjectTest, ModulesLoadedTogetherRunTheirOwnKernels) {
  const std::vector<double> alphas = {0.5, 0.25, -2.0};
  std::vector<std::vector<uint8_t>> bytes;
  for (double alpha : alphas) bytes.push_back(CompileLeakyRelu(alpha));
  bytes.push_back(CompileLeakyRelu(0, true));  // a different kernel name too
  std::vector<float> x(kN);
  for (int64_t i = 0; i < kN; ++i) x[i] = static_cast<float>(i) - 20.0f;

  // All alive at once; loading them one after the other is what reused descriptor numbers.
  std::vector<agate_module_t*> modules(bytes.size(), nullptr);
  for (size_t m = 0; m < bytes.size(); ++m) {
    ASSERT_EQ(agate_module_load_from_memory(bytes[m].data(), bytes[m].size(), nullptr, &modules[m]), AGATE_OK)
        << "module " << m << ": " << Message();
  }
  for (int round = 0; round < 2; ++round) {  // and in any order
    for (size_t i = 0; i < modules.size(); ++i) {
      size_t m = round == 0 ? i : modules.size() - 1 - i;
      std::vector<float> y = RunModule(modules[m], x);
      ASSERT_EQ(y.size(), x.size());
      for (int64_t j = 0; j < kN; ++j) {
        float want = m < alphas.size() ? LeakyRelu(x[j], alphas[m]) : -x[j];
        ASSERT_EQ(y[j], want) << "module " << m << " element " << j << ": it ran another module's kernels";
      }
    }
  }
  // Freeing one leaves the others' kernels in place, and a module loaded afterwards gets its own.
  agate_module_free(modules[0]);
  std::vector<uint8_t> again = CompileLeakyRelu(0.125);
  ASSERT_EQ(agate_module_load_from_memory(again.data(), again.size(), nullptr, &modules[0]), AGATE_OK) << Message();
  EXPECT_EQ(RunModule(modules[0], x)[0], LeakyRelu(x[0], 0.125));
  EXPECT_EQ(RunModule(modules[1], x)[0], LeakyRelu(x[0], alphas[1]));
  for (agate_module_t* m : modules) agate_module_free(m);
}

// The files named "agate-kernels-*" in `dir`.
std::vector<std::string> KernelFiles(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* entry = readdir(d)) {
    if (std::strncmp(entry->d_name, "agate-kernels-", 14) == 0) out.push_back(dir + "/" + entry->d_name);
  }
  closedir(d);
  return out;
}

// Android before API 30 (no memfd_create, no /tmp): kernels go to a directory the caller names,
// one file per loaded module, read + execute only, deleted when the module is freed.
TEST(HostObjectTest, KernelDirectoryHoldsEachLoadedModulesObjectUntilItIsFreed) {
  char tmpl[] = "/tmp/agate-kernel-dir-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  ASSERT_EQ(agate_runtime_set_kernel_dir(dir.c_str()), AGATE_OK) << Message();
  std::vector<float> x(kN);
  for (int64_t i = 0; i < kN; ++i) x[i] = static_cast<float>(i) - 20.0f;
  const std::vector<uint8_t> a = CompileLeakyRelu(0.5), b = CompileLeakyRelu(-3.0);
  agate_module_t* ma = nullptr;
  agate_module_t* mb = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(a.data(), a.size(), nullptr, &ma), AGATE_OK) << Message();
  ASSERT_EQ(agate_module_load_from_memory(b.data(), b.size(), nullptr, &mb), AGATE_OK) << Message();
  std::vector<std::string> files = KernelFiles(dir);
  ASSERT_EQ(files.size(), 2u);
  struct stat st;
  ASSERT_EQ(stat(files[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0500u);  // written once, then read and execute only
  EXPECT_EQ(RunModule(ma, x)[0], LeakyRelu(x[0], 0.5));
  EXPECT_EQ(RunModule(mb, x)[0], LeakyRelu(x[0], -3.0));
  agate_module_free(ma);
  EXPECT_EQ(KernelFiles(dir).size(), 1u);
  // A module loaded now gets a new file, never the freed module's library.
  const std::vector<uint8_t> c = CompileLeakyRelu(0.125);
  agate_module_t* mc = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(c.data(), c.size(), nullptr, &mc), AGATE_OK) << Message();
  EXPECT_EQ(RunModule(mc, x)[0], LeakyRelu(x[0], 0.125));
  EXPECT_EQ(RunModule(mb, x)[0], LeakyRelu(x[0], -3.0));
  agate_module_free(mb);
  agate_module_free(mc);
  EXPECT_TRUE(KernelFiles(dir).empty());

  // Back to the default: nothing is written to the directory.
  ASSERT_EQ(agate_runtime_set_kernel_dir(nullptr), AGATE_OK);
  ASSERT_EQ(agate_module_load_from_memory(a.data(), a.size(), nullptr, &ma), AGATE_OK) << Message();
  EXPECT_TRUE(KernelFiles(dir).empty());
  agate_module_free(ma);
  rmdir(dir.c_str());
}

TEST(HostObjectTest, KernelDirectoryMustExist) {
  EXPECT_EQ(agate_runtime_set_kernel_dir("/nonexistent/agate"), AGATE_NOT_FOUND);
  EXPECT_NE(Message().find("'/nonexistent/agate' is not a directory"), std::string::npos) << Message();
  EXPECT_EQ(agate_runtime_set_kernel_dir(std::string(5000, 'x').c_str()), AGATE_INVALID_ARGUMENT);
  // A refused directory leaves the default in place.
  const std::vector<uint8_t> a = CompileLeakyRelu(0.5);
  agate_module_t* m = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(a.data(), a.size(), nullptr, &m), AGATE_OK) << Message();
  agate_module_free(m);
}

}  // namespace
}  // namespace agate
