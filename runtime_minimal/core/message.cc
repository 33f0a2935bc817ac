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

#if defined(AGATE_RT_NO_MESSAGES)

namespace {

struct Failure {
  agate_status_t status;
  int where;  // SourceLine::code; 0: nothing failed yet
  char text[96];
};

AGATE_RT_THREAD_LOCAL Failure g_failure;

// Appends text to out[*n, cap).
void Put(char* out, size_t cap, size_t* n, const char* text) {
  while (*text != '\0' && *n + 1 < cap) out[(*n)++] = *text++;
  out[*n] = '\0';
}

}  // namespace

Message::Message(agate_status_t status, SourceLine where) : status_(status) {
  g_failure.status = status;
  g_failure.where = where.code;
}

const char* LastMessage() {
  Failure& f = g_failure;
  if (f.where == 0) return "";
  const int file = f.where / 100000;
  // The line number's digits, written from the end of a buffer backwards.
  char digits[12];
  char* first = digits + sizeof(digits) - 1;
  *first = '\0';
  for (int v = f.where % 100000; v > 0; v /= 10) *--first = static_cast<char>('0' + v % 10);
  const char* const parts[] = {StatusName(f.status), " at ",
                               file < kNumSourceFiles ? kSourceFiles[file] : "runtime_minimal", ":", first};
  size_t n = 0;
  for (const char* part : parts) Put(f.text, sizeof(f.text), &n, part);
  return f.text;
}

#else

namespace {

// 512 bytes on 64-bit hosts, where messages name GPU driver calls, devices and
// kernels; 256 on 32-bit targets (microcontrollers), where RAM is scarce.
constexpr size_t kMessageCapacity = sizeof(void*) >= 8 ? 512 : 256;

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

Message::Message(agate_status_t status, SourceLine) : status_(status) {
  g_message.length = 0;
  g_message.text[0] = '\0';
}

Message& Message::operator<<(const char* text) {
  Append(text != nullptr ? text : "(null)");
  return *this;
}

Message& Message::operator<<(Hex64 value) {
  char text[19] = {'0', 'x'};
  for (int i = 0; i < 16; ++i) text[2 + i] = "0123456789abcdef"[(value.value >> (60 - 4 * i)) & 0xf];
  text[18] = '\0';
  Append(text);
  return *this;
}

// value / 10 in 16-bit steps: only 32-bit divisions, which Cortex-M has in
// hardware, instead of a 64-bit division routine from libgcc.
uint64_t DivideBy10(uint64_t value, uint32_t* remainder) {
  uint64_t quotient = 0;
  uint32_t rest = 0;
  for (int shift = 48; shift >= 0; shift -= 16) {
    const uint32_t current = (rest << 16) | static_cast<uint32_t>((value >> shift) & 0xffff);
    quotient |= static_cast<uint64_t>(current / 10) << shift;
    rest = current % 10;
  }
  *remainder = rest;
  return quotient;
}

Message& Message::AppendUnsigned(uint64_t value) {
  char digits[24];
  int n = 0;
  do {
    uint32_t digit = 0;
    value = DivideBy10(value, &digit);
    digits[n++] = static_cast<char>('0' + digit);
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

#endif  // AGATE_RT_NO_MESSAGES

}  // namespace rt
}  // namespace agate
