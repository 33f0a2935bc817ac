// TfIdfVectorizer (ONNX, opset 9): the n-gram pool and counting rule, parsed once from the node's
// attributes for shape inference, the reference interpreter and the compiled kernel alike.
//
// Why a spec of its own: the operator's attributes are a small packed format (the pool of every
// n-gram flattened, ngram_counts marking where each length starts, ngram_indexes mapping pool
// entry i to an output column) with rules that are easy to get subtly wrong in three places. The
// counting rule, per input row of C tokens (ONNX's operator description; ONNX Runtime's kernel
// defines the same counts):
//   - 1-grams (when min_gram_length is 1): each position once, whatever the skips;
//   - n-grams for n >= max(2, min_gram_length) up to max_gram_length: for every skip distance
//     d = 1 .. max_skip_count + 1 and start i with i + (n - 1) * d < C, the tokens
//     x[i], x[i + d], ..., x[i + (n - 1) * d];
//   each one found in the pool adds 1 to the count of its entry's output column.
// Output: float, [max(ngram_indexes) + 1] per row (at most kMaxTfIdfColumns); TF is the count,
// IDF the entry's weight where the count is positive (1 without weights), TFIDF count * weight
// (the count without weights).
// Weights are the pool entries' (ONNX's "i-th element of weights is the weight of the i-th n-gram
// in pool"), so entries sharing an output column must share a weight. Integer pools only: agate
// has no string tensors.
#ifndef AGATE_CORE_GRAPH_TFIDF_VECTORIZER_H_
#define AGATE_CORE_GRAPH_TFIDF_VECTORIZER_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/attribute.h"

namespace agate {
namespace graph {

// The most output columns agate accepts (max(ngram_indexes) + 1): 16M floats per row.
inline constexpr int64_t kMaxTfIdfColumns = int64_t{1} << 24;

struct TfIdfVectorizerSpec {
  enum class Mode { kTF, kIDF, kTFIDF };
  struct Entry {
    std::vector<int64_t> tokens;  // the n-gram (n = tokens.size())
    int64_t column = 0;           // its output column (ngram_indexes)
  };
  Mode mode = Mode::kTF;
  int64_t min_n = 1, max_n = 1;
  int64_t max_skip = 0;
  std::vector<Entry> entries;         // the pool's n-grams with min_n <= n <= max_n, in pool order
  int64_t columns = 0;                // max(ngram_indexes) + 1
  std::vector<double> column_weight;  // per output column: its entries' weight (1 without weights)

  // Output value of a column from its count.
  double Value(int64_t column, int64_t count) const;
};

// Parses and checks the attributes; kInvalidArgument naming `where` and the attribute on any
// inconsistency (lengths out of range, a pool not made of whole n-grams, a negative index, a
// duplicate n-gram, weights of the wrong length or differing on one column), kUnsupported for
// pool_strings.
TfIdfVectorizerSpec ParseTfIdfVectorizer(const Attributes& attrs, const std::string& where);

// The skip distances that can hold an n-gram in a row of `length` tokens: 1 .. this (1 for
// unigrams; past (length - 1) / (n - 1) no n-gram fits, so a huge max_skip_count costs nothing).
inline int64_t UsefulDistances(const TfIdfVectorizerSpec& spec, int64_t n, int64_t length) {
  if (n == 1) return 1;
  if (length <= 1) return 0;
  return std::min(spec.max_skip, (length - 1) / (n - 1) - 1) + 1;
}

// The counts of one row of `length` tokens, per output column (the rule above); `token(i)` reads
// token i. The reference interpreter's: every entry compared at every start (the compiled kernel
// binary-searches sorted tables for the same counts).
template <typename TokenAt>
std::vector<int64_t> CountNgrams(const TfIdfVectorizerSpec& spec, int64_t length, const TokenAt& token) {
  std::vector<int64_t> counts(spec.columns, 0);
  for (const TfIdfVectorizerSpec::Entry& e : spec.entries) {
    const int64_t n = static_cast<int64_t>(e.tokens.size());
    const int64_t distances = UsefulDistances(spec, n, length);
    for (int64_t d = 1; d <= distances; ++d) {
      for (int64_t i = 0; i + (n - 1) * d < length; ++i) {
        bool match = true;
        for (int64_t k = 0; k < n && match; ++k) match = token(i + k * d) == e.tokens[k];
        counts[e.column] += match ? 1 : 0;
      }
    }
  }
  return counts;
}

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_TFIDF_VECTORIZER_H_
