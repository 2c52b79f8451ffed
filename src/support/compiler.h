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
// The exported spelling of a public C name: JE_PUBLIC(malloc) is `malloc`, or `je_malloc` when
// configured --with-jemalloc-prefix=je_ (the prefix is pasted on at compile time, so the static
// archive carries the same names as the shared library). Only src/api uses it.
#define JE_PUBLIC_PASTE2(p, n) p##n
#define JE_PUBLIC_PASTE(p, n) JE_PUBLIC_PASTE2(p, n)
#define JE_PUBLIC(name) JE_PUBLIC_PASTE(JE_PUBLIC_PREFIX, name)

namespace je {
inline constexpr unsigned kCacheline = 64;
}  // namespace je
