// TfIdfVectorizer (ONNX-9) compiled into one kernel of hand-written loop IR.
//
// Why a kernel builder of its own: counting n-grams is a scatter (every match adds 1 to the column
// its pool entry names), not a function of the output index, and the pool is data the kernel
// searches. The pool becomes constant tables of the kernel, one per n-gram length n (the entries'
// tokens sorted lexicographically, [E_n, n] int64, and their output columns, [E_n] int64), and
// for each row of tokens:
//
//   zero the row's output
//   for each length n with entries: for each skip distance d that fits an n-gram (1 only for
//     n = 1) and each start i with i + (n - 1) d < C: binary-search the n-gram
//     x[i], x[i + d], ..., x[i + (n - 1) d] among the sorted entries (bit_width(E_n) halvings of
//     a lexicographic compare) and add 1 to the found entry's column
//   IDF / TFIDF: each column's count becomes its value (core/graph/tfidf_vectorizer.h), the
//     weights a constant float table per column
//
// O(rows x C x skips x n log E) compares, so vocabularies of many thousand n-grams cost little
// more than a few; counts are exact in float32 below 2^24 per column. The same counts as the
// reference interpreter (CountNgrams). CPU targets.
#ifndef AGATE_CORE_OPS_TFIDF_VECTORIZER_H_
#define AGATE_CORE_OPS_TFIDF_VECTORIZER_H_

#include <string>

#include "core/graph/graph.h"
#include "core/ops/lower_group.h"
#include "core/target/target.h"

namespace agate {
namespace ops {

// True for the op LowerTfIdfVectorizerGroup builds.
bool IsTfIdfVectorizerOp(const std::string& op);

// Lowers a group holding one TfIdfVectorizer node to one kernel (see the header comment).
// kUnsupported for cuda targets, naming the node; the attributes' errors as
// graph::ParseTfIdfVectorizer gives them.
GroupKernel LowerTfIdfVectorizerGroup(const graph::Graph& graph, const graph::FusedGroup& group,
                                      const target::Target& target, const std::string& kernel_name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_TFIDF_VECTORIZER_H_
