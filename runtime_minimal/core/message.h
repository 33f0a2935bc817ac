// Status messages for the runtime without exceptions or a heap.
//
// Why: the runtime reports every refused module and failed call as a status code
// plus a message naming the tensor, kernel, call or offset at fault, and must do
// so on a microcontroller: no std::string, no iostreams, no allocation. Fail()
// writes straight into one fixed buffer per thread (per program on
// single-threaded targets), which agate_last_error_message() returns.
//
//   return Fail(AGATE_OUT_OF_RANGE) << "call " << i << " reads past the arena";
#ifndef AGATE_RUNTIME_MINIMAL_CORE_MESSAGE_H_
#define AGATE_RUNTIME_MINIMAL_CORE_MESSAGE_H_

#include <stdint.h>

#include <type_traits>

#include "agate/status.h"

namespace agate {
namespace rt {

#if defined(AGATE_RT_NO_MESSAGES)
// Flash-constrained builds (-DAGATE_RT_NO_MESSAGES): every streamed detail
// compiles away with its string literal; the message keeps the status name and
// the source line that refused, e.g. "corrupt at runtime_minimal/core/verify.cc:210",
// which with the source says exactly which check failed.
class Message {
 public:
  explicit Message(agate_status_t status, int line = __builtin_LINE(), const char* file = __builtin_FILE());
  template <typename T>
  Message& operator<<(const T&) {
    return *this;
  }
  operator agate_status_t() const { return status_; }

 private:
  agate_status_t status_;
};
#else
// Appends to the last-error buffer; converts to the status it was created with.
class Message {
 public:
  explicit Message(agate_status_t status);  // clears the buffer
  Message& operator<<(const char* text);
  template <typename T, typename = typename std::enable_if<std::is_integral<T>::value>::type>
  Message& operator<<(T value) {
    if (std::is_signed<T>::value) return AppendSigned(static_cast<int64_t>(value));
    return AppendUnsigned(static_cast<uint64_t>(value));
  }
  operator agate_status_t() const { return status_; }

 private:
  Message& AppendSigned(int64_t value);
  Message& AppendUnsigned(uint64_t value);
  agate_status_t status_;
};
#endif

// Starts the message of a failed call: return Fail(AGATE_CORRUPT) << "...";
inline Message Fail(agate_status_t status) { return Message(status); }

// The current thread's last message.
const char* LastMessage();

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CORE_MESSAGE_H_
