// alloc_path.h: the allocation and deallocation paths shared by every public entry point.
//
// Call tree (hot to cold):
//   malloc / operator new / mallocx(flags = 0)
//     -> malloc_fast: size <= 4 KiB, class from the lookup table, thread event threshold not
//        reached, thread-cache bin not at its low-water mark  => pop, count, return
//     -> (tail call) alloc_slow: initialize library/thread if needed, decode the request
//        -> ialloc: small  -> tcache pop / tcache fill from the arena bin / arena bin directly
//                   large  -> tcache (<= tcache_max) / large_malloc (arena choice: large.h)
//   free / operator delete / dallocx
//     -> free_fast: emap entry (two loads) says slab; event threshold; bin not full => push
//     -> (tail call) free_slow -> idalloc: tcache push / flush / arena dalloc
//   realloc / rallocx / xallocx -> reallocate / resize_in_place: in place when the rules in
//        src/arena/large.h allow it (arena_ralloc_no_move), else allocate, copy, free.
// Fast paths are always-inline into each exported function; slow paths are noinline+cold and
// take the same arguments so the compiler emits a tail call.
// Layer: api (the only layer that may define public names, and the only one that calls up
// into every other layer). Concurrency: see the layers below; this file holds no locks.
// jemalloc mapping: imalloc_fastpath / malloc_default, free_fastpath / free_default, ifree,
// isfree, iralloct, ixalloc, arena_malloc/arena_palloc/arena_ralloc (src/jemalloc.c, arena.c).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "arena/arena.h"
#include "extent/emap.h"
#include "meta/sz.h"
#include "support/compiler.h"
#include "thread/tcache.h"
#include "thread/tsd.h"

namespace je::api {

/// Decoded `flags` of the *allocx family (MALLOCX_* in the public header).
struct Flags {
  size_t alignment = 0;  // 0 = natural
  bool zero = false;
  unsigned tcache = 0;  // 0 automatic, 1 none, n >= 2 explicit cache n - 2
  unsigned arena = 0;   // 0 automatic, n >= 1 arena n - 1
  /// Only an alignment (the aligned standard entry points).
  static Flags aligned(size_t alignment) {
    Flags f;
    f.alignment = alignment;
    return f;
  }
  static Flags decode(int flags) {
    Flags f;
    unsigned lg = static_cast<unsigned>(flags) & 0x3f;
    f.alignment = lg == 0 ? 0 : size_t{1} << lg;
    f.zero = (flags & 0x40) != 0;
    f.tcache = (static_cast<unsigned>(flags) >> 8) & 0xfff;
    f.arena = (static_cast<unsigned>(flags) >> 20) & 0xfff;
    return f;
  }
};

inline constexpr unsigned kTcacheAuto = 0;
inline constexpr unsigned kTcacheNone = 1;

/// Usable size for a request, 0 when impossible (too large or bad alignment).
JE_ALWAYS_INLINE size_t usize_for(size_t size, size_t alignment) {
  if (JE_LIKELY(alignment == 0)) return sz::s2u(size);
  return sz::sa2u(size, alignment);
}

// ---- slow paths (src/api/alloc_path.cc) ------------------------------------------------------
/// malloc semantics (errno = ENOMEM on failure).
JE_NOINLINE_COLD void* malloc_slow(size_t size);
/// mallocx(size, 0) semantics (errno untouched).
JE_NOINLINE_COLD void* mallocx_slow(size_t size);
JE_NOINLINE_COLD void free_slow(void* ptr);
/// The slow path of the sized frees without flags: free_slow, plus (opt.safety_checks) the
/// check that `size` names the block's size class.
JE_NOINLINE_COLD void sized_free_slow(void* ptr, size_t size);

/// One decoded request: what the caller asked for, the usable size it rounds to, and the
/// *allocx flags (all zero for the standard entry points). Each entry point builds one and
/// passes it down whole; the policy (arena choice, in-place resizes) lives below, in
/// src/arena/large.h.
struct Request {
  size_t size = 0;   // bytes asked for; 0 when unknown (a retry after the new-handler)
  size_t usize = 0;  // usable size (0: impossible -- too large or bad alignment)
  Flags flags;
  /// The usable size from usize_for(); entry points with their own rounding (the aligned ones,
  /// which turn size 0 into 1) fill `usize` themselves.
  JE_ALWAYS_INLINE static Request of(size_t size, Flags f) {
    return Request{size, usize_for(size, f.alignment), f};
  }
};

/// General allocation of `r.usize` bytes (r.size decides the oversize arena as in 5.3.0, see
/// large_huge_key); nullptr on failure, also for usize 0 (errno untouched).
void* allocate(const Request& r);
/// experimental.batch_alloc: up to `num` blocks as mallocx(size, flags) would return them,
/// into ptrs[]; stops at the first failure and returns how many it filled (0 for an
/// impossible size or alignment, or while a user extent hook runs).
size_t batch_allocate(void** ptrs, size_t num, size_t size, int flags);
/// General deallocation of a pointer we own (ptr non-null).
void deallocate(void* ptr, unsigned tcache_flag);
/// The slow path of the sized frees that carry flags or an alignment (sdallocx with flags, sized
/// aligned operator delete; sized_free_fast falls back to sized_free_slow): a null `ptr` is
/// ignored, otherwise exactly deallocate(). The map lookup finds the class and the owner, as
/// for free; `size` (rounded with f.alignment) is only compared with that class, under
/// opt.safety_checks.
void deallocate_sized(void* ptr, size_t size, const Flags& f);
/// realloc/rallocx: resize to `r.size` (r.usize from Request::of), in place when the rules
/// allow (arena_ralloc_no_move), else allocate, copy, free. nullptr on failure (old block
/// intact).
void* reallocate(void* ptr, const Request& r);
/// xallocx: resize in place only, to [size, size + extra] with `f`'s alignment and zeroing;
/// returns the resulting usable size (0 for a pointer we do not own).
size_t resize_in_place(void* ptr, size_t size, size_t extra, const Flags& f);
/// Usable size of an allocation.
size_t usable_size(const void* ptr);
/// Make sure the library is initialized (first call from any entry point). False on failure.
bool ensure_init();

// ---- fast paths ------------------------------------------------------------------------------

/// The pointer test of sized_free_fast: all ones (ptr != nullptr), or with opt.prof the page
/// offset bits (set once at initialization, see malloc_init).
extern constinit uintptr_t g_sized_free_mask __attribute__((visibility("hidden")));

/// (ptr & mask) != 0 in one instruction: `test` with the mask in memory (the compiler would
/// load it into a register first, one instruction more on the fast path).
JE_ALWAYS_INLINE bool ptr_passes(const void* ptr, const uintptr_t& mask) {
#if defined(__x86_64__)
  bool zero;
  asm("test %1, %2" : "=@ccz"(zero) : "r"(ptr), "m"(mask));
  return !zero;
#else
  return (addr_of(ptr) & mask) != 0;
#endif
}

/// The small-allocation fast path; `Slow` is the entry point's own slow path (errno for
/// malloc, none for mallocx, new-handler + throw for operator new) and gets a tail call.
template <void* (*Slow)(size_t)>
JE_ALWAYS_INLINE void* alloc_fast(size_t size) {
  if (JE_LIKELY(size <= sc::kLookupMaxClass)) {
    Tsd& tsd = t_tsd;
    szind_t ind = sz::size2index(size);
    uint64_t after = tsd.allocated + sz::index2size(ind);
    if (JE_LIKELY(after < tsd.allocated_next_event_fast)) {
      CacheBin& bin = tsd.tcache.bins[ind];
      if (JE_LIKELY(bin.can_pop_fast())) {
        tsd.allocated = after;
        if constexpr (config::kStats) bin.nrequests++;
        return bin.pop_unchecked();
      }
    }
  }
  return Slow(size);
}

JE_ALWAYS_INLINE void* malloc_fast(size_t size) { return alloc_fast<malloc_slow>(size); }

JE_ALWAYS_INLINE void free_fast(void* ptr) {
  uint64_t v = g_emap.rtree().read(addr_of(ptr));
  if (JE_LIKELY((v >> Emap::kSlabShift) & 1)) {
    Tsd& tsd = t_tsd;
    szind_t ind = static_cast<szind_t>((v >> Emap::kSzindShift) & 0xff);
    uint64_t after = tsd.deallocated + sz::index2size(ind);
    if (JE_LIKELY(after < tsd.deallocated_next_event_fast)) {
      if (JE_LIKELY(tsd.tcache.bins[ind].push_fast(ptr))) {
        tsd.deallocated = after;
        return;
      }
    }
  }
  free_slow(ptr);
}

/// Sized free: on the fast path the class comes from the size, no map lookup (the caller
/// vouches for it); the slow path is free's, which checks the size under opt.safety_checks.
JE_ALWAYS_INLINE void sized_free_fast(void* ptr, size_t size) {
  if (JE_LIKELY(size <= sc::kLookupMaxClass)) {
    Tsd& tsd = t_tsd;
    szind_t ind = sz::size2index(size);
    uint64_t after = tsd.deallocated + sz::index2size(ind);
    // ptr & g_sized_free_mask: ptr != nullptr normally; with opt.prof, "not page aligned",
    // which also excludes every sampled block (page aligned, not the small region `size`
    // says) -- one test with a memory operand either way. With opt.prof a small region that
    // starts a page takes the slow path, which looks it up (as in 5.3.0).
    if (JE_LIKELY(after < tsd.deallocated_next_event_fast && ptr_passes(ptr, g_sized_free_mask))) {
      if (JE_LIKELY(tsd.tcache.bins[ind].push_fast(ptr))) {
        tsd.deallocated = after;
        return;
      }
    }
  }
  sized_free_slow(ptr, size);
}

}  // namespace je::api
