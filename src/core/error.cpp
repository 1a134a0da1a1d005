#include "core/error.h"

#include <cstdio>
#include <cstdlib>

namespace dpro {

void fail_invariant(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "dpro: internal error: check failed: %s (%s:%d)\n", condition, file, line);
  std::abort();
}

}  // namespace dpro
