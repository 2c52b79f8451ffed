// safety_check.cc: the failure report of debug_assert (see safety_check.h).
#include "support/safety_check.h"

#include "support/malloc_io.h"

namespace je {

void debug_assert_fail(const char* what, const char* file, int line) {
  je_abort_msg("assertion failed: %s (%s:%d)", what, file, line);
}

}  // namespace je
