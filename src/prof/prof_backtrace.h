// prof_backtrace.h: capturing the caller's stack for a sampled allocation.
//
// Purpose: fill a fixed array with return addresses, innermost first, through libgcc's
// unwinder (_Unwind_Backtrace), as Debian's 5.3.0 does (config.prof_libgcc), trimming the
// library's own frames so that frame 0 is the public entry point's caller side (the return
// address into the program), which is what jeprof expects after it drops allocator frames.
// Safety: the unwinder may allocate (dl_iterate_phdr, its FDE cache) and take the loader lock
// the first time it walks a module. prof_backtrace_boot warms it up once, at boot with
// opt.prof on; every capture runs under a ReentrancyGuard, so an allocation the unwinder makes
// meanwhile takes the allocator's non-cached path and is never itself sampled (the prof module
// does not sample reentrant calls). No signal handlers are involved.
// Layer: prof. Callers: the prof module (sampling), unit tests.
// Concurrency: thread-safe (libgcc's unwinder is); no allocator lock may be held by the caller.
// jemalloc mapping: prof_backtrace / prof_backtrace_impl (libgcc variant), prof_bt_t, in
// prof_sys.c; PROF_BT_MAX.
#pragma once

#include <cstddef>
#include <cstdint>

namespace je {

/// Deepest backtrace kept (5.3.0's PROF_BT_MAX).
inline constexpr unsigned kProfBtMax = 128;

/// One captured backtrace: vec[0] is the innermost kept frame.
struct ProfBt {
  unsigned len;
  uintptr_t vec[kProfBtMax];
};

/// Captures the calling thread's stack, dropping the `skip` innermost frames (the capture
/// function itself is never included). Returns bt->len.
unsigned prof_backtrace(ProfBt* bt, unsigned skip);

/// Warms the unwinder up (its first walk allocates and takes the loader lock). Call once,
/// outside any allocator lock; true when a walk returned at least one frame.
bool prof_backtrace_boot();

}  // namespace je
