/* agate_status_t: what every agate C function returns.
 *
 * The numeric values equal agate::StatusCode (core/support/error.h), so the
 * compiler's exceptions and the runtime's status codes mean the same thing at
 * the C boundary. Values are append-only: a code never changes its number.
 * The human-readable reason for a non-OK status is agate_last_error_message().
 *
 * C99, freestanding: only <stdint.h>.
 */
#ifndef AGATE_STATUS_H_
#define AGATE_STATUS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A fixed-width integer rather than an enum type, so its size is part of the ABI. */
typedef int32_t agate_status_t;

enum {
  AGATE_OK = 0,
  AGATE_INVALID_ARGUMENT = 1,   /* a bad input from the caller: null handle, wrong shape or dtype */
  AGATE_NOT_FOUND = 2,          /* a named thing (file, tensor, kernel) does not exist */
  AGATE_UNSUPPORTED = 3,        /* valid input that this build does not handle */
  AGATE_OUT_OF_RANGE = 4,       /* an index or offset outside its bounds */
  AGATE_CORRUPT = 5,            /* malformed data: a truncated or corrupt module */
  AGATE_VERSION_MISMATCH = 6,   /* a module built for a newer format, kernel ABI or another target */
  AGATE_ILLEGAL_SCHEDULE = 7,   /* a schedule primitive that would change the result (compiler) */
  AGATE_RESOURCE_EXHAUSTED = 8, /* out of memory, or caller-provided memory too small */
  AGATE_IO = 9,                 /* the file system failed */
  AGATE_UNAVAILABLE = 10,       /* a device or library is missing at run time (no GPU, no driver) */
  AGATE_INTERNAL = 11           /* a bug in agate, or a kernel that reported a failed check */
};

#ifdef __cplusplus
}
#endif

#endif /* AGATE_STATUS_H_ */
