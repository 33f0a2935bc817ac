// Checked parsing of decimal integers that come from user files and flags.
//
// Why not std::stoll: it throws std::invalid_argument / std::out_of_range (not agate::Error),
// accepts leading spaces, signs and trailing garbage ("12abc" is 12), so a hostile
// external-data offset or a mistyped --input-shape would either abort the CLI or be
// misread. These functions accept exactly an optional '-' and decimal digits that fit.
#ifndef AGATE_CORE_SUPPORT_PARSE_INT_H_
#define AGATE_CORE_SUPPORT_PARSE_INT_H_

#include <cstdint>
#include <string>

namespace agate {

// True and *value set when `text` is an optional '-' followed by decimal digits whose value
// fits in int64_t; false (and *value untouched) otherwise.
bool ParseInt64(const std::string& text, int64_t* value);

// ParseInt64, or agate::Error(kInvalidArgument) "<what>: '<text>' is not an integer".
int64_t ParseInt64OrThrow(const std::string& text, const std::string& what);

}  // namespace agate

#endif  // AGATE_CORE_SUPPORT_PARSE_INT_H_
