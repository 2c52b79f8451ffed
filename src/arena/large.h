// large.h: the allocation policy below the public entry points -- which arena serves a large
// request, which resizes stay in place, and the opt.zero / opt.junk fills.
//
// Purpose: once the api layer has decoded a call (size, usable size, MALLOCX_* flags) it asks
// here what to do with it:
//  - arena choice for a large request the thread cache does not serve: an explicit arena
//    (MALLOCX_ARENA) as given; otherwise the huge arena for oversize requests (unless the
//    thread is bound to a manual arena), else the thread's own arena. Only an automatic choice
//    may be served by another arena's cached pages (opt.borrow_dirty). Alignment is raised to
//    a cache line (the cache-oblivious offset needs it).
//  - in-place resizes (realloc, rallocx, xallocx): a small allocation stays when the new size
//    keeps its class (or shrinks within [size, size + extra]); a large one grows or shrinks its
//    extent in place when both ends are large; never when the pointer misses the alignment.
//  - a realloc that must move a large allocation to a large size takes the new block from an
//    arena directly, bypassing the thread cache, with the arena chosen by usable size.
//  - opt.zero (every new block zeroed) and opt.junk (0xa5 on allocation unless zeroed, 0x5a
//    on free).
// Layer: arena. Callers: api (src/api/alloc_path.cc) only. The thread's arena binding lives in
// the thread layer, above: callers pass the current binding and a callable that binds.
// Concurrency: no state of its own; the arenas' locks (arena.h) and the registry's (arenas.h).
// Invariants: a large request is served by exactly one arena, which then owns the block and
// counts it; an in-place resize leaves the usable size within [s2u(size), s2u(size + extra)] or
// reports failure with the allocation untouched.
// jemalloc mapping: arena_choose_maybe_huge, arena_malloc_hard / large_malloc / large_palloc
// (src/large.c), arena_ralloc_no_move / large_ralloc_no_move, arena_ralloc's large-to-large
// move (large_ralloc), JEMALLOC_ALLOC_JUNK / JEMALLOC_FREE_JUNK, opt.zero, opt.junk.
#pragma once

#include <cstddef>
#include <cstring>

#include "arena/arena.h"
#include "arena/arena_options.h"
#include "extent/emap.h"
#include "meta/sc.h"
#include "support/compiler.h"

namespace je {

// ---- fills -------------------------------------------------------------------------------
/// opt.junk fill bytes (jemalloc's values).
inline constexpr unsigned char kJunkAllocByte = 0xa5;
inline constexpr unsigned char kJunkFreeByte = 0x5a;

/// Whether a new block must come zeroed: the caller asked, or opt.zero.
inline bool alloc_zeroed(bool zero) { return zero || g_arena_opt.zero; }
/// opt.junk, allocation side: a new block of `usize` bytes not zeroed is filled with junk.
inline void junk_on_alloc(void* p, size_t usize, bool zeroed) {
  if (JE_UNLIKELY(g_arena_opt.junk_alloc) && !zeroed) std::memset(p, kJunkAllocByte, usize);
}
/// opt.junk, free side.
inline void junk_on_free(void* p, size_t usize) {
  if (JE_UNLIKELY(g_arena_opt.junk_free)) std::memset(p, kJunkFreeByte, usize);
}

// ---- arena choice ------------------------------------------------------------------------
/// What 5.3.0 compares with oversize_threshold: the size asked for on the plain (unaligned)
/// allocation paths, the usable size on the aligned ones and whenever `request` is 0 (unknown:
/// a retry after the new-handler, or a resize, which chooses by usable size).
inline size_t large_huge_key(size_t usize, size_t alignment, size_t request) {
  return alignment == 0 && request != 0 ? request : usize;
}

/// The huge arena when an automatic large request with this key goes there (the thread, bound
/// to `bound` or unbound when nullptr, is not on a manual arena); nullptr otherwise.
Arena* large_huge_arena_for(const Arena* bound, size_t huge_key);

/// A large block of usable size `usize` from arena `a`; `automatic` when `a` was not given
/// explicitly (only then may another arena's cached pages serve it, opt.borrow_dirty).
void* large_malloc_in(Arena* a, size_t usize, size_t alignment, bool zero, bool automatic);

/// A large block for a request the thread cache does not serve: from `explicit_arena` when
/// given, else the huge arena when large_huge_arena_for() says so, else the thread's own arena,
/// which `home()` returns (binding the thread on first use; called only when needed).
template <class Home>
void* large_malloc(Arena* explicit_arena, const Arena* bound, Home&& home, size_t usize,
                   size_t alignment, bool zero, size_t huge_key) {
  Arena* a = explicit_arena;
  if (a == nullptr) a = large_huge_arena_for(bound, huge_key);
  if (a == nullptr) a = home();
  if (a == nullptr) return nullptr;
  return large_malloc_in(a, usize, alignment, zero, explicit_arena == nullptr);
}

// ---- resizes -----------------------------------------------------------------------------
/// Resize the allocation at `ptr` (map entry `ent`) in place to a usable size within
/// [s2u(size), s2u(size + extra)] (extra clamped to the largest class); `alignment` 0 or the
/// alignment the result must keep. True when it stayed (resized or already fitting); *newsize
/// is its usable size afterwards either way. realloc and rallocx pass extra 0.
bool arena_ralloc_no_move(void* ptr, const EmapEntry& ent, size_t size, size_t extra,
                          size_t alignment, bool zero, size_t* newsize);

/// Whether a realloc that moves a block of usable size `oldsize` to `usize` takes the new block
/// straight from an arena (large_malloc with the usable size as the huge key), bypassing the
/// thread cache: large to large, as in 5.3.0.
inline bool large_ralloc_bypasses_cache(size_t oldsize, size_t usize) {
  return oldsize >= sc::kLargeMinClass && usize >= sc::kLargeMinClass;
}

}  // namespace je
