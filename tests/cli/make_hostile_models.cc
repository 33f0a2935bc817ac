// Writes models that once aborted `agate compile` (uncaught std::out_of_range from std::stoll
// and .at(0)), for cli_test.sh: make_hostile_models DIR writes DIR/external_offset.onnx (an
// external-data offset that does not fit in 64 bits; DIR/weights.bin beside it) and
// DIR/empty_axis.onnx (CumSum with an empty axis tensor); and DIR/run_time_scales.onnx, a Resize
// whose scales are a model input and whose output is declared [1,1,3,10] (compiled for that shape,
// scales checked when the model runs).
#include <cstdio>
#include <fstream>
#include <string>

#include "core/graph/tensor.h"
#include "frontends/onnx/model_builder.h"

using agate::graph::DType;
using agate::graph::Tensor;
using agate::onnx_frontend::ModelBuilder;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_hostile_models DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  std::ofstream(dir + "/weights.bin", std::ios::binary) << std::string(64, '\1');

  ModelBuilder external(13);
  external.Input("x", onnx::TensorProto::FLOAT, {2, 2});
  external.Node("Add", {"x", "w"}, {"y"});
  external.Output("y");
  onnx::ModelProto model = external.Build();
  onnx::TensorProto* w = model.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_dims(2);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [key, value] : {std::pair<const char*, const char*>{"location", "weights.bin"},
                            {"offset", "99999999999999999999"}}) {
    auto* e = w->add_external_data();
    e->set_key(key);
    e->set_value(value);
  }
  std::ofstream(dir + "/external_offset.onnx", std::ios::binary) << model.SerializeAsString();

  ModelBuilder cumsum(14);
  cumsum.Input("x", onnx::TensorProto::FLOAT, {2, 3});
  cumsum.Initializer("axis", Tensor::FromInts(DType::Int(64), {0}, {}));
  cumsum.Node("CumSum", {"x", "axis"}, {"y"});
  cumsum.Output("y");
  std::ofstream(dir + "/empty_axis.onnx", std::ios::binary) << cumsum.Serialize();

  ModelBuilder resize(13);
  resize.Input("x", onnx::TensorProto::FLOAT, {1, 1, 5, 5}).Input("scales", onnx::TensorProto::FLOAT, {4});
  resize.Node("Resize", {"x", "", "scales"}, {"y"}, {{"mode", std::string("linear")}}, "resize");
  resize.Output("y", onnx::TensorProto::FLOAT, {1, 1, 3, 10}, true);
  std::ofstream(dir + "/run_time_scales.onnx", std::ios::binary) << resize.Serialize();
  return 0;
}
