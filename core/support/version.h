// The compiler's version, written into every module's metadata and printed by `agate version`.
#ifndef AGATE_CORE_SUPPORT_VERSION_H_
#define AGATE_CORE_SUPPORT_VERSION_H_

#define AGATE_VERSION_MAJOR 0
#define AGATE_VERSION_MINOR 1
#define AGATE_VERSION_PATCH 0
#define AGATE_VERSION_STRING "0.1.0"

#endif  // AGATE_CORE_SUPPORT_VERSION_H_
