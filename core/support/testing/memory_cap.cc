#include "core/support/testing/memory_cap.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <new>

namespace agate {
namespace testing {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCanCap = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kCanCap = false;
#else
constexpr bool kCanCap = true;
#endif
#else
constexpr bool kCanCap = true;
#endif

// Exit codes of the child: the status code of an agate::Error is 16 + code.
constexpr int kNoThrow = 1, kBadAlloc = 2, kOtherException = 3, kUnknownException = 4, kAgateBase = 16;

size_t MappedBytes() {
  unsigned long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return static_cast<size_t>(pages) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

int RunChild(const std::function<void()>& body, size_t cap_bytes) {
  if (kCanCap) {
    rlimit limit{};
    limit.rlim_cur = limit.rlim_max = MappedBytes() + cap_bytes;
    setrlimit(RLIMIT_AS, &limit);
  }
  try {
    body();
    return kNoThrow;
  } catch (const Error& e) {
    return kAgateBase + static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    return kBadAlloc;
  } catch (const std::exception&) {
    return kOtherException;
  } catch (...) {
    return kUnknownException;
  }
}

}  // namespace

CappedOutcome RunWithMemoryCap(const std::function<void()>& body, size_t cap_bytes) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) _exit(RunChild(body, cap_bytes));
  CappedOutcome outcome;
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) {
    outcome.description = "could not run the child process";
    return outcome;
  }
  if (WIFSIGNALED(status)) {
    outcome.description = "killed by signal " + std::to_string(WTERMSIG(status));
    return outcome;
  }
  int code = WEXITSTATUS(status);
  if (code >= kAgateBase) {
    outcome.threw_agate_error = true;
    outcome.code = static_cast<StatusCode>(code - kAgateBase);
    outcome.description = std::string("agate::Error ") + StatusCodeName(outcome.code);
  } else {
    outcome.description = code == kNoThrow       ? "no exception"
                          : code == kBadAlloc    ? "std::bad_alloc (an allocation above the cap)"
                          : code == kOtherException ? "a std::exception other than agate::Error"
                                                    : "an unknown exception";
  }
  return outcome;
}

}  // namespace testing
}  // namespace agate
