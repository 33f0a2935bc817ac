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

// The runtime's source files, numbered for SourceLine (message.cc names them).
constexpr const char* kSourceFiles[] = {"runtime_minimal/core/c_api.cc", "runtime_minimal/core/executor.cc",
                                        "runtime_minimal/core/module.cc", "runtime_minimal/core/verify.cc",
                                        "runtime_minimal/core/message.cc"};
constexpr int kNumSourceFiles = 5;

constexpr bool EndsWith(const char* text, const char* suffix) {
  int n = 0, m = 0;
  while (text[n] != '\0') ++n;
  while (suffix[m] != '\0') ++m;
  if (m > n) return false;
  for (int i = 0; i < m; ++i) {
    if (text[n - m + i] != suffix[i]) return false;
  }
  return true;
}

// The index of `file` in kSourceFiles, or kNumSourceFiles for any other file.
constexpr int SourceFileIndex(const char* file) {
  for (int i = 0; i < kNumSourceFiles; ++i) {
    const char* name = kSourceFiles[i];
    while (*name != '\0' && *name != '/') ++name;  // "runtime_minimal/core/x.cc" -> match "core/x.cc" or longer
    if (EndsWith(file, name + 1)) return i;
  }
  return kNumSourceFiles;
}

// Where a failure was raised: in no-message builds one constant per call site,
// file index * 100000 + line (decoded by agate_last_error_message); an empty
// value (nothing passed, nothing stored) otherwise. As a default argument it
// captures the caller's location, like std::source_location.
struct SourceLine {
#if defined(AGATE_RT_NO_MESSAGES)
  static constexpr SourceLine Current(int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
    return SourceLine{SourceFileIndex(file) * 100000 + line};
  }
  int code;
#else
  static constexpr SourceLine Current() { return SourceLine{}; }
#endif
};

// A 64-bit value streamed as "0x" and 16 hex digits (fingerprints, checksums).
struct Hex64 {
  uint64_t value;
};

#if defined(AGATE_RT_NO_MESSAGES)
// Flash-constrained builds (-DAGATE_RT_NO_MESSAGES): every streamed detail
// compiles away with its string literal; the message keeps the status name and
// the source line that refused, e.g. "corrupt at runtime_minimal/core/verify.cc:210",
// which with the source says exactly which check failed.
class Message {
 public:
  Message(agate_status_t status, SourceLine where);
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
  Message(agate_status_t status, SourceLine where);  // clears the buffer
  Message& operator<<(const char* text);
  Message& operator<<(Hex64 value);
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
inline Message Fail(agate_status_t status, SourceLine where = SourceLine::Current()) {
  return Message(status, where);
}

// The current thread's last message.
const char* LastMessage();

// The status's name ("invalid argument"), or "unknown status": agate_status_name and the
// no-message builds' "status at file:line" both read this one table (inline: the core
// profile's flash budget has no room for a call).
inline const char* StatusName(agate_status_t status) {
  static const char* const kNames[] = {"ok",  "invalid argument", "not found", "unsupported",
                                       "out of range", "corrupt", "version mismatch", "illegal schedule",
                                       "resource exhausted", "io", "unavailable", "internal"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == AGATE_INTERNAL + 1, "one name per agate_status_t");
  return status >= 0 && status <= AGATE_INTERNAL ? kNames[status] : "unknown status";
}

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CORE_MESSAGE_H_
