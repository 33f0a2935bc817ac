// TfIdfVectorizer's compiled kernel (tfidf_vectorizer.h) on the loop-IR evaluator and as LLVM host
// code: counts worked by hand (unigrams once, bigrams per skip distance, gaps and a permutation in
// ngram_indexes, the three modes with and without weights, int32 batches, rows too short for an
// n-gram), random token rows against the reference interpreter, and bad attributes and cuda
// refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/graph/op_registry.h"
#include "core/graph/testing/graph_builder.h"
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

using Attrs = std::vector<std::pair<std::string, Attribute>>;

// Unigrams 1, 3, 9 and bigrams (1,2), (2,1), (1,1): pool entries 0..5.
Attrs PoolAttrs(const std::string& mode, int64_t min_n, int64_t max_n, int64_t skip) {
  return {{"mode", mode},
          {"min_gram_length", min_n},
          {"max_gram_length", max_n},
          {"max_skip_count", skip},
          {"ngram_counts", std::vector<int64_t>{0, 3}},
          {"ngram_indexes", std::vector<int64_t>{0, 1, 2, 3, 4, 5}},
          {"pool_int64s", std::vector<int64_t>{1, 3, 9, 1, 2, 2, 1, 1, 1}}};
}

Graph TfIdfOf(ir::DType dtype, const Shape& x, Attrs attrs) {
  Graph g;
  g.AddInput("x", TensorType{dtype, x});
  Add(&g, "TfIdfVectorizer", "tfidf", {"x"}, {"y"}, attrs);
  return Finish(g, {"y"});
}

std::vector<double> Compiled(const Graph& g, const std::vector<int64_t>& x, testing::Backend backend) {
  const TensorType& type = g.TypeOf("x");
  std::map<std::string, graph::Tensor> inputs = {{"x", graph::Tensor::FromInts(type.dtype, type.shape, x)}};
  return testing::RunGroups(testing::Fuse(g), inputs, backend, target::Target::Parse("llvm")).at("y").ToDoubles();
}

const ir::DType kI64 = ir::DType::Int(64);
const std::vector<testing::Backend> kBackends = {testing::Backend::kEval, testing::Backend::kLLVM};

// x = 1 2 1 2 3: unigrams 1 twice, 3 once; bigrams at distance 1: (1,2) (2,1) (1,2) (2,3), at
// distance 2: (1,1) (2,2) (1,3). So with one skip: 2 1 0 | 2 1 1; without skips (1,1) is not
// counted; from 2-grams only the unigram columns stay 0.
TEST(TfIdfVectorizerTest, CountsWorkedByHand) {
  const std::vector<int64_t> x = {1, 2, 1, 2, 3};
  for (testing::Backend backend : kBackends) {
    EXPECT_EQ(Compiled(TfIdfOf(kI64, {5}, PoolAttrs("TF", 1, 2, 1)), x, backend),
              (std::vector<double>{2, 1, 0, 2, 1, 1}));
    EXPECT_EQ(Compiled(TfIdfOf(kI64, {5}, PoolAttrs("TF", 1, 2, 0)), x, backend),
              (std::vector<double>{2, 1, 0, 2, 1, 0}));
    EXPECT_EQ(Compiled(TfIdfOf(kI64, {5}, PoolAttrs("TF", 2, 2, 1)), x, backend),
              (std::vector<double>{0, 0, 0, 2, 1, 1}));
    EXPECT_EQ(Compiled(TfIdfOf(kI64, {5}, PoolAttrs("TF", 1, 1, 3)), x, backend),
              (std::vector<double>{2, 1, 0, 0, 0, 0}));
    // Every skip that fits (distances 1..4 here: (1,2) at distance 3 too), however large the count.
    EXPECT_EQ(Compiled(TfIdfOf(kI64, {5}, PoolAttrs("TF", 1, 2, std::numeric_limits<int64_t>::max())), x, backend),
              (std::vector<double>{2, 1, 0, 3, 1, 1}));
  }
}

// Entries to columns 5 0 2 1 6 3 (column 4 has none): the counts 2 1 0 2 1 1 land there.
TEST(TfIdfVectorizerTest, NgramIndexesPlaceTheCounts) {
  Attrs attrs = PoolAttrs("TF", 1, 2, 1);
  attrs[5].second = std::vector<int64_t>{5, 0, 2, 1, 6, 3};
  for (testing::Backend backend : kBackends) {
    EXPECT_EQ(Compiled(TfIdfOf(kI64, {5}, attrs), {1, 2, 1, 2, 3}, backend),
              (std::vector<double>{1, 2, 0, 1, 0, 2, 1}));
  }
}

// IDF: the weight where the count is positive; TFIDF: count x weight; without weights 1.
TEST(TfIdfVectorizerTest, ModesWeighTheCounts) {
  const std::vector<int64_t> x = {1, 2, 1, 2, 3};
  auto with_weights = [](Attrs a) {
    a.push_back({"weights", std::vector<double>{0.5, 1, 2, 0.25, 3, 4}});
    return a;
  };
  for (testing::Backend backend : kBackends) {
    EXPECT_EQ(Compiled(TfIdfOf(kI64, {5}, with_weights(PoolAttrs("IDF", 1, 2, 1))), x, backend),
              (std::vector<double>{0.5, 1, 0, 0.25, 3, 4}));
    EXPECT_EQ(Compiled(TfIdfOf(kI64, {5}, with_weights(PoolAttrs("TFIDF", 1, 2, 1))), x, backend),
              (std::vector<double>{1, 1, 0, 0.5, 3, 4}));
    EXPECT_EQ(Compiled(TfIdfOf(kI64, {5}, PoolAttrs("IDF", 1, 2, 1)), x, backend),
              (std::vector<double>{1, 1, 0, 1, 1, 1}));
    EXPECT_EQ(Compiled(TfIdfOf(kI64, {5}, PoolAttrs("TFIDF", 1, 2, 1)), x, backend),
              (std::vector<double>{2, 1, 0, 2, 1, 1}));
  }
}

// Rows are counted apart (int32 tokens); a row of one token has no bigram.
TEST(TfIdfVectorizerTest, BatchesAndShortRows) {
  const ir::DType i32 = ir::DType::Int(32);
  for (testing::Backend backend : kBackends) {
    EXPECT_EQ(Compiled(TfIdfOf(i32, {2, 5}, PoolAttrs("TF", 1, 2, 1)), {1, 2, 1, 2, 3, 3, 3, 3, 1, 2}, backend),
              (std::vector<double>{2, 1, 0, 2, 1, 1, /**/ 1, 3, 0, 1, 0, 0}));
    EXPECT_EQ(Compiled(TfIdfOf(i32, {3, 1}, PoolAttrs("TF", 1, 2, 2)), {1, 2, 9}, backend),
              (std::vector<double>{1, 0, 0, 0, 0, 0, /**/ 0, 0, 0, 0, 0, 0, /**/ 0, 0, 1, 0, 0, 0}));
  }
}

// Random rows of tokens in [0, 4) against the reference interpreter, with 1- to 3-grams.
TEST(TfIdfVectorizerTest, MatchesTheReferenceOnRandomRows) {
  Attrs attrs = {{"mode", "TFIDF"},
                 {"max_skip_count", int64_t{2}},
                 {"ngram_counts", std::vector<int64_t>{0, 2, 8}},
                 {"ngram_indexes", std::vector<int64_t>{3, 0, 1, 2, 6, 4, 5}},
                 {"pool_int64s", std::vector<int64_t>{0, 3, /**/ 0, 1, 2, 2, 1, 1, /**/ 1, 2, 3, 0, 0, 0}},
                 {"weights", std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7}}};
  for (const auto& [min_n, max_n] : std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {2, 3}, {3, 3}, {1, 2}}) {
    Attrs a = attrs;
    a.push_back({"min_gram_length", min_n});
    a.push_back({"max_gram_length", max_n});
    for (const Shape& x : std::vector<Shape>{{17}, {3, 11}}) {
      for (uint32_t seed : {1u, 2u}) {
        testing::CheckOptions options;
        options.seed = seed;
        EXPECT_TRUE(testing::CheckAgainstReference(TfIdfOf(kI64, x, a), options))
            << min_n << ".." << max_n << " " << graph::ShapeToString(x);
      }
    }
  }
}

// A vocabulary of 20 unigrams and 150 distinct bigrams and 40 trigrams over tokens 0..19, in
// shuffled pool order and mapped to shuffled columns: the kernel's binary search over the sorted
// tables finds what the reference's scan finds, on rows of random tokens with up to 3 skips.
TEST(TfIdfVectorizerTest, LargePoolsMatchTheReference) {
  std::mt19937 random(5);
  auto shuffled_distinct = [&](int64_t n, int64_t count) {
    std::set<std::vector<int64_t>> seen;
    std::vector<int64_t> flat;
    while (static_cast<int64_t>(seen.size()) < count) {
      std::vector<int64_t> gram(n);
      for (int64_t& t : gram) t = static_cast<int64_t>(random() % 20);
      if (seen.insert(gram).second) flat.insert(flat.end(), gram.begin(), gram.end());
    }
    return flat;
  };
  std::vector<int64_t> pool = shuffled_distinct(1, 20), bigrams = shuffled_distinct(2, 150),
                       trigrams = shuffled_distinct(3, 40);
  pool.insert(pool.end(), bigrams.begin(), bigrams.end());
  pool.insert(pool.end(), trigrams.begin(), trigrams.end());
  std::vector<int64_t> columns(210);
  std::iota(columns.begin(), columns.end(), 0);
  std::shuffle(columns.begin(), columns.end(), random);
  Attrs attrs = {{"mode", "TF"},
                 {"min_gram_length", int64_t{1}},
                 {"max_gram_length", int64_t{3}},
                 {"max_skip_count", int64_t{3}},
                 {"ngram_counts", std::vector<int64_t>{0, 20, 320}},
                 {"ngram_indexes", columns},
                 {"pool_int64s", pool}};
  Graph g = TfIdfOf(kI64, {4, 40}, attrs);
  std::vector<int64_t> tokens(160);
  for (int64_t& t : tokens) t = static_cast<int64_t>(random() % 20);
  testing::CheckOptions options;
  options.inputs = {{"x", graph::Tensor::FromInts(kI64, {4, 40}, tokens)}};
  options.tolerance = 0;
  EXPECT_TRUE(testing::CheckAgainstReference(g, options));
  // And the counts are not all zero (the comparison would be empty otherwise).
  graph::Tensor y = testing::RunGroups(testing::Fuse(g), options.inputs, testing::Backend::kLLVM,
                                       target::Target::Parse("llvm")).at("y");
  double total = 0;
  for (double v : y.ToDoubles()) total += v;
  EXPECT_GT(total, 160);
}

void ExpectError(const std::function<void()>& f, StatusCode code, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(TfIdfVectorizerTest, BadAttributesAndCudaAreRefusedByName) {
  auto with = [](const std::string& name, Attribute value) {
    Attrs a = PoolAttrs("TF", 1, 2, 1);
    for (auto& [n, v] : a)
      if (n == name) v = value;
    if (name == "weights") a.push_back({name, value});
    return a;
  };
  ExpectError([&] { TfIdfOf(kI64, {5}, with("mode", "BM25")); }, StatusCode::kInvalidArgument, {"'tfidf'", "BM25"});
  ExpectError([&] { TfIdfOf(kI64, {5}, with("max_gram_length", int64_t{3})); }, StatusCode::kInvalidArgument,
              {"'tfidf'", "ngram_counts"});
  ExpectError([&] { TfIdfOf(kI64, {5}, with("pool_int64s", std::vector<int64_t>{1, 3, 9, 1, 2, 2, 1, 1})); },
              StatusCode::kInvalidArgument, {"'tfidf'", "whole 2-grams"});
  ExpectError([&] { TfIdfOf(kI64, {5}, with("pool_int64s", std::vector<int64_t>{1, 3, 1, 1, 2, 2, 1, 1, 1})); },
              StatusCode::kInvalidArgument, {"'tfidf'", "appears twice"});
  ExpectError([&] { TfIdfOf(kI64, {5}, with("ngram_indexes", std::vector<int64_t>{0, 1, 2, 3, -4, 5})); },
              StatusCode::kInvalidArgument, {"'tfidf'", "ngram_indexes[4] = -4"});
  ExpectError([&] { TfIdfOf(kI64, {5}, with("ngram_indexes", std::vector<int64_t>{0, 1, 2, 3, int64_t{1} << 40, 5})); },
              StatusCode::kInvalidArgument, {"'tfidf'", "output column 1099511627776"});
  ExpectError([&] { TfIdfOf(kI64, {5}, with("weights", std::vector<double>{1, 2})); }, StatusCode::kInvalidArgument,
              {"'tfidf'", "2 weights for 6 n-grams"});
  ExpectError([&] { TfIdfOf(ir::DType::Float(32), {5}, PoolAttrs("TF", 1, 2, 1)); }, StatusCode::kInvalidArgument,
              {"'tfidf'", "int32 or int64"});
  graph::Node strings;
  strings.op = "TfIdfVectorizer";
  strings.name = "s";
  strings.inputs = {"x"};
  strings.attrs.Set("pool_strings", std::vector<std::string>{"a"});
  EXPECT_NE(graph::UnsupportedReason(strings).find("pool_strings"), std::string::npos);
  Graph fused = testing::Fuse(TfIdfOf(kI64, {5}, PoolAttrs("TF", 1, 2, 1)));
  ExpectError([&] { LowerGroup(fused, fused.groups.at(0), target::Target::Parse("cuda -arch=sm_80"), "k"); },
              StatusCode::kUnsupported, {"TfIdfVectorizer 'tfidf'"});
}

}  // namespace
}  // namespace ops
}  // namespace agate
