// Text form of expressions and statements, for --dump-ir, error messages and tests.
//
// Why it looks like C: the printed loop IR should read like the loops it means,
//   for (i, 0, 64) parallel {
//     C[i*64 + j] = (A[i*64 + k]*B[k*64 + j])
//   }
// so a schedule's effect can be checked by eye and by tests on the text.
// Binary operators print infix with the fewest parentheses precedence allows;
// floordiv/floormod, min/max, select and intrinsics print as calls; vectors as
// ramp(base, stride, lanes) and x8(value); loads as name[index], masked ones
// as name[index if mask].
#ifndef AGATE_CORE_IR_PRINTER_H_
#define AGATE_CORE_IR_PRINTER_H_

#include <ostream>
#include <string>

#include "core/ir/expr.h"
#include "core/ir/function.h"
#include "core/ir/stmt.h"

namespace agate {
namespace ir {

std::string ToString(const Expr& expr);
std::string ToString(const Stmt& stmt);
std::string ToString(const Range& range);
// The whole function: signature with parameter buffers, workspace, then the body.
std::string ToString(const LoweredFunc& func);

std::ostream& operator<<(std::ostream& os, const Expr& expr);
std::ostream& operator<<(std::ostream& os, const Stmt& stmt);
std::ostream& operator<<(std::ostream& os, const Range& range);
std::ostream& operator<<(std::ostream& os, const LoweredFunc& func);

}  // namespace ir
}  // namespace agate

#endif  // AGATE_CORE_IR_PRINTER_H_
