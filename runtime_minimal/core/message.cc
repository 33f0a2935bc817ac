#include "runtime_minimal/core/message.h"

#include <stddef.h>

// Microcontroller builds have one thread and often no TLS support.
#if defined(AGATE_RT_SINGLE_THREADED)
#define AGATE_RT_THREAD_LOCAL
#else
#define AGATE_RT_THREAD_LOCAL thread_local
#endif

namespace agate {
namespace rt {
namespace {

constexpr size_t kMessageCapacity = 256;

struct MessageBuffer {
  char text[kMessageCapacity];
  size_t length;
};

AGATE_RT_THREAD_LOCAL MessageBuffer g_message;

void Append(const char* text) {
  MessageBuffer& m = g_message;
  while (*text != '\0' && m.length + 1 < kMessageCapacity) m.text[m.length++] = *text++;
  m.text[m.length] = '\0';
}

}  // namespace

Message::Message(agate_status_t status) : status_(status) {
  g_message.length = 0;
  g_message.text[0] = '\0';
}

Message& Message::operator<<(const char* text) {
  Append(text != nullptr ? text : "(null)");
  return *this;
}

Message& Message::AppendUnsigned(uint64_t value) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  char text[24];
  for (int i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
  text[n] = '\0';
  Append(text);
  return *this;
}

Message& Message::AppendSigned(int64_t value) {
  if (value < 0) {
    Append("-");
    return AppendUnsigned(0 - static_cast<uint64_t>(value));
  }
  return AppendUnsigned(static_cast<uint64_t>(value));
}

const char* LastMessage() { return g_message.text; }

}  // namespace rt
}  // namespace agate
