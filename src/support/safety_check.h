// safety_check.h: internal invariants checked in debug builds.
//
// Purpose: `debug_assert(cond, "what")` states an invariant of the allocator's own state (eset,
// bin, slab and extent states, lock ownership, counters). In `--enable-debug` builds a false
// condition prints one "<jemalloc>: assertion failed: ..." line with the file and line and
// aborts; in release builds the call compiles to nothing (`if constexpr`), so conditions must
// have no side effects. Checks of the *application's* use of the API (double free, size
// mismatch, invalid pointers, writes after free) are a different thing: they run in release
// builds too, under opt.safety_checks, and live where the misuse is seen (src/api/alloc_path,
// src/arena/bin.h).
// Layer: support. Callers: any layer. No state, no locks.
// jemalloc mapping: assert.h (assert / not_reached under config_debug).
#pragma once

#include "support/compiler.h"
#include "support/config.h"

namespace je {

/// Prints "<jemalloc>: assertion failed: <what> (<file>:<line>)" and aborts.
[[noreturn]] JE_NOINLINE_COLD void debug_assert_fail(const char* what, const char* file, int line);

/// Debug builds: abort unless `cond` holds. Release builds: nothing.
JE_ALWAYS_INLINE void debug_assert(bool cond, const char* what, const char* file = __builtin_FILE(),
                                   int line = __builtin_LINE()) {
  if constexpr (config::kDebug) {
    if (JE_UNLIKELY(!cond)) debug_assert_fail(what, file, line);
  }
}

}  // namespace je
