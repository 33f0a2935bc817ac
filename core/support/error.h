// agate's one error type for the compiler (core/, frontends/, tools/).
//
// Why exceptions here: the compiler is ordinary C++17 that runs on a workstation;
// an error deep inside a pass (an illegal schedule, an unsupported operator) must
// unwind to the command line or the C ABI with a message that names the node, op
// and shape. Every boundary that user code can reach (the C ABI in c_api/, the
// CLI in tools/) catches agate::Error and turns it into a status code plus a
// message; nothing escapes as an abort. The minimal runtime (runtime_minimal/)
// has no exceptions and uses the same StatusCode values through the C ABI.
#ifndef AGATE_CORE_SUPPORT_ERROR_H_
#define AGATE_CORE_SUPPORT_ERROR_H_

#include <sstream>
#include <stdexcept>
#include <string>

namespace agate {

// The status codes shared by the compiler and the runtime. The numeric values are
// part of the C ABI (agate_status_t in c_api/include/agate/status.h): append only.
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,   // a bad input from the caller: wrong shape, dtype, flag, null handle
  kNotFound = 2,          // a named thing (file, tensor, kernel) does not exist
  kUnsupported = 3,       // valid input that agate does not handle (an operator, an attribute)
  kOutOfRange = 4,        // an index or offset outside its bounds
  kCorrupt = 5,           // malformed data: a truncated or corrupt model or module
  kVersionMismatch = 6,   // a module built for a newer format or another target
  kIllegalSchedule = 7,   // a schedule primitive that would change the result
  kResourceExhausted = 8, // out of memory or arena space
  kIo = 9,                // the file system failed
  kUnavailable = 10,      // a device or library is missing at run time (no GPU, no driver)
  kInternal = 11,         // a bug in agate: an invariant does not hold
};

// Short lowercase name of a status code, e.g. "invalid argument".
const char* StatusCodeName(StatusCode code);

// The error every compiler layer throws. what() is "<code name>: <message>".
class Error : public std::runtime_error {
 public:
  Error(StatusCode code, const std::string& message);
  StatusCode code() const { return code_; }
  // The message without the code prefix.
  const std::string& message() const { return message_; }

 private:
  StatusCode code_;
  std::string message_;
};

namespace detail {
// Collects a message with operator<<. It never throws by itself: AGATE_THROW hands the
// finished message to ErrorRaiser, whose operator& throws. (The message used to throw from
// its destructor, which calls std::terminate when the destructor runs during unwinding: an
// exception while streaming a value, e.g. bad_alloc, became an abort.)
class ErrorMessage {
 public:
  ErrorMessage(StatusCode code, const char* file, int line) : code_(code), file_(file), line_(line) {}
  template <typename T>
  ErrorMessage& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  // The Error this message describes; internal errors carry file:line.
  Error ToError() const;

 private:
  StatusCode code_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

// `ErrorRaiser() & message << a << b`: '&' binds looser than '<<', so the whole message
// is streamed first, then thrown.
struct ErrorRaiser {
  [[noreturn]] void operator&(const ErrorMessage& message) const;
};
}  // namespace detail

}  // namespace agate

// Throws agate::Error with the streamed message: AGATE_THROW(kUnsupported) << "op " << name;
#define AGATE_THROW(code) \
  ::agate::detail::ErrorRaiser() & ::agate::detail::ErrorMessage(::agate::StatusCode::code, __FILE__, __LINE__)

// An internal invariant: a failure is a bug in agate, reported as kInternal with file:line.
#define AGATE_CHECK(cond) \
  if (cond) {             \
  } else                  \
    AGATE_THROW(kInternal) << "check failed: " #cond " "

// A check on caller-provided input: a failure is the caller's error.
#define AGATE_REQUIRE(cond, code) \
  if (cond) {                     \
  } else                          \
    AGATE_THROW(code)

#endif  // AGATE_CORE_SUPPORT_ERROR_H_
