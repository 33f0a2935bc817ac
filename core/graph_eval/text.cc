// Reference kernel of TfIdfVectorizer: the counting rule of core/graph/tfidf_vectorizer.h, row by row.
#include "core/graph/tfidf_vectorizer.h"
#include "core/graph_eval/kernel.h"

namespace agate {
namespace graph_eval {

using namespace graph;  // the graph IR is what this layer runs

namespace {

std::vector<Tensor> TfIdfVectorizer(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  TfIdfVectorizerSpec spec = ParseTfIdfVectorizer(ctx.attrs(), ctx.node.Describe());
  const int64_t rows = x.shape().size() == 2 ? x.shape()[0] : 1;
  const int64_t length = x.shape().back();
  Tensor out = ctx.NewOutput(0);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> counts =
        CountNgrams(spec, length, [&](int64_t i) { return x.GetInt(r * length + i); });
    for (int64_t c = 0; c < spec.columns; ++c) out.SetDouble(r * spec.columns + c, spec.Value(c, counts[c]));
  }
  return {out};
}

}  // namespace

void RegisterTextKernels(KernelRegistry* r) { r->Register("TfIdfVectorizer", TfIdfVectorizer); }

}  // namespace graph_eval
}  // namespace agate
