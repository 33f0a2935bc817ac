#include "core/support/logging.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace agate {
namespace {

LogLevel LevelFromEnvironment() {
  const char* value = std::getenv("AGATE_LOG");
  if (value == nullptr) return LogLevel::kWarning;
  if (std::strcmp(value, "error") == 0) return LogLevel::kError;
  if (std::strcmp(value, "info") == 0) return LogLevel::kInfo;
  if (std::strcmp(value, "debug") == 0) return LogLevel::kDebug;
  return LogLevel::kWarning;
}

std::atomic<int>& CurrentLevel() {
  static std::atomic<int> level{static_cast<int>(LevelFromEnvironment())};
  return level;
}

const char* LevelTag(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return "E";
    case LogLevel::kWarning: return "W";
    case LogLevel::kInfo: return "I";
    case LogLevel::kDebug: return "D";
  }
  return "?";
}

}  // namespace

LogLevel GetLogLevel() { return static_cast<LogLevel>(CurrentLevel().load()); }
void SetLogLevel(LogLevel level) { CurrentLevel().store(static_cast<int>(level)); }
bool LogEnabled(LogLevel level) { return static_cast<int>(level) <= CurrentLevel().load(); }

namespace detail {
LogLine::LogLine(LogLevel level, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  stream_ << "[agate " << LevelTag(level) << " " << (base ? base + 1 : file) << ":" << line << "] ";
}
// One fputs per line so lines from parallel threads do not interleave.
LogLine::~LogLine() {
  stream_ << '\n';
  std::fputs(stream_.str().c_str(), stderr);
}
}  // namespace detail

}  // namespace agate
