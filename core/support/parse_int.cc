#include "core/support/parse_int.h"

#include <charconv>

#include "core/support/error.h"

namespace agate {

bool ParseInt64(const std::string& text, int64_t* value) {
  if (text.empty() || text.size() > 21) return false;
  const char* begin = text.data();
  const char* end = begin + text.size();
  int64_t parsed = 0;
  auto [stop, error] = std::from_chars(begin, end, parsed, 10);
  if (error != std::errc() || stop != end) return false;
  *value = parsed;
  return true;
}

int64_t ParseInt64OrThrow(const std::string& text, const std::string& what) {
  int64_t value = 0;
  AGATE_REQUIRE(ParseInt64(text, &value), kInvalidArgument) << what << ": '" << text << "' is not an integer";
  return value;
}

}  // namespace agate
