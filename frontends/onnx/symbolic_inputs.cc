#include "frontends/onnx/symbolic_inputs.h"

#include <sstream>

#include "core/support/error.h"
#include "core/support/parse_int.h"

namespace agate {
namespace onnx_frontend {

std::map<std::string, graph::Shape> InputShapesAt(const onnx::ModelProto& model, const std::string& input_shape_text,
                                                  const std::map<std::string, int64_t>& values,
                                                  std::set<std::string>* symbolic_inputs) {
  std::string names;  // "N, S" for messages
  for (const auto& [name, extent] : values) names += (names.empty() ? "" : ", ") + name;
  const std::string symbol = values.size() == 1 ? values.begin()->first : names;
  std::map<std::string, graph::Shape> shapes;
  std::stringstream items(input_shape_text);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    const size_t colon = item.rfind(':');
    AGATE_REQUIRE(colon != std::string::npos && colon > 0, kInvalidArgument)
        << "--input-shape '" << item << "' must look like name:" << symbol << "x3x224x224";
    const std::string name = item.substr(0, colon);
    graph::Shape shape;
    std::stringstream dims(item.substr(colon + 1));
    std::string dim;
    while (std::getline(dims, dim, 'x')) {
      int64_t extent = 0;
      if (values.count(dim)) {
        extent = values.at(dim);
        symbolic_inputs->insert(name);
      } else {
        AGATE_REQUIRE(!dim.empty() && dim.find_first_not_of("0123456789") == std::string::npos &&
                          ParseInt64(dim, &extent),
                      kInvalidArgument)
            << "--input-shape '" << item << "': '" << dim << "' is neither a dimension nor the symbol " << symbol;
      }
      shape.push_back(extent);
    }
    shapes[name] = shape;
  }
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  for (const auto& in : model.graph().input()) {
    if (shapes.count(in.name()) || initializers.count(in.name()) || !in.type().has_tensor_type() ||
        !in.type().tensor_type().has_shape()) {
      continue;
    }
    graph::Shape shape;
    bool names_symbol = false, complete = true;
    std::string unbound, suggestion;  // the other unknown dims, and an --input-shape fixing them at 1
    for (const auto& d : in.type().tensor_type().shape().dim()) {
      if (!suggestion.empty()) suggestion += "x";
      if (d.has_dim_value() && d.dim_value() >= 0) {
        shape.push_back(d.dim_value());
        suggestion += std::to_string(d.dim_value());
      } else if (d.has_dim_param() && values.count(d.dim_param())) {
        shape.push_back(values.at(d.dim_param()));
        names_symbol = true;
        suggestion += d.dim_param();
      } else {
        complete = false;
        unbound += (unbound.empty() ? "'" : ", '") + (d.has_dim_param() ? d.dim_param() : std::string("?")) + "'";
        suggestion += "1";
      }
    }
    // An input that names a symbol beside other unknown dims needs those fixed (or bounded too).
    AGATE_REQUIRE(!names_symbol || complete, kInvalidArgument)
        << "input '" << in.name() << "' has the unknown dimension(s) " << unbound << " besides the symbol"
        << (values.size() == 1 ? " " : "s ") << symbol << ": fix them with --input-shape, e.g. --input-shape "
        << in.name() << ":" << suggestion << ", or bound them with another --bounds";
    if (names_symbol) {
      shapes[in.name()] = shape;
      symbolic_inputs->insert(in.name());
    }
  }
  return shapes;
}

}  // namespace onnx_frontend
}  // namespace agate
