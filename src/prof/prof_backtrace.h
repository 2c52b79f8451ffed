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
// Layer: prof. Callers: the prof module, src/api/alloc_path (prof_backtrace_inline, in the
// entry point's own frame), unit tests.
// Hook: experimental.hooks.prof_backtrace replaces the unwinder. The installed function gets
// the frame array, a length to fill and the capacity (g_prof_bt_depth, opt.prof_bt_max up
// to kProfBtMax); its frames are kept as it
// returns them (the leading frames inside this library are still dropped by the caller, so a
// hook that unwinds for real gives the same traces as ours). With opt.prof the hook starts as
// prof_backtrace_default_hook (our unwinder behind the hook's signature, so a client can save
// it and chain to it); without opt.prof it reads nullptr, as in 5.3.0.
// Concurrency: thread-safe (libgcc's unwinder is); no allocator lock may be held by the caller.
// The hook is an atomic pointer (acquire/release).
// jemalloc mapping: prof_backtrace / prof_backtrace_impl (libgcc variant), prof_bt_t, in
// prof_sys.c; PROF_BT_MAX; prof_backtrace_hook_{get,set} (prof.c), prof_hooks_init.
#pragma once

#include <unwind.h>

#include <cstddef>
#include <cstdint>

#include "support/compiler.h"
#include "support/reentrancy.h"

namespace je {

/// Deepest backtrace kept (5.3.0's PROF_BT_MAX).
inline constexpr unsigned kProfBtMax = 128;

/// The depth captures keep: opt.prof_bt_max (jemalloc 5.3.1), at most kProfBtMax, the array's
/// size. Written once at boot (prof_boot, single-threaded), read by every capture.
extern unsigned g_prof_bt_depth;
/// Sets g_prof_bt_depth to `depth` clipped to [1, kProfBtMax]. Boot only.
void prof_backtrace_set_depth(unsigned depth);

/// One captured backtrace: vec[0] is the innermost kept frame.
struct ProfBt {
  unsigned len;
  uintptr_t vec[kProfBtMax];
};

/// Captures the calling thread's stack, dropping the `skip` innermost frames (the capture
/// function itself is never included). Returns bt->len.
unsigned prof_backtrace(ProfBt* bt, unsigned skip);

/// experimental.hooks.prof_backtrace's type (5.3.0's prof_backtrace_hook_t).
using ProfBacktraceHook = void (*)(void** vec, unsigned* len, unsigned max_len);

/// Our unwinder with the hook's signature: fills vec[0..*len) with the caller's frames,
/// innermost first (its own frame excluded).
void prof_backtrace_default_hook(void** vec, unsigned* len, unsigned max_len);
/// The installed hook (nullptr until prof_backtrace_hook_set; prof_boot installs the default
/// with opt.prof).
ProfBacktraceHook prof_backtrace_hook_get();
/// Installs `hook` (never nullptr: the ctl layer refuses it, as 5.3.0 does).
void prof_backtrace_hook_set(ProfBacktraceHook hook);
/// Whether a client's hook (not ours) is installed: then every capture goes through it.
bool prof_backtrace_hooked();

/// The walk state and per-frame callback behind both captures (prof_backtrace.cc).
struct ProfBtWalk {
  ProfBt* bt;
  unsigned skip;
};
_Unwind_Reason_Code prof_backtrace_frame(struct _Unwind_Context* ctx, void* arg);

/// The same capture, inlined into the caller, so that the unwinder starts in the caller's own
/// frame (which is reported first; nothing is skipped here). Every frame costs the unwinder
/// about 1,700 instructions (FDE lookup, CFA program), about as much again as the rest of a
/// sample: the sampling path calls this from the entry point's outermost internal frame
/// (allocate/reallocate) rather than from prof_backtrace several calls deeper.
/// With a client's hook installed it is prof_backtrace(bt, 0), the hook's frames as given.
JE_ALWAYS_INLINE unsigned prof_backtrace_inline(ProfBt* bt) {
  if (JE_UNLIKELY(prof_backtrace_hooked())) return prof_backtrace(bt, 0);
  ReentrancyGuard guard;  // as prof_backtrace
  bt->len = 0;
  ProfBtWalk w{bt, 0};
  _Unwind_Backtrace(&prof_backtrace_frame, &w);
  return bt->len;
}

/// Warms the unwinder up (its first walk allocates and takes the loader lock). Call once,
/// outside any allocator lock; true when a walk returned at least one frame.
bool prof_backtrace_boot();

}  // namespace je
