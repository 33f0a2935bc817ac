#pragma once
// Source text and identifiers for the backends that print loop IR as C-family source (the C
// backend and the CUDA backend, which writes CUDA C): TVM's CodeGenCUDA extends CodeGenC for the
// same reason. Both need indented function text and, per kernel, identifiers that are valid C,
// unique within the kernel, clear of the keywords and of the names the generator declares itself,
// and one spelling per IR variable. Keeping that here means both backends name things alike and a
// fix to identifier hygiene (say, a reserved prefix) reaches both.

#include <set>
#include <sstream>
#include <string>
#include <unordered_map>

#include "core/ir/expr.h"

namespace agate {
namespace codegen {

// `name` as a C identifier: characters other than [A-Za-z0-9] become '_'; an empty name or one
// that starts with a digit gets a leading 'v'; so do names in the generator's own namespaces
// ("agate_..." and, reserved by C and C++, "__...").
std::string SanitizeIdentifier(const std::string& name);

// The text of one function, two spaces per indentation level.
class IndentedText {
 public:
  void Line(const std::string& text);
  // Line, then one level deeper (an opening brace).
  void Open(const std::string& text);
  // One level shallower, then Line (a closing brace, or "} else {" followed by Indent()).
  void Close(const std::string& text = "}");
  void Indent() { ++indent_; }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int indent_ = 0;
};

// The identifiers of one kernel. Reset at the start of each kernel with the names nothing may take
// (keywords, library functions, every kernel's name); variables are then bound to fresh names.
// Refers to IR variables by address: the kernel's IR must outlive the calls that name its
// variables.
class KernelNames {
 public:
  // Starts kernel `kernel` (named in error messages) with only `reserved` taken.
  void Reset(const std::string& kernel, const std::set<std::string>& reserved);
  // Marks `name` taken (a name the generator declares itself) or free again.
  void Reserve(const std::string& name) { used_.insert(name); }
  void Release(const std::string& name) { used_.erase(name); }
  // An unused identifier made from `base` (sanitised, then "_1", "_2", ... until free), now taken.
  std::string Fresh(const std::string& base);
  // Binds `var` to a fresh name made from `hint` (the variable's own name when empty).
  std::string Define(const ir::VarNode* var, const std::string& hint);
  bool IsDefined(const ir::VarNode* var) const { return names_.count(var) > 0; }
  // The name `var` is bound to; an internal error naming the kernel and variable if unbound.
  std::string NameOf(const ir::VarNode* var) const;

 private:
  std::string kernel_;
  std::set<std::string> used_;
  std::unordered_map<const ir::VarNode*, std::string> names_;
};

}  // namespace codegen
}  // namespace agate
