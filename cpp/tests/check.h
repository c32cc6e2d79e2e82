// The tiny check harness of the standalone C++ tests: CHECK records a failure and goes on;
// finish() reports and gives main's exit status.
#pragma once
#include <cstdio>

namespace tokenforge_test {
inline int failures = 0;

inline int finish(const char* name) {
  if (failures) {
    std::fprintf(stderr, "%s: %d check(s) failed\n", name, failures);
    return 1;
  }
  std::printf("%s: all checks passed\n", name);
  return 0;
}
}  // namespace tokenforge_test

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++tokenforge_test::failures;                                                  \
    }                                                                               \
  } while (0)
