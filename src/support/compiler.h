// compiler.h: attribute macros and tiny compiler helpers.
//
// Purpose: the only place compiler attributes are spelled; everything else uses the JE_ names
// so intent is visible at the use site (fast path, cold path, exported name).
// Layer: support (bottom); included everywhere. No state, no locking.
#pragma once

#include "support/autoconf.h"

#define JE_ALWAYS_INLINE inline __attribute__((always_inline))
#define JE_NOINLINE __attribute__((noinline))
#define JE_COLD __attribute__((cold))
#define JE_NOINLINE_COLD __attribute__((noinline, cold))
#define JE_LIKELY(x) __builtin_expect(!!(x), 1)
#define JE_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define JE_EXPORT __attribute__((visibility("default")))
#define JE_HIDDEN __attribute__((visibility("hidden")))
// Initial-exec TLS unless configured with --disable-initial-exec-tls (dlopen-able builds).
#if defined(JE_INITIAL_EXEC_TLS)
#define JE_TLS_IE __attribute__((tls_model("initial-exec")))
#else
#define JE_TLS_IE
#endif
#define JE_CACHELINE_ALIGNED alignas(64)

namespace je {
inline constexpr unsigned kCacheline = 64;
}  // namespace je
