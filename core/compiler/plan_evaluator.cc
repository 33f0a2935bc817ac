#include "core/compiler/plan_evaluator.h"

#include <cstring>

#include "core/loop_eval/evaluator.h"
#include "core/support/error.h"

namespace agate {
namespace compiler {
namespace {

// Bytes aligned like the runtime aligns them (64, the most the module asks of the arena).
class AlignedBytes {
 public:
  explicit AlignedBytes(size_t n) : storage_((n + 63) / 64 + 1) { std::memset(storage_.data(), 0xFF, storage_.size() * 64); }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(storage_.data()); }

 private:
  struct alignas(64) Line {
    uint8_t bytes[64];
  };
  std::vector<Line> storage_;
};

}  // namespace

std::vector<graph::Tensor> EvaluatePlan(const CompileResult& result, const std::vector<graph::Tensor>& inputs) {
  const serialize::ModuleSpec& spec = result.spec;
  AGATE_REQUIRE(inputs.size() == spec.inputs.size(), kInvalidArgument)
      << "the module takes " << spec.inputs.size() << " inputs, got " << inputs.size();
  for (size_t i = 0; i < inputs.size(); ++i) {
    AGATE_REQUIRE(inputs[i].dtype() == spec.inputs[i].dtype && inputs[i].shape() == spec.inputs[i].shape,
                  kInvalidArgument)
        << "input " << spec.inputs[i].name << " is " << inputs[i].ToString(0) << ", the module wants "
        << spec.inputs[i].dtype << " " << graph::ShapeToString(spec.inputs[i].shape);
  }
  bool groups_known = result.call_group.size() == spec.plan.size();
  for (size_t group : result.call_group) groups_known = groups_known && group < result.funcs.size();
  AGATE_REQUIRE(groups_known, kInvalidArgument) << "the compile result keeps no loop IR for its plan";
  AlignedBytes arena(spec.arena_bytes);
  std::vector<AlignedBytes> constants;
  for (const serialize::ConstantSpec& c : spec.constants) {
    constants.emplace_back(c.data.size());
    std::memcpy(constants.back().data(), c.data.data(), c.data.size());
  }
  std::vector<graph::Tensor> in = inputs;
  std::vector<graph::Tensor> outputs;
  for (const serialize::TensorSpec& t : spec.outputs) outputs.emplace_back(t.dtype, t.shape);
  for (size_t c = 0; c < spec.plan.size(); ++c) {
    size_t group = result.call_group[c];
    if (c > 0 && result.call_group[c - 1] == group) continue;  // the group's later launches ran with its first
    std::vector<loop_eval::ArgBuffer> args;
    for (const serialize::ArgSpec& a : spec.plan[c].args) {
      uint8_t* base = nullptr;
      switch (a.kind) {
        case serialize::ArgSpec::Kind::kInput: base = static_cast<uint8_t*>(in.at(a.index).mutable_raw_data()); break;
        case serialize::ArgSpec::Kind::kOutput:
          base = static_cast<uint8_t*>(outputs.at(a.index).mutable_raw_data());
          break;
        case serialize::ArgSpec::Kind::kConstant: base = constants.at(a.index).data(); break;
        case serialize::ArgSpec::Kind::kArena: base = arena.data() + a.offset; break;
      }
      args.push_back({base, static_cast<size_t>(a.bytes)});
    }
    int32_t status = loop_eval::Run(result.funcs.at(group), args);
    AGATE_REQUIRE(status == 0, kInternal) << "kernel " << result.funcs.at(group).name << " returned " << status;
  }
  return outputs;
}

}  // namespace compiler
}  // namespace agate
