#include "core/graph/passes/graph_memory_plan.h"

#include <algorithm>
#include <tuple>

namespace agate {
namespace graph {
namespace {

constexpr int64_t kAlignment = 64;

int64_t Align(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// Steps: the fused groups in order, or one step per node.
std::vector<std::vector<int>> Steps(const Graph& graph) {
  std::vector<std::vector<int>> steps;
  if (!graph.groups.empty()) {
    for (const FusedGroup& group : graph.groups) steps.push_back(group.nodes);
  } else {
    for (size_t i = 0; i < graph.nodes.size(); ++i) steps.push_back({static_cast<int>(i)});
  }
  return steps;
}

// The buffer indices sorted by key(buffer), stable (ties keep value-name order).
template <typename Key>
std::vector<size_t> ByKey(const std::vector<BufferAssignment>& buffers, Key key) {
  std::vector<size_t> order(buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(buffers[a]) < key(buffers[b]); });
  return order;
}

// Places buffers in `order`, each at the lowest offset clear of every placed buffer whose
// lifetime overlaps its own; returns the arena size.
int64_t Place(const std::vector<size_t>& order, std::vector<BufferAssignment>* buffers) {
  std::vector<size_t> placed;
  int64_t arena = 0;
  for (size_t idx : order) {
    BufferAssignment& b = (*buffers)[idx];
    std::vector<std::pair<int64_t, int64_t>> taken;  // [offset, end) of overlapping placed buffers
    for (size_t p : placed) {
      const BufferAssignment& o = (*buffers)[p];
      if (o.first_step <= b.last_step && b.first_step <= o.last_step) taken.emplace_back(o.offset, o.offset + Align(o.bytes));
    }
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [start, end] : taken) {
      if (offset + Align(b.bytes) <= start) break;
      offset = std::max(offset, end);
    }
    b.offset = offset;
    arena = std::max(arena, offset + Align(b.bytes));
    placed.push_back(idx);
  }
  return arena;
}

}  // namespace

int64_t ArenaLowerBound(const MemoryPlan& plan) {
  int last = -1;
  for (const BufferAssignment& b : plan.buffers) last = std::max(last, b.last_step);
  int64_t bound = 0;
  for (int step = 0; step <= last; ++step) {
    int64_t live = 0;
    for (const BufferAssignment& b : plan.buffers)
      if (b.first_step <= step && step <= b.last_step) live += Align(b.bytes);
    bound = std::max(bound, live);
  }
  return bound;
}

Graph PlanGraphMemory(const Graph& graph, MemoryPlanPolicy policy) {
  std::vector<std::vector<int>> steps = Steps(graph);
  std::vector<int> step_of(graph.nodes.size(), -1);
  for (size_t s = 0; s < steps.size(); ++s)
    for (int v : steps[s]) step_of[v] = static_cast<int>(s);
  // Lifetimes of values that cross a step boundary.
  std::map<std::string, BufferAssignment> live;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const std::string& out : graph.nodes[i].outputs) {
      if (out.empty() || graph.IsGraphOutput(out)) continue;
      BufferAssignment b;
      b.value = out;
      b.bytes = graph.TypeOf(out).bytes();
      b.first_step = b.last_step = step_of[i];
      live[out] = b;
    }
  }
  std::map<std::string, bool> crosses;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const std::string& in : graph.nodes[i].inputs) {
      auto it = live.find(in);
      if (it == live.end()) continue;
      it->second.last_step = std::max(it->second.last_step, step_of[i]);
      if (step_of[i] != it->second.first_step) crosses[in] = true;
    }
  }
  std::vector<BufferAssignment> buffers;
  for (auto& [value, b] : live)
    if (crosses.count(value)) buffers.push_back(b);
  MemoryPlan plan;
  plan.planned = true;
  std::vector<std::vector<size_t>> orders = {ByKey(buffers, [](const BufferAssignment& b) {
    return std::make_tuple(-b.bytes, 0, 0);
  })};
  if (policy == MemoryPlanPolicy::kMinPeak) {
    orders.push_back(ByKey(buffers, [](const BufferAssignment& b) { return std::make_tuple(-b.bytes, b.first_step, 0); }));
    orders.push_back(ByKey(buffers, [](const BufferAssignment& b) {
      return std::make_tuple(b.first_step, static_cast<int64_t>(-b.bytes), 0);
    }));
    orders.push_back(ByKey(buffers, [](const BufferAssignment& b) {
      return std::make_tuple(static_cast<int64_t>(b.first_step - b.last_step), static_cast<int64_t>(-b.bytes),
                             b.first_step);
    }));
  }
  std::vector<BufferAssignment> best;
  for (const std::vector<size_t>& order : orders) {
    std::vector<BufferAssignment> candidate = buffers;
    int64_t arena = Place(order, &candidate);
    if (best.empty() || arena < plan.arena_bytes) {
      plan.arena_bytes = arena;
      best = std::move(candidate);
    }
  }
  if (!best.empty()) buffers = std::move(best);
  for (const BufferAssignment& b : buffers) plan.total_intermediate_bytes += Align(b.bytes);
  std::sort(buffers.begin(), buffers.end(), [](const BufferAssignment& a, const BufferAssignment& b) {
    return a.first_step != b.first_step ? a.first_step < b.first_step : a.value < b.value;
  });
  plan.buffers = buffers;
  Graph result = graph;
  result.memory_plan = plan;
  return result;
}

}  // namespace graph
}  // namespace agate
