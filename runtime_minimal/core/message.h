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

// Starts the message of a failed call: return Fail(AGATE_CORRUPT) << "...";
inline Message Fail(agate_status_t status) { return Message(status); }

// The current thread's last message.
const char* LastMessage();

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CORE_MESSAGE_H_
