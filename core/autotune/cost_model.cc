#include "core/autotune/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "core/support/error.h"

namespace agate {
namespace autotune {
namespace {

void XgbCheck(int status, const char* what) {
  AGATE_REQUIRE(status == 0, kInternal) << "XGBoost " << what << ": " << XGBGetLastError();
}

// A DMatrix owned for one scope.
class Matrix {
 public:
  Matrix(const std::vector<std::vector<float>>& rows, size_t columns) {
    std::vector<float> dense(rows.size() * columns, std::numeric_limits<float>::quiet_NaN());
    for (size_t r = 0; r < rows.size(); ++r)
      std::copy(rows[r].begin(), rows[r].begin() + std::min(rows[r].size(), columns), dense.begin() + r * columns);
    XgbCheck(XGDMatrixCreateFromMat(dense.data(), rows.size(), columns, std::numeric_limits<float>::quiet_NaN(), &handle_),
             "creating a matrix");
  }
  ~Matrix() { XGDMatrixFree(handle_); }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

class XgbCostModel : public CostModel {
 public:
  explicit XgbCostModel(uint64_t seed) : seed_(seed) {}
  ~XgbCostModel() override {
    if (booster_) XGBoosterFree(booster_);
  }

  void Add(int task_group, const std::vector<std::vector<float>>& features, const std::vector<double>& costs) override {
    AGATE_REQUIRE(features.size() == costs.size(), kInvalidArgument)
        << "cost model: " << features.size() << " feature rows for " << costs.size() << " costs";
    for (size_t i = 0; i < features.size(); ++i) {
      samples_[task_group].push_back({features[i], costs[i]});
      columns_ = std::max(columns_, features[i].size());
    }
  }

  void Train() override {
    // Rows grouped by task (one query group each); label = best / cost in (0, 1], failures 0.
    std::vector<std::vector<float>> rows;
    std::vector<float> labels;
    std::vector<unsigned> groups;
    for (const auto& [task, samples] : samples_) {
      double best = std::numeric_limits<double>::infinity();
      for (const auto& s : samples) best = std::min(best, s.cost);
      if (!std::isfinite(best) || samples.size() < 2) continue;
      for (const auto& s : samples) {
        rows.push_back(s.features);
        labels.push_back(std::isfinite(s.cost) && s.cost > 0 ? static_cast<float>(best / s.cost) : 0.0f);
      }
      groups.push_back(static_cast<unsigned>(samples.size()));
    }
    if (rows.size() < 4 || columns_ == 0) return;
    Matrix train(rows, columns_);
    XgbCheck(XGDMatrixSetFloatInfo(train.get(), "label", labels.data(), labels.size()), "setting labels");
    XgbCheck(XGDMatrixSetUIntInfo(train.get(), "group", groups.data(), groups.size()), "setting groups");
    if (booster_) XGBoosterFree(booster_);
    booster_ = nullptr;
    DMatrixHandle handles[] = {train.get()};
    XgbCheck(XGBoosterCreate(handles, 1, &booster_), "creating a booster");
    const std::string seed = std::to_string(seed_ % 2147483647);
    const std::pair<const char*, const char*> params[] = {
        {"objective", "rank:pairwise"}, {"max_depth", "6"}, {"eta", "0.2"}, {"min_child_weight", "1"},
        {"subsample", "1.0"}, {"nthread", "1"}, {"verbosity", "0"}, {"seed", seed.c_str()}};
    for (const auto& [k, v] : params) XgbCheck(XGBoosterSetParam(booster_, k, v), "setting a parameter");
    for (int iter = 0; iter < 30; ++iter) XgbCheck(XGBoosterUpdateOneIter(booster_, iter, train.get()), "training");
    trained_columns_ = columns_;
  }

  std::vector<float> Predict(const std::vector<std::vector<float>>& features) const override {
    if (!booster_ || features.empty()) return std::vector<float>(features.size(), 0.0f);
    Matrix m(features, trained_columns_);
    bst_ulong length = 0;
    const float* out = nullptr;
    XgbCheck(XGBoosterPredict(booster_, m.get(), 0, 0, 0, &length, &out), "predicting");
    AGATE_CHECK(length == features.size()) << "XGBoost predicted " << length << " of " << features.size() << " rows";
    return std::vector<float>(out, out + length);
  }

  bool trained() const override { return booster_ != nullptr; }

 private:
  struct Sample {
    std::vector<float> features;
    double cost;
  };
  uint64_t seed_;
  std::map<int, std::vector<Sample>> samples_;
  size_t columns_ = 0, trained_columns_ = 0;
  BoosterHandle booster_ = nullptr;
};

}  // namespace

std::unique_ptr<CostModel> MakeXgbCostModel(uint64_t seed) { return std::make_unique<XgbCostModel>(seed); }

}  // namespace autotune
}  // namespace agate
