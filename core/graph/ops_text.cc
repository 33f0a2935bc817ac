// Text features: TfIdfVectorizer (core/graph/tfidf_vectorizer.h holds its rules).
#include "core/graph/op_registry.h"
#include "core/graph/shape_rules.h"
#include "core/graph/tfidf_vectorizer.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using Types = std::vector<TensorType>;

Types TfIdfVectorizerInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  AGATE_REQUIRE(x.dtype == DType::Int(32) || x.dtype == DType::Int(64), kInvalidArgument)
      << Where(ctx) << ": tokens of type " << x.dtype << " (int32 or int64; string tokens are not supported)";
  AGATE_REQUIRE(x.rank() == 1 || x.rank() == 2, kInvalidArgument)
      << Where(ctx) << ": tokens of shape " << ShapeToString(x.shape) << " ([C] or [N, C])";
  TfIdfVectorizerSpec spec = ParseTfIdfVectorizer(ctx.attrs(), Where(ctx));
  Shape out = x.rank() == 1 ? Shape{spec.columns} : Shape{x.shape[0], spec.columns};
  return {TensorType{DType::Float(32), out}};
}

}  // namespace

void RegisterTextOps(OpRegistry* r) {
  OpDef tfidf = Def("TfIdfVectorizer", OpKind::kOpaque, 1, 1,
                    {"mode", "min_gram_length", "max_gram_length", "max_skip_count", "ngram_counts", "ngram_indexes",
                     "pool_int64s", "pool_strings", "weights"},
                    TfIdfVectorizerInfer);
  tfidf.check = [](const Node& node) -> std::string {
    return node.attrs.Has("pool_strings") ? "attribute 'pool_strings' (string n-grams; agate has no string tensors)"
                                          : "";
  };
  r->Register(std::move(tfidf));
}

}  // namespace graph
}  // namespace agate
