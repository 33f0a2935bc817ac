#include "core/support/error.h"

namespace agate {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kOutOfRange: return "out of range";
    case StatusCode::kCorrupt: return "corrupt input";
    case StatusCode::kVersionMismatch: return "version mismatch";
    case StatusCode::kIllegalSchedule: return "illegal schedule";
    case StatusCode::kResourceExhausted: return "resource exhausted";
    case StatusCode::kIo: return "i/o error";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown status";
}

Error::Error(StatusCode code, const std::string& message)
    : std::runtime_error(std::string(StatusCodeName(code)) + ": " + message), code_(code), message_(message) {}

namespace detail {
Error ErrorMessage::ToError() const {
  std::string message = stream_.str();
  // Internal errors carry the source location: they are bugs to report, not user mistakes.
  if (code_ == StatusCode::kInternal) message += std::string(" [") + file_ + ":" + std::to_string(line_) + "]";
  return Error(code_, message);
}

void ErrorRaiser::operator&(const ErrorMessage& message) const { throw message.ToError(); }
}  // namespace detail

}  // namespace agate
