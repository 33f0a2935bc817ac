// Typed operator attributes (kernel_shape=[3,3], alpha=0.1, mode="nearest").
//
// Why typed: ONNX stores attributes as a tagged union; passes and shape rules must
// not guess whether `axis` was an int or a float. Each Attribute holds exactly one
// of seven kinds, and the accessors of Attributes throw an agate::Error naming the
// attribute when it is missing or of another kind.
#ifndef AGATE_CORE_GRAPH_ATTRIBUTE_H_
#define AGATE_CORE_GRAPH_ATTRIBUTE_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/graph/tensor.h"

namespace agate {
namespace graph {

class Attribute {
 public:
  enum class Kind { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor };

  Attribute() : value_(int64_t{0}) {}
  Attribute(int64_t v) : value_(v) {}                      // NOLINT: implicit by design
  Attribute(int v) : value_(int64_t{v}) {}                 // NOLINT
  Attribute(double v) : value_(v) {}                       // NOLINT
  Attribute(std::string v) : value_(std::move(v)) {}       // NOLINT
  Attribute(const char* v) : value_(std::string(v)) {}     // NOLINT
  Attribute(std::vector<int64_t> v) : value_(std::move(v)) {}   // NOLINT
  Attribute(std::vector<double> v) : value_(std::move(v)) {}    // NOLINT
  Attribute(std::vector<std::string> v) : value_(std::move(v)) {}  // NOLINT
  Attribute(Tensor v) : value_(std::move(v)) {}            // NOLINT

  Kind kind() const { return static_cast<Kind>(value_.index()); }
  int64_t i() const { return std::get<int64_t>(value_); }
  double f() const { return std::get<double>(value_); }
  const std::string& s() const { return std::get<std::string>(value_); }
  const std::vector<int64_t>& ints() const { return std::get<std::vector<int64_t>>(value_); }
  const std::vector<double>& floats() const { return std::get<std::vector<double>>(value_); }
  const std::vector<std::string>& strings() const { return std::get<std::vector<std::string>>(value_); }
  const Tensor& t() const { return std::get<Tensor>(value_); }

  // "3", "0.1", "\"nearest\"", "[1,1]", "<float32[3]>".
  std::string ToString() const;

 private:
  std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, std::vector<std::string>, Tensor>
      value_;
};

const char* AttributeKindName(Attribute::Kind kind);

// The attributes of one node, ordered by name so printing is deterministic.
class Attributes {
 public:
  bool Has(const std::string& name) const { return map_.count(name) > 0; }
  void Set(const std::string& name, Attribute value) { map_[name] = std::move(value); }
  void Erase(const std::string& name) { map_.erase(name); }
  const std::map<std::string, Attribute>& all() const { return map_; }
  bool empty() const { return map_.empty(); }

  // Required accessors: throw kInvalidArgument naming the attribute when missing or mistyped.
  const Attribute& Get(const std::string& name) const;
  int64_t GetInt(const std::string& name) const;
  double GetFloat(const std::string& name) const;
  const std::string& GetString(const std::string& name) const;
  const std::vector<int64_t>& GetInts(const std::string& name) const;
  const std::vector<double>& GetFloats(const std::string& name) const;
  const Tensor& GetTensor(const std::string& name) const;

  // An int list that must hold exactly one value (a static operand such as CumSum's axis or
  // Trilu's k, moved from a one-element input): throws kInvalidArgument naming the attribute
  // when it is empty, longer, missing (first form) or not an int list.
  int64_t GetSingleInt(const std::string& name) const;
  int64_t GetSingleInt(const std::string& name, int64_t fallback) const;
  // An int attribute, or an int list of one value (an operand moved to an attribute, such as
  // CumSum's axis), or `fallback` when absent: for analyses that read either form.
  int64_t GetIntOrSingle(const std::string& name, int64_t fallback) const;

  // Accessors with a default for an absent attribute (a present one of the wrong kind still throws).
  int64_t GetInt(const std::string& name, int64_t fallback) const;
  double GetFloat(const std::string& name, double fallback) const;
  std::string GetString(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> GetInts(const std::string& name, const std::vector<int64_t>& fallback) const;
  std::vector<double> GetFloats(const std::string& name, const std::vector<double>& fallback) const;
  std::vector<std::string> GetStrings(const std::string& name, const std::vector<std::string>& fallback) const;

  bool operator==(const Attributes& other) const { return ToString() == other.ToString(); }
  // "{axis=1, pads=[0,0,1,1]}" or "" when empty.
  std::string ToString() const;

 private:
  const Attribute& GetKind(const std::string& name, Attribute::Kind kind) const;
  std::map<std::string, Attribute> map_;
};

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_ATTRIBUTE_H_
