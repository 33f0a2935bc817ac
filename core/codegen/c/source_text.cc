#include "core/codegen/c/source_text.h"

#include <cctype>

#include "core/support/error.h"

namespace agate {
namespace codegen {

std::string SanitizeIdentifier(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v" + out;
  if (out.compare(0, 6, "agate_") == 0 || out.compare(0, 2, "__") == 0) out = "v" + out;
  return out;
}

void IndentedText::Line(const std::string& text) { out_ << std::string(2 * indent_, ' ') << text << "\n"; }

void IndentedText::Open(const std::string& text) {
  Line(text);
  ++indent_;
}

void IndentedText::Close(const std::string& text) {
  --indent_;
  Line(text);
}

void KernelNames::Reset(const std::string& kernel, const std::set<std::string>& reserved) {
  kernel_ = kernel;
  used_ = reserved;
  names_.clear();
}

std::string KernelNames::Fresh(const std::string& base) {
  const std::string clean = SanitizeIdentifier(base);
  std::string name = clean;
  for (int i = 1; used_.count(name); ++i) name = clean + "_" + std::to_string(i);
  used_.insert(name);
  return name;
}

std::string KernelNames::Define(const ir::VarNode* var, const std::string& hint) {
  std::string name = Fresh(hint.empty() ? var->name : hint);
  names_[var] = name;
  return name;
}

std::string KernelNames::NameOf(const ir::VarNode* var) const {
  auto it = names_.find(var);
  AGATE_REQUIRE(it != names_.end(), kInternal)
      << "kernel " << kernel_ << ": variable '" << var->name << "' is used outside the scope that defines it";
  return it->second;
}

}  // namespace codegen
}  // namespace agate
