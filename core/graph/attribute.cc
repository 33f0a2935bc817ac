#include "core/graph/attribute.h"

#include <sstream>

#include "core/support/error.h"

namespace agate {
namespace graph {

const char* AttributeKindName(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::kInt: return "int";
    case Attribute::Kind::kFloat: return "float";
    case Attribute::Kind::kString: return "string";
    case Attribute::Kind::kInts: return "ints";
    case Attribute::Kind::kFloats: return "floats";
    case Attribute::Kind::kStrings: return "strings";
    case Attribute::Kind::kTensor: return "tensor";
  }
  return "?";
}

std::string Attribute::ToString() const {
  std::ostringstream os;
  auto list = [&os](const auto& values, auto print) {
    os << "[";
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) os << ",";
      print(values[i]);
    }
    os << "]";
  };
  switch (kind()) {
    case Kind::kInt: os << i(); break;
    case Kind::kFloat: os << f(); break;
    case Kind::kString: os << '"' << s() << '"'; break;
    case Kind::kInts: list(ints(), [&os](int64_t v) { os << v; }); break;
    case Kind::kFloats: list(floats(), [&os](double v) { os << v; }); break;
    case Kind::kStrings: list(strings(), [&os](const std::string& v) { os << '"' << v << '"'; }); break;
    case Kind::kTensor: os << "<" << t().dtype() << ShapeToString(t().shape()) << ">"; break;
  }
  return os.str();
}

const Attribute& Attributes::Get(const std::string& name) const {
  auto it = map_.find(name);
  AGATE_REQUIRE(it != map_.end(), kInvalidArgument) << "missing required attribute '" << name << "'";
  return it->second;
}

const Attribute& Attributes::GetKind(const std::string& name, Attribute::Kind kind) const {
  const Attribute& a = Get(name);
  AGATE_REQUIRE(a.kind() == kind, kInvalidArgument) << "attribute '" << name << "' is " << AttributeKindName(a.kind())
                                                    << ", expected " << AttributeKindName(kind);
  return a;
}

int64_t Attributes::GetInt(const std::string& name) const { return GetKind(name, Attribute::Kind::kInt).i(); }
double Attributes::GetFloat(const std::string& name) const {
  const Attribute& a = Get(name);
  if (a.kind() == Attribute::Kind::kInt) return static_cast<double>(a.i());
  return GetKind(name, Attribute::Kind::kFloat).f();
}
const std::string& Attributes::GetString(const std::string& name) const {
  return GetKind(name, Attribute::Kind::kString).s();
}
const std::vector<int64_t>& Attributes::GetInts(const std::string& name) const {
  return GetKind(name, Attribute::Kind::kInts).ints();
}
const std::vector<double>& Attributes::GetFloats(const std::string& name) const {
  return GetKind(name, Attribute::Kind::kFloats).floats();
}
const Tensor& Attributes::GetTensor(const std::string& name) const { return GetKind(name, Attribute::Kind::kTensor).t(); }

int64_t Attributes::GetInt(const std::string& name, int64_t fallback) const { return Has(name) ? GetInt(name) : fallback; }
double Attributes::GetFloat(const std::string& name, double fallback) const {
  return Has(name) ? GetFloat(name) : fallback;
}
std::string Attributes::GetString(const std::string& name, const std::string& fallback) const {
  return Has(name) ? GetString(name) : fallback;
}
int64_t Attributes::GetSingleInt(const std::string& name) const {
  const std::vector<int64_t>& values = GetInts(name);
  AGATE_REQUIRE(values.size() == 1, kInvalidArgument)
      << "attribute '" << name << "' must hold exactly one value, got " << values.size();
  return values[0];
}
int64_t Attributes::GetSingleInt(const std::string& name, int64_t fallback) const {
  return Has(name) ? GetSingleInt(name) : fallback;
}
int64_t Attributes::GetIntOrSingle(const std::string& name, int64_t fallback) const {
  if (Has(name) && Get(name).kind() != Attribute::Kind::kInt) return GetSingleInt(name);
  return GetInt(name, fallback);
}
std::vector<int64_t> Attributes::GetInts(const std::string& name, const std::vector<int64_t>& fallback) const {
  return Has(name) ? GetInts(name) : fallback;
}
std::vector<double> Attributes::GetFloats(const std::string& name, const std::vector<double>& fallback) const {
  return Has(name) ? GetFloats(name) : fallback;
}

std::vector<std::string> Attributes::GetStrings(const std::string& name,
                                                const std::vector<std::string>& fallback) const {
  return Has(name) ? GetKind(name, Attribute::Kind::kStrings).strings() : fallback;
}

std::string Attributes::ToString() const {
  if (map_.empty()) return "";
  std::string s = "{";
  bool first = true;
  for (const auto& [name, value] : map_) {
    if (!first) s += ", ";
    first = false;
    s += name + "=" + value.ToString();
  }
  return s + "}";
}

}  // namespace graph
}  // namespace agate
