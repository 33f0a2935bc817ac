#include "core/graph/pass_manager.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/graph/testing/graph_builder.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

Graph Small() {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {2}});
  testing::Add(&g, "Relu", "r", {"x"}, {"y"});
  return testing::Finish(g, {"y"});
}

TEST(PassManagerTest, RunsPassesInOrderAndTimesThem) {
  std::vector<std::string> order;
  PassManager pm;
  pm.Add("first", [&order](const Graph& g) { order.push_back("first"); return g; });
  pm.Add("second", [&order](const Graph& g) { order.push_back("second"); return g; });
  pm.Run(Small());
  EXPECT_EQ(order, (std::vector<std::string>{"first", "second"}));
  ASSERT_EQ(pm.timings().size(), 2u);
  EXPECT_EQ(pm.timings()[1].name, "second");
  EXPECT_EQ(pm.timings()[1].nodes_after, 1u);
  EXPECT_NE(pm.TimingReport().find("total"), std::string::npos);
}

TEST(PassManagerTest, DumpsEachPassToADirectory) {
  std::string dir = ::testing::TempDir() + "/dump_ir";
  std::filesystem::remove_all(dir);
  PassManagerOptions options;
  options.dump_dir = dir;
  PassManager pm(options);
  pm.Add("rename", [](const Graph& g) {
    Graph r = g;
    r.name = "renamed";
    return r;
  });
  pm.Run(Small());
  std::ifstream first(dir + "/00_input.txt"), second(dir + "/01_rename.txt");
  std::stringstream a, b;
  a << first.rdbuf();
  b << second.rdbuf();
  EXPECT_NE(a.str().find("graph main("), std::string::npos);
  EXPECT_NE(b.str().find("graph renamed("), std::string::npos);
}

TEST(PassManagerTest, ErrorsNameThePass) {
  PassManager pm;
  pm.Add("broken", [](const Graph& g) {
    Graph r = g;
    r.types["y"] = TensorType{DType::Float(32), {3}};  // a pass that corrupts a type
    return r;
  });
  try {
    pm.Run(Small());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInternal);
    EXPECT_NE(e.message().find("pass broken"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace graph
}  // namespace agate
