// agate's one logging facility.
//
// AGATE_LOG(INFO) << "compiled " << n << " kernels"; writes one line to stderr when
// the level is enabled. The level comes from the environment variable AGATE_LOG
// (error, warning, info, debug; default warning) or SetLogLevel() (the CLI's -v).
#ifndef AGATE_CORE_SUPPORT_LOGGING_H_
#define AGATE_CORE_SUPPORT_LOGGING_H_

#include <sstream>

namespace agate {

enum class LogLevel : int { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

LogLevel GetLogLevel();
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);

namespace detail {
class LogLine {
 public:
  LogLine(LogLevel level, const char* file, int line);
  ~LogLine();
  template <typename T>
  LogLine& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};
}  // namespace detail

}  // namespace agate

#define AGATE_LOG_LEVEL_ERROR ::agate::LogLevel::kError
#define AGATE_LOG_LEVEL_WARNING ::agate::LogLevel::kWarning
#define AGATE_LOG_LEVEL_INFO ::agate::LogLevel::kInfo
#define AGATE_LOG_LEVEL_DEBUG ::agate::LogLevel::kDebug

#define AGATE_LOG(level)                                \
  if (!::agate::LogEnabled(AGATE_LOG_LEVEL_##level)) {  \
  } else                                                \
    ::agate::detail::LogLine(AGATE_LOG_LEVEL_##level, __FILE__, __LINE__)

#endif  // AGATE_CORE_SUPPORT_LOGGING_H_
