#include "core/graph/tfidf_vectorizer.h"

#include <algorithm>
#include <set>

#include "core/support/error.h"

namespace agate {
namespace graph {

double TfIdfVectorizerSpec::Value(int64_t column, int64_t count) const {
  const double w = column_weight[column];
  switch (mode) {
    case Mode::kTF: return static_cast<double>(count);
    case Mode::kIDF: return count > 0 ? w : 0.0;
    case Mode::kTFIDF: return static_cast<double>(count) * w;
  }
  return 0.0;
}

TfIdfVectorizerSpec ParseTfIdfVectorizer(const Attributes& attrs, const std::string& where) {
  TfIdfVectorizerSpec spec;
  const std::string mode = attrs.GetString("mode");
  if (mode == "TF") {
    spec.mode = TfIdfVectorizerSpec::Mode::kTF;
  } else if (mode == "IDF") {
    spec.mode = TfIdfVectorizerSpec::Mode::kIDF;
  } else if (mode == "TFIDF") {
    spec.mode = TfIdfVectorizerSpec::Mode::kTFIDF;
  } else {
    AGATE_THROW(kInvalidArgument) << where << ": mode '" << mode << "' (TF, IDF or TFIDF)";
  }
  AGATE_REQUIRE(!attrs.Has("pool_strings"), kUnsupported)
      << where << ": pool_strings (string n-grams; agate has no string tensors: give pool_int64s)";
  spec.min_n = attrs.GetInt("min_gram_length");
  spec.max_n = attrs.GetInt("max_gram_length");
  spec.max_skip = attrs.GetInt("max_skip_count");
  const std::vector<int64_t>& counts = attrs.GetInts("ngram_counts");
  const std::vector<int64_t>& indexes = attrs.GetInts("ngram_indexes");
  const std::vector<int64_t>& pool = attrs.GetInts("pool_int64s");
  AGATE_REQUIRE(spec.min_n >= 1 && spec.max_n >= spec.min_n, kInvalidArgument)
      << where << ": min_gram_length " << spec.min_n << " and max_gram_length " << spec.max_n
      << " (needs 1 <= min <= max)";
  AGATE_REQUIRE(spec.max_skip >= 0, kInvalidArgument) << where << ": max_skip_count " << spec.max_skip << " < 0";
  AGATE_REQUIRE(!counts.empty() && static_cast<int64_t>(counts.size()) >= spec.max_n, kInvalidArgument)
      << where << ": ngram_counts has " << counts.size() << " start(s), max_gram_length " << spec.max_n
      << " needs one per length";
  AGATE_REQUIRE(!indexes.empty(), kInvalidArgument) << where << ": empty ngram_indexes";
  int64_t entry = 0;  // pool entry number: the index into ngram_indexes and weights
  std::set<std::vector<int64_t>> seen;
  std::vector<int64_t> entry_of_kept;
  for (size_t level = 0; level < counts.size(); ++level) {
    const int64_t n = static_cast<int64_t>(level) + 1;
    const int64_t begin = counts[level];
    const int64_t end = level + 1 < counts.size() ? counts[level + 1] : static_cast<int64_t>(pool.size());
    AGATE_REQUIRE(begin >= 0 && begin <= end && end <= static_cast<int64_t>(pool.size()), kInvalidArgument)
        << where << ": ngram_counts[" << level << "] = " << begin << " gives the " << n << "-grams pool items ["
        << begin << ", " << end << ") of " << pool.size();
    AGATE_REQUIRE((end - begin) % n == 0, kInvalidArgument)
        << where << ": " << (end - begin) << " pool items are not whole " << n << "-grams";
    for (int64_t at = begin; at < end; at += n, ++entry) {
      AGATE_REQUIRE(entry < static_cast<int64_t>(indexes.size()), kInvalidArgument)
          << where << ": the pool holds more n-grams than ngram_indexes' " << indexes.size();
      AGATE_REQUIRE(indexes[entry] >= 0, kInvalidArgument)
          << where << ": ngram_indexes[" << entry << "] = " << indexes[entry] << " < 0";
      if (n < spec.min_n || n > spec.max_n) continue;
      std::vector<int64_t> tokens(pool.begin() + at, pool.begin() + at + n);
      AGATE_REQUIRE(seen.insert(tokens).second, kInvalidArgument)
          << where << ": the " << n << "-gram at pool_int64s[" << at << "] appears twice";
      spec.entries.push_back({std::move(tokens), indexes[entry]});
      entry_of_kept.push_back(entry);
    }
  }
  AGATE_REQUIRE(entry == static_cast<int64_t>(indexes.size()), kInvalidArgument)
      << where << ": ngram_indexes has " << indexes.size() << " entries for the pool's " << entry << " n-grams";
  const int64_t last_column = *std::max_element(indexes.begin(), indexes.end());
  AGATE_REQUIRE(last_column < kMaxTfIdfColumns, kInvalidArgument)
      << where << ": ngram_indexes names output column " << last_column << "; agate accepts at most "
      << kMaxTfIdfColumns << " columns";
  spec.columns = last_column + 1;
  spec.column_weight.assign(spec.columns, 1.0);
  if (attrs.Has("weights")) {
    const std::vector<double>& weights = attrs.GetFloats("weights");
    AGATE_REQUIRE(weights.size() == indexes.size(), kInvalidArgument)
        << where << ": " << weights.size() << " weights for " << indexes.size() << " n-grams";
    std::vector<bool> set(spec.columns, false);
    for (size_t k = 0; k < spec.entries.size(); ++k) {
      const int64_t column = spec.entries[k].column;
      const double w = weights[entry_of_kept[k]];
      AGATE_REQUIRE(!set[column] || spec.column_weight[column] == w, kInvalidArgument)
          << where << ": output column " << column << " has n-grams of weights " << spec.column_weight[column]
          << " and " << w;
      spec.column_weight[column] = w;
      set[column] = true;
    }
  }
  return spec;
}

}  // namespace graph
}  // namespace agate
