#include "core/ir/gpu_launch.h"

#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/support/error.h"

namespace agate {
namespace ir {
namespace {

void CollectInto(const Stmt& s, std::vector<GpuLaunch>* out);

GpuLaunch ReadLaunch(const AttrStmt* attr, const Stmt& self) {
  GpuLaunch launch;
  launch.name = attr->node_name;
  launch.attr = self;
  int64_t shared = 0;
  AGATE_CHECK(is_const_int(attr->value, &shared) && shared >= 0)
      << "GPU launch " << attr->node_name << ": shared-memory size " << attr->value << " is not a constant";
  launch.shared_bytes = shared;
  Stmt s = attr->body;
  bool seen_block[3] = {false, false, false}, seen_thread[3] = {false, false, false};
  bool in_threads = false;
  while (true) {
    if (const For* f = s.as<For>()) {
      bool is_block = false;
      int dim = 0;
      if (f->for_kind != ForKind::kThreadBinding || !ParseThreadTag(f->thread_tag, &is_block, &dim)) break;
      AGATE_CHECK(!(is_block && (in_threads || !launch.shared.empty())))
          << "GPU launch " << launch.name << ": block loop " << f->thread_tag << " inside the thread loops";
      bool* seen = is_block ? seen_block : seen_thread;
      AGATE_CHECK(!seen[dim]) << "GPU launch " << launch.name << ": " << f->thread_tag << " bound twice";
      seen[dim] = true;
      int64_t extent = 0;
      AGATE_CHECK(is_zero(f->min) && is_const_int(f->extent, &extent) && extent >= 1)
          << "GPU launch " << launch.name << ": " << f->thread_tag << " loop is not [0, constant)";
      (is_block ? launch.grid : launch.block)[dim] = extent;
      (is_block ? launch.block_vars : launch.thread_vars)[dim] = f->var;
      in_threads = in_threads || !is_block;
      s = f->body;
      continue;
    }
    if (const Allocate* a = s.as<Allocate>()) {
      if (a->scope != MemoryScope::kShared || in_threads) break;
      launch.shared.push_back(s);
      s = a->body;
      continue;
    }
    break;
  }
  AGATE_CHECK(in_threads) << "GPU launch " << launch.name << " has no thread loop";
  launch.code = s;
  return launch;
}

void CollectInto(const Stmt& s, std::vector<GpuLaunch>* out) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::kSeq:
      for (const Stmt& x : s.as<Seq>()->stmts) CollectInto(x, out);
      return;
    case StmtKind::kAllocate: {
      const Allocate* a = s.as<Allocate>();
      AGATE_CHECK(a->scope == MemoryScope::kWorkspace)
          << "buffer " << a->buffer->name << " (" << MemoryScopeName(a->scope) << ") is allocated outside the GPU launches";
      return CollectInto(a->body, out);
    }
    case StmtKind::kLetStmt: return CollectInto(s.as<LetStmt>()->body, out);
    case StmtKind::kEvaluate: {
      // A no-op (what simplification leaves of a kernel with nothing to compute).
      const Call* call = s.as<Evaluate>()->value.as<Call>();
      if (!call || !IsGpuIntrinsic(call->op)) return;
      AGATE_THROW(kInternal) << "GPU kernel: " << s.as<Evaluate>()->value << " outside the launches";
    }
    case StmtKind::kAttrStmt: {
      const AttrStmt* attr = s.as<AttrStmt>();
      if (attr->key == attr::kGpuLaunch) {
        out->push_back(ReadLaunch(attr, s));
        return;
      }
      return CollectInto(attr->body, out);
    }
    default:
      AGATE_THROW(kInternal) << "GPU kernel: " << StmtKindName(s.kind())
                             << " outside the launches (the host runs no code of a GPU kernel)";
  }
}

}  // namespace

bool ParseThreadTag(const std::string& tag, bool* is_block, int* dim) {
  std::string axis;
  if (tag.compare(0, 9, "blockIdx.") == 0 && tag.size() == 10) {
    *is_block = true;
    axis = tag.substr(9);
  } else if (tag.compare(0, 10, "threadIdx.") == 0 && tag.size() == 11) {
    *is_block = false;
    axis = tag.substr(10);
  } else {
    return false;
  }
  if (axis != "x" && axis != "y" && axis != "z") return false;
  *dim = axis[0] - 'x';
  return true;
}

std::vector<GpuLaunch> CollectGpuLaunches(const Stmt& body) {
  std::vector<GpuLaunch> launches;
  CollectInto(body, &launches);
  return launches;
}

bool HasGpuLaunches(const Stmt& body) {
  bool found = false;
  PostOrderVisit(body, [&](const Expr*, const Stmt* s) {
    if (s && s->as<AttrStmt>() && s->as<AttrStmt>()->key == attr::kGpuLaunch) found = true;
  });
  return found;
}

}  // namespace ir
}  // namespace agate
