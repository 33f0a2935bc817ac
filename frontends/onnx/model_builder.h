// A tiny builder of ONNX ModelProtos for tests, so no binary model is committed.
//
//   ModelBuilder b(13);
//   b.Input("x", onnx::TensorProto::FLOAT, {1, 3, 8, 8});
//   b.Initializer("w", weights);
//   b.Node("Conv", {"x", "w"}, {"y"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
//   b.Output("y");
//   onnx::ModelProto model = b.Build();
#ifndef AGATE_FRONTENDS_ONNX_MODEL_BUILDER_H_
#define AGATE_FRONTENDS_ONNX_MODEL_BUILDER_H_

#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include "core/graph/attribute.h"
#include "core/graph/tensor.h"

namespace agate {
namespace onnx_frontend {

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 13);

  // A graph input; a negative dimension becomes a symbolic one ("N").
  ModelBuilder& Input(const std::string& name, int elem_type, const std::vector<int64_t>& dims);
  ModelBuilder& Initializer(const std::string& name, const graph::Tensor& value);
  // A graph output; elem_type 0 and no dims leave the declaration untyped.
  ModelBuilder& Output(const std::string& name, int elem_type = 0, const std::vector<int64_t>& dims = {},
                       bool with_shape = false);
  // Attributes: int64_t, double, string, int/float lists, Tensor (Cast's `to` as an int).
  ModelBuilder& Node(const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs,
                     const std::vector<std::pair<std::string, graph::Attribute>>& attrs = {},
                     const std::string& name = "");

  onnx::ModelProto Build() const { return model_; }
  std::string Serialize() const { return model_.SerializeAsString(); }

 private:
  onnx::ModelProto model_;
};

}  // namespace onnx_frontend
}  // namespace agate

#endif  // AGATE_FRONTENDS_ONNX_MODEL_BUILDER_H_
