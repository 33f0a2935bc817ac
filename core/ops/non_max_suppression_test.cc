// RunTimeNonMaxSuppression's compiled kernel (non_max_suppression.h) on the loop-IR evaluator and
// as LLVM host code against the reference interpreter, on ONNX's documented examples (whose
// expected rows also check the reference) and on random boxes with tied scores, NaN scores,
// nothing selected and operands read at run time; a run-time iou_threshold outside [0, 1] fails
// the kernel; cuda targets are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/ops/lower_group.h"
#include "core/ops/testing/reference_check.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::Shape;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using Tensors = std::map<std::string, graph::Tensor>;

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kI64 = ir::DType::Int(64);

// One NonMaxSuppression: the inputs' values and where each operand comes from.
struct Nms {
  Shape box_shape, score_shape;  // [B, N, 4], [B, C, N]
  std::vector<float> boxes, scores;
  std::optional<int64_t> max_per_class;
  std::optional<float> iou, score_threshold;
  int64_t center_point_box = 0;
  bool run_time_operands = true;  // operands as graph inputs (read by the kernel), else attributes
};

// The graph of one RunTimeNonMaxSuppression ("nms") writing "sel" and its extents, and its inputs.
std::pair<Graph, Tensors> Build(const Nms& c) {
  Graph g;
  Tensors inputs;
  g.AddInput("boxes", TensorType{kF32, c.box_shape});
  g.AddInput("scores", TensorType{kF32, c.score_shape});
  inputs["boxes"] = graph::Tensor::FromDoubles(kF32, c.box_shape, std::vector<double>(c.boxes.begin(), c.boxes.end()));
  inputs["scores"] =
      graph::Tensor::FromDoubles(kF32, c.score_shape, std::vector<double>(c.scores.begin(), c.scores.end()));
  std::vector<std::string> operands = {"boxes", "scores", "", "", ""};
  std::vector<std::pair<std::string, Attribute>> attrs = {{"center_point_box", Attribute(c.center_point_box)}};
  const char* names[3] = {"max_output_boxes_per_class", "iou_threshold", "score_threshold"};
  auto place = [&](int k, std::optional<double> value, ir::DType dtype) {
    if (!value) return;
    if (c.run_time_operands) {
      g.AddInput(names[k], TensorType{dtype, {1}});
      inputs[names[k]] = graph::Tensor::FromDoubles(dtype, {1}, {*value});
      operands[2 + k] = names[k];
    } else if (k == 0) {
      attrs.push_back({names[k], Attribute(static_cast<int64_t>(*value))});
    } else {
      attrs.push_back({names[k], Attribute(*value)});
    }
  };
  place(0, c.max_per_class ? std::optional<double>(static_cast<double>(*c.max_per_class)) : std::nullopt, kI64);
  place(1, c.iou, kF32);
  place(2, c.score_threshold, kF32);
  while (operands.back().empty()) operands.pop_back();
  g.run_time_extents["sel"] = "sel_extents";
  Add(&g, "RunTimeNonMaxSuppression", "nms", operands, {"sel", "sel_extents"}, attrs);
  return {Finish(g, {"sel", "sel_extents"}), inputs};
}

// The selected rows of the reference, [count * 3], after checking that the evaluator's and LLVM's
// extents and compact rows equal them.
std::vector<int64_t> ExpectMatchesReference(const Nms& c, const std::string& where) {
  auto [g, inputs] = Build(c);
  Tensors want = graph_eval::Interpret(g, inputs);
  std::vector<int64_t> extents = want.at("sel_extents").ToInts();
  EXPECT_EQ(extents.size(), 2u);
  EXPECT_EQ(extents[1], 3);
  std::vector<int64_t> rows = want.at("sel").ToInts();
  rows.resize(extents[0] * 3);
  Graph fused = testing::Fuse(g);
  for (testing::Backend backend : {testing::Backend::kEval, testing::Backend::kLLVM}) {
    Tensors got = testing::RunGroups(fused, inputs, backend, target::Target::Parse("llvm"));
    std::string at = where + (backend == testing::Backend::kEval ? " (loop-IR evaluator)" : " (LLVM)");
    EXPECT_EQ(got.at("sel_extents").ToInts(), extents) << at;
    std::vector<int64_t> got_rows = got.at("sel").ToInts();
    got_rows.resize(std::min<size_t>(got_rows.size(), rows.size()));
    EXPECT_EQ(got_rows, rows) << at;
  }
  return rows;
}

// ONNX's examples (onnx/backend/test/case/node/nonmaxsuppression.py): six boxes in three
// overlapping pairs and a lone one, with the scores below.
const std::vector<float> kSixBoxes = {0.0f, 0.0f,  1.0f, 1.0f,  0.0f, 0.1f,  1.0f, 1.1f,  0.0f, -0.1f, 1.0f, 0.9f,
                                      0.0f, 10.0f, 1.0f, 11.0f, 0.0f, 10.1f, 1.0f, 11.1f, 0.0f, 100.0f, 1.0f, 101.0f};
const std::vector<float> kSixScores = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};

Nms Example(std::vector<float> boxes, std::vector<float> scores, int64_t batches, int64_t classes, int64_t max,
            float score_threshold) {
  Nms c;
  const int64_t n = static_cast<int64_t>(boxes.size()) / 4 / batches;
  c.box_shape = {batches, n, 4};
  c.score_shape = {batches, classes, n};
  c.boxes = std::move(boxes);
  c.scores = std::move(scores);
  c.max_per_class = max;
  c.iou = 0.5f;
  c.score_threshold = score_threshold;
  return c;
}

template <typename T>
std::vector<T> Twice(const std::vector<T>& v) {
  std::vector<T> out = v;
  out.insert(out.end(), v.begin(), v.end());
  return out;
}

TEST(NonMaxSuppressionTest, OnnxExamplesMatchTheirExpectedRowsOnEveryBackend) {
  struct Case {
    std::string name;
    Nms c;
    std::vector<int64_t> rows;
  };
  std::vector<Case> examples;
  examples.push_back({"suppress_by_IOU", Example(kSixBoxes, kSixScores, 1, 1, 3, 0.0f), {0, 0, 3, 0, 0, 0, 0, 0, 5}});
  examples.push_back({"suppress_by_IOU_and_scores", Example(kSixBoxes, kSixScores, 1, 1, 3, 0.4f), {0, 0, 3, 0, 0, 0}});
  examples.push_back({"limit_output_size", Example(kSixBoxes, kSixScores, 1, 1, 2, 0.0f), {0, 0, 3, 0, 0, 0}});
  examples.push_back({"single_box", Example({0.0f, 0.0f, 1.0f, 1.0f}, {0.9f}, 1, 1, 3, 0.0f), {0, 0, 0}});
  std::vector<float> identical;
  for (int i = 0; i < 10; ++i) identical.insert(identical.end(), {0.0f, 0.0f, 1.0f, 1.0f});
  examples.push_back({"identical_boxes", Example(identical, std::vector<float>(10, 0.9f), 1, 1, 3, 0.0f), {0, 0, 0}});
  examples.push_back({"flipped_coordinates",
                      Example({1.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.1f, 1.0f, 1.1f, 0.0f, 0.9f, 1.0f, -0.1f,
                               0.0f, 10.0f, 1.0f, 11.0f, 1.0f, 10.1f, 0.0f, 11.1f, 1.0f, 101.0f, 0.0f, 100.0f},
                              kSixScores, 1, 1, 3, 0.0f),
                      {0, 0, 3, 0, 0, 0, 0, 0, 5}});
  Nms center = Example({0.5f, 0.5f, 1.0f, 1.0f, 0.5f, 0.6f, 1.0f, 1.0f, 0.5f, 0.4f, 1.0f, 1.0f,
                        0.5f, 10.5f, 1.0f, 1.0f, 0.5f, 10.6f, 1.0f, 1.0f, 0.5f, 100.5f, 1.0f, 1.0f},
                       kSixScores, 1, 1, 3, 0.0f);
  center.center_point_box = 1;
  examples.push_back({"center_point_box_format", center, {0, 0, 3, 0, 0, 0, 0, 0, 5}});
  examples.push_back({"two_classes", Example(kSixBoxes, Twice(kSixScores), 1, 2, 2, 0.0f),
                      {0, 0, 3, 0, 0, 0, 0, 1, 3, 0, 1, 0}});
  examples.push_back({"two_batches", Example(Twice(kSixBoxes), Twice(kSixScores), 2, 1, 2, 0.0f),
                      {0, 0, 3, 0, 0, 0, 1, 0, 3, 1, 0, 0}});
  for (const Case& e : examples) {
    for (bool run_time : {true, false}) {
      Nms c = e.c;
      c.run_time_operands = run_time;
      std::string where = e.name + (run_time ? ", operands at run time" : ", operands constant");
      EXPECT_EQ(ExpectMatchesReference(c, where), e.rows) << where;
    }
  }
}

// Boxes on a grid of quarters (every product and sum exact in float32, so no rounding, FMA
// contraction included, can change an IoU comparison), corners in either order or centers with
// sizes (some empty or negative), and scores from four values (ties everywhere).
Nms RandomCase(uint32_t seed, int64_t batches, int64_t classes, int64_t n, int64_t center_point_box) {
  std::mt19937 rng(seed);
  auto quarter = [&](int limit) { return static_cast<float>(static_cast<int>(rng() % (4 * limit))) / 4.0f; };
  Nms c;
  c.box_shape = {batches, n, 4};
  c.score_shape = {batches, classes, n};
  c.center_point_box = center_point_box;
  for (int64_t i = 0; i < batches * n; ++i) {
    if (center_point_box) {
      c.boxes.insert(c.boxes.end(), {quarter(6), quarter(6), quarter(4) * 2.0f - 1.0f, quarter(4) * 2.0f - 1.0f});
    } else {
      c.boxes.insert(c.boxes.end(), {quarter(6), quarter(6), quarter(6), quarter(6)});
    }
  }
  const float levels[4] = {0.2f, 0.45f, 0.7f, 0.95f};
  for (int64_t i = 0; i < batches * classes * n; ++i) c.scores.push_back(levels[rng() % 4]);
  return c;
}

TEST(NonMaxSuppressionTest, RandomBoxesWithTiedScoresMatchTheReference) {
  int selected_somewhere = 0, suppressed_somewhere = 0;
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    for (int64_t center : {0, 1}) {
      Nms c = RandomCase(seed, seed % 2 + 1, seed % 3 + 1, 9 + seed % 4, center);
      c.max_per_class = seed % 4 == 0 ? 100 : static_cast<int64_t>(seed % 5 + 1);
      c.iou = seed % 2 ? 0.25f : 0.5f;
      if (seed % 3 == 0) c.score_threshold = 0.45f;
      c.run_time_operands = seed % 2 == 0;
      std::string where = "seed " + std::to_string(seed) + " center_point_box " + std::to_string(center);
      std::vector<int64_t> rows = ExpectMatchesReference(c, where);
      selected_somewhere += !rows.empty();
      suppressed_somewhere += static_cast<int64_t>(rows.size()) / 3 <
                              std::min<int64_t>(*c.max_per_class, c.box_shape[1]) * c.score_shape[0] * c.score_shape[1];
    }
  }
  // The cases exercise both outcomes.
  EXPECT_GT(selected_somewhere, 0);
  EXPECT_GT(suppressed_somewhere, 0);
}

TEST(NonMaxSuppressionTest, NaNScoresComeLastAndAThresholdDropsThem) {
  Nms c = RandomCase(11, 1, 2, 8, 0);
  c.scores[1] = c.scores[6] = c.scores[12] = std::nanf("");
  c.max_per_class = 8;
  c.iou = 0.5f;
  std::vector<int64_t> rows = ExpectMatchesReference(c, "NaN scores");
  ASSERT_FALSE(rows.empty());
  c.score_threshold = 0.1f;  // NaN > 0.1 is false: dropped
  rows = ExpectMatchesReference(c, "NaN scores, a threshold");
  for (size_t r = 0; r < rows.size(); r += 3) EXPECT_FALSE(std::isnan(c.scores[rows[r + 1] * 8 + rows[r + 2]]));
}

TEST(NonMaxSuppressionTest, NothingSelected) {
  Nms c = RandomCase(3, 2, 2, 6, 0);
  c.iou = 0.5f;
  c.max_per_class = 4;
  c.score_threshold = 0.99f;  // above every score
  EXPECT_TRUE(ExpectMatchesReference(c, "every score below the threshold").empty());
  for (int64_t max : {0, -3}) {  // read at run time: the bound stays N per class; none kept
    c.score_threshold.reset();
    c.max_per_class = max;
    EXPECT_TRUE(ExpectMatchesReference(c, "max_output_boxes_per_class " + std::to_string(max)).empty());
  }
}

TEST(NonMaxSuppressionTest, RunTimeOperandsChangeTheSelection) {
  // One compiled graph, the operands' values changed between runs: each run matches the reference.
  std::vector<int64_t> previous;
  int changes = 0;
  for (float iou : {0.0f, 0.1f, 0.5f, 1.0f}) {
    for (std::optional<float> score_threshold : {std::optional<float>(), std::optional<float>(0.5f)}) {
      Nms c = RandomCase(5, 1, 2, 10, 0);
      c.max_per_class = 10;
      c.iou = iou;
      c.score_threshold = score_threshold;
      std::vector<int64_t> rows = ExpectMatchesReference(c, "iou " + std::to_string(iou));
      changes += rows != previous;
      previous = rows;
    }
  }
  EXPECT_GT(changes, 3);
}

TEST(NonMaxSuppressionTest, IouThresholdOutsideTheUnitIntervalFailsTheKernel) {
  for (float iou : {-0.5f, 1.5f, std::nanf("")}) {
    Nms c = RandomCase(2, 1, 1, 5, 0);
    c.max_per_class = 3;
    c.iou = iou;
    auto [g, inputs] = Build(c);
    testing::ExpectRunTimeOperandRefused(g, inputs, "'nms'");
  }
}

TEST(NonMaxSuppressionTest, CudaTargetsAreRefusedByName) {
  Nms c = RandomCase(2, 1, 1, 5, 0);
  c.max_per_class = 3;
  c.iou = 0.5f;
  Graph g = testing::Fuse(Build(c).first);
  try {
    LowerGroup(g, g.groups.at(0), target::Target::Parse("cuda -arch=sm_80"), "nms_kernel");
    ADD_FAILURE() << "lowered for cuda";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("NonMaxSuppression"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CPU targets only"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
