// alloc_path.cc: the general (slow) allocation paths behind every entry point (see
// alloc_path.h for the call tree).
#include "api/alloc_path.h"

#include <cerrno>
#include <cstring>

#include "api/init.h"
#include "arena/arenas.h"
#include "support/malloc_io.h"
#include "support/opt.h"

namespace je::api {

namespace {

Arena* arena_of(const Edata* e) { return arena_get(e->arena_ind, false); }

// The cache for a request: automatic (the thread's, when usable), none, or explicit.
Tcache* pick_tcache(Tsd& tsd, unsigned tcache_flag) {
  if (JE_LIKELY(tcache_flag == kTcacheAuto)) return tsd_tcache(tsd);
  if (tcache_flag == kTcacheNone) return nullptr;
  return tcaches_get(tcache_flag - 2);
}

// The arena for an automatic large request: oversize requests go to the huge arena.
/// `huge_key` is what 5.3.0 compares with oversize_threshold: the requested size on the plain
/// (unaligned) allocation paths, the usable size on the aligned and realloc paths.
Arena* pick_large_arena(Tsd& tsd, Arena* explicit_arena, size_t huge_key) {
  if (explicit_arena != nullptr) return explicit_arena;
  // The huge arena serves automatic selection only: not a thread bound to a manual arena
  // (5.3.0's arena_choose_maybe_huge).
  if (JE_UNLIKELY(huge_key >= arenas_oversize_threshold()) &&
      (tsd.arena == nullptr || !tsd.arena->manual())) {
    if (Arena* huge = arena_huge()) return huge;
  }
  return tsd_arena(tsd);
}

void* alloc_small(Tsd& tsd, Tcache* tc, Arena* arena, szind_t ind, bool zero) {
  if (tc != nullptr && ind < g_tcache_geo.nhbins) {
    CacheBin& bin = tc->bins[ind];
    void* p = bin.pop_fast();
    if (p == nullptr) {
      p = tcache_alloc_small_hard(tc, arena != nullptr ? arena : tsd_arena(tsd), ind);
      if (p == nullptr) return nullptr;
    }
    if constexpr (config::kStats) bin.nrequests++;
    if (zero) std::memset(p, 0, sz::index2size(ind));
    return p;
  }
  if (arena == nullptr) arena = tsd_arena(tsd);
  if (arena == nullptr) return nullptr;
  return arena->malloc_small(ind, zero);
}

void* alloc_large(Tsd& tsd, Tcache* tc, Arena* arena, size_t usize, size_t alignment, bool zero,
                  size_t huge_key) {
  szind_t ind = sz::size2index(usize);
  if (tc != nullptr && ind < g_tcache_geo.nhbins && alignment <= kCacheline) {
    CacheBin& bin = tc->bins[ind];
    void* p = bin.pop_fast();
    if (p == nullptr) p = bin.pop_slow();
    if (p != nullptr) {
      if constexpr (config::kStats) bin.nrequests++;
      if (zero) std::memset(p, 0, usize);
      return p;
    }
  }
  Arena* a = pick_large_arena(tsd, arena, huge_key);
  if (a == nullptr) return nullptr;
  // Only an automatic choice may be served by another arena (opt.borrow_dirty).
  return a->malloc_large(usize, alignment < kCacheline ? kCacheline : alignment, zero,
                         /*may_borrow=*/arena == nullptr);
}

// opt.junk / opt.zero fill patterns (jemalloc's values).
constexpr unsigned char kJunkAlloc = 0xa5;
constexpr unsigned char kJunkFree = 0x5a;

void* ialloc(Tsd& tsd, size_t usize, size_t alignment, bool zero, Tcache* tc, Arena* arena,
             size_t huge_key) {
  zero = zero || g_opt.zero;
  void* p;
  if (usize <= sc::kSmallMaxClass) {
    // sa2u already picked a small class whose regions are naturally aligned enough.
    p = alloc_small(tsd, tc, arena, sz::size2index(usize), zero);
  } else {
    p = alloc_large(tsd, tc, arena, usize, alignment, zero, huge_key);
  }
  if (JE_UNLIKELY(g_opt.junk_alloc) && p != nullptr && !zero) std::memset(p, kJunkAlloc, usize);
  return p;
}

void idalloc(Tsd& tsd, Tcache* tc, void* ptr, const EmapEntry& ent) {
  szind_t ind = ent.szind;
  if (JE_UNLIKELY(g_opt.junk_free)) std::memset(ptr, kJunkFree, sz::index2size(ind));
  if (tc != nullptr && ind < g_tcache_geo.nhbins) {
    CacheBin& bin = tc->bins[ind];
    if (bin.push_fast(ptr)) return;
    if (ent.slab) {
      tcache_dalloc_small_hard(tc, ind, ptr);
    } else {
      tcache_dalloc_large_hard(tc, ind, ptr);
    }
    return;
  }
  (void)tsd;
  Arena* a = arena_of(ent.edata);
  if (ent.slab) {
    a->dalloc_small(ent.edata, ind, ptr);
  } else {
    a->dalloc_large(ent.edata);
  }
}

// A pointer this library did not hand out (or already freed beyond recognition). Ignored,
// unless opt.abort asks to stop at misuse.
JE_NOINLINE_COLD void invalid_pointer(const char* func, const void* ptr) {
  if (g_opt.abort) je_abort_msg("<jemalloc>: %s(): invalid pointer %p\n", func, ptr);
}

Arena* explicit_arena(unsigned arena_flag, bool* bad) {
  *bad = false;
  if (arena_flag == 0) return nullptr;
  Arena* a = arena_get(arena_flag - 1, /*create=*/true);
  *bad = a == nullptr;
  return a;
}

}  // namespace

bool ensure_init() { return JE_LIKELY(g_initialized.load(std::memory_order_acquire)) || malloc_init(); }

void* allocate(size_t usize, size_t alignment, bool zero, unsigned tcache_flag,
               unsigned arena_flag, size_t request) {
  if (JE_UNLIKELY(!ensure_init())) return nullptr;
  if (JE_UNLIKELY(usize == 0 || usize > sc::kLargeMaxClass)) return nullptr;
  Tsd& tsd = tsd_fetch();
  bool bad;
  Arena* arena = explicit_arena(arena_flag, &bad);
  if (JE_UNLIKELY(bad)) return nullptr;
  Tcache* tc = pick_tcache(tsd, tcache_flag);
  if (JE_UNLIKELY(tcache_flag >= 2 && tc == nullptr)) return nullptr;
  const size_t huge_key = alignment == 0 && request != 0 ? request : usize;
  void* p = ialloc(tsd, usize, alignment, zero, tc, arena, huge_key);
  if (JE_LIKELY(p != nullptr)) {
    tsd.allocated += usize;
    tsd_alloc_event(tsd);
  }
  return p;
}

void* malloc_slow(size_t size) {
  void* p = allocate(sz::s2u(size), 0, false, kTcacheAuto, 0, size);
  if (JE_UNLIKELY(p == nullptr)) errno = ENOMEM;
  return p;
}

void* mallocx_slow(size_t size) {
  return allocate(sz::s2u(size), 0, false, kTcacheAuto, 0, size);
}

void deallocate(void* ptr, unsigned tcache_flag) {
  EmapEntry ent = g_emap.lookup_entry(ptr);
  if (JE_UNLIKELY(ent.edata == nullptr)) {
    invalid_pointer("free", ptr);
    return;
  }
  Tsd& tsd = tsd_fetch();
  Tcache* tc = pick_tcache(tsd, tcache_flag);
  idalloc(tsd, tc, ptr, ent);
  tsd.deallocated += sz::index2size(ent.szind);
  tsd_dalloc_event(tsd);
}

void free_slow(void* ptr) {
  if (ptr == nullptr) return;
  deallocate(ptr, kTcacheAuto);
}

void deallocate_sized(void* ptr, size_t usize, unsigned tcache_flag) {
  if (ptr == nullptr) return;
  // The hint names the class; the map still tells which slab (and arena) owns the pointer.
  (void)usize;
  deallocate(ptr, tcache_flag);
}

void sized_free_slow(void* ptr, size_t size) { deallocate_sized(ptr, sz::s2u(size), kTcacheAuto); }

size_t usable_size(const void* ptr) {
  EmapEntry ent = g_emap.lookup_entry(ptr);
  if (ent.edata == nullptr || ent.szind >= sc::kNSizes) return 0;
  return sz::index2size(ent.szind);
}

namespace {

// Whether a small allocation of class `oldsize` can stay where it is for [size, size+extra].
bool small_stays(size_t oldsize, size_t size, size_t usize_max) {
  bool same_class = usize_max <= sc::kSmallMaxClass && sz::size2index(usize_max) == sz::size2index(oldsize);
  return same_class || (size <= oldsize && usize_max >= oldsize);
}

// In-place resize; true when ptr now has a usable size within [s2u(size), s2u(size + extra)].
bool ralloc_no_move(void* ptr, const EmapEntry& ent, size_t size, size_t extra, bool zero,
                    size_t* newsize) {
  size_t oldsize = sz::index2size(ent.szind);
  *newsize = oldsize;
  if (size > sc::kLargeMaxClass) return false;
  size_t usize_min = sz::s2u(size);
  size_t usize_max = sz::s2u(size + extra);
  if (oldsize <= sc::kSmallMaxClass && usize_min <= sc::kSmallMaxClass) {
    if (!small_stays(oldsize, size, usize_max)) return false;
    arena_of(ent.edata)->decay_tick();
    return true;
  }
  if (oldsize >= sc::kLargeMinClass && usize_max >= sc::kLargeMinClass) {
    Edata* e = ent.edata;
    bool ok = arena_of(e)->ralloc_large_no_move(e, usize_min < sc::kLargeMinClass ? sc::kLargeMinClass : usize_min, usize_max, zero);
    *newsize = sz::index2size(e->szind);
    (void)ptr;
    return ok;
  }
  return false;
}

/// A resize counts as an allocation of the new size and a free of the old one, and runs both
/// sides' thread events (cache GC steps, peak samples, stats_interval) as 5.3.0's rallocx and
/// xallocx do, in place or moved.
void account_resize(Tsd& tsd, size_t newsize, size_t oldsize) {
  tsd.allocated += newsize;
  tsd_alloc_event(tsd);
  tsd.deallocated += oldsize;
  tsd_dalloc_event(tsd);
}

}  // namespace

void* reallocate(void* ptr, size_t size, size_t alignment, bool zero, unsigned tcache_flag,
                 unsigned arena_flag) {
  if (JE_UNLIKELY(!ensure_init())) return nullptr;
  size_t usize = usize_for(size, alignment);
  if (JE_UNLIKELY(usize == 0 || size > sc::kLargeMaxClass)) return nullptr;
  EmapEntry ent = g_emap.lookup_entry(ptr);
  if (JE_UNLIKELY(ent.edata == nullptr)) {
    invalid_pointer("realloc", ptr);
    return nullptr;
  }
  Tsd& tsd = tsd_fetch();
  size_t oldsize = sz::index2size(ent.szind);
  bool aligned_ok = alignment == 0 || (addr_of(ptr) & (alignment - 1)) == 0;
  // Try to stay in place: same small class, or a large extent grown/shrunk in place.
  if (aligned_ok) {
    size_t newsize;
    bool try_in_place = usize <= sc::kSmallMaxClass ||
                        (oldsize >= sc::kLargeMinClass && usize >= sc::kLargeMinClass);
    if (try_in_place && ralloc_no_move(ptr, ent, usize, 0, zero, &newsize)) {
      account_resize(tsd, newsize, oldsize);
      return ptr;
    }
  }
  bool bad;
  Arena* arena = explicit_arena(arena_flag, &bad);
  if (JE_UNLIKELY(bad)) return nullptr;
  Tcache* tc = pick_tcache(tsd, tcache_flag);
  void* p;
  if (oldsize >= sc::kLargeMinClass && usize >= sc::kLargeMinClass) {
    // Large to large moves bypass the cache for the new block, as jemalloc does.
    Arena* a = pick_large_arena(tsd, arena, usize);
    p = a == nullptr ? nullptr
                     : a->malloc_large(usize, alignment < kCacheline ? kCacheline : alignment, zero,
                                       /*may_borrow=*/arena == nullptr);
  } else {
    p = ialloc(tsd, usize, alignment, zero, tc, arena, usize);
  }
  if (JE_UNLIKELY(p == nullptr)) return nullptr;
  std::memcpy(p, ptr, usize < oldsize ? usize : oldsize);
  idalloc(tsd, tc, ptr, ent);
  account_resize(tsd, usize, oldsize);
  return p;
}

size_t resize_in_place(void* ptr, size_t size, size_t extra, size_t alignment, bool zero) {
  EmapEntry ent = g_emap.lookup_entry(ptr);
  if (JE_UNLIKELY(ent.edata == nullptr)) return 0;
  size_t oldsize = sz::index2size(ent.szind);
  if (size > sc::kLargeMaxClass) return oldsize;
  if (sc::kLargeMaxClass - size < extra) extra = sc::kLargeMaxClass - size;
  if (alignment != 0 && (addr_of(ptr) & (alignment - 1)) != 0) return oldsize;
  size_t newsize;
  if (!ralloc_no_move(ptr, ent, size, extra, zero, &newsize)) return oldsize;
  if (newsize != oldsize) account_resize(tsd_fetch(), newsize, oldsize);
  return newsize;
}

}  // namespace je::api
