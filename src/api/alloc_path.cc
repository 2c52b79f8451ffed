// alloc_path.cc: the general (slow) allocation paths behind every entry point (see
// alloc_path.h for the call tree).
#include "api/alloc_path.h"

#include <cerrno>
#include <cstring>

#include "api/init.h"
#include "arena/arenas.h"
#include "arena/large.h"
#include "support/malloc_io.h"
#include "ctl/opt.h"

namespace je::api {

namespace {

Arena* arena_of(const Edata* e) { return arena_get(e->arena_ind, false); }

// The cache for a request: automatic (the thread's, when usable), none, or explicit.
Tcache* pick_tcache(Tsd& tsd, unsigned tcache_flag) {
  if (JE_LIKELY(tcache_flag == kTcacheAuto)) return tsd_tcache(tsd);
  if (tcache_flag == kTcacheNone) return nullptr;
  return tcaches_get(tcache_flag - 2);
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
  return large_malloc(
      arena, tsd.arena, [&tsd] { return tsd_arena(tsd); }, usize, alignment, zero, huge_key);
}

void* ialloc(Tsd& tsd, size_t usize, size_t alignment, bool zero, Tcache* tc, Arena* arena,
             size_t huge_key) {
  zero = alloc_zeroed(zero);
  void* p;
  if (usize <= sc::kSmallMaxClass) {
    // sa2u already picked a small class whose regions are naturally aligned enough.
    p = alloc_small(tsd, tc, arena, sz::size2index(usize), zero);
  } else {
    p = alloc_large(tsd, tc, arena, usize, alignment, zero, huge_key);
  }
  if (p != nullptr) junk_on_alloc(p, usize, zero);
  return p;
}

void idalloc(Tcache* tc, void* ptr, const EmapEntry& ent) {
  szind_t ind = ent.szind;
  junk_on_free(ptr, sz::index2size(ind));
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
  if (g_opt.abort) je_abort_msg("%s(): invalid pointer %p", func, ptr);
}

Arena* explicit_arena(unsigned arena_flag, bool* bad) {
  *bad = false;
  if (arena_flag == 0) return nullptr;
  Arena* a = arena_get(arena_flag - 1, /*create=*/true);
  *bad = a == nullptr;
  return a;
}

}  // namespace

bool ensure_init() {
  return JE_LIKELY(g_initialized.load(std::memory_order_acquire)) || malloc_init();
}

void* allocate(const Request& r) {
  if (JE_UNLIKELY(!ensure_init())) return nullptr;
  if (JE_UNLIKELY(r.usize == 0 || r.usize > sc::kLargeMaxClass)) return nullptr;
  Tsd& tsd = tsd_fetch();
  bool bad;
  Arena* arena = explicit_arena(r.flags.arena, &bad);
  if (JE_UNLIKELY(bad)) return nullptr;
  Tcache* tc = pick_tcache(tsd, r.flags.tcache);
  if (JE_UNLIKELY(r.flags.tcache >= 2 && tc == nullptr)) return nullptr;
  void* p = ialloc(tsd, r.usize, r.flags.alignment, r.flags.zero, tc, arena,
                   large_huge_key(r.usize, r.flags.alignment, r.size));
  if (JE_LIKELY(p != nullptr)) {
    tsd.allocated += r.usize;
    tsd_alloc_event(tsd);
  }
  return p;
}

void* malloc_slow(size_t size) {
  void* p = allocate(Request::of(size, {}));
  if (JE_UNLIKELY(p == nullptr)) errno = ENOMEM;
  return p;
}

void* mallocx_slow(size_t size) { return allocate(Request::of(size, {})); }

void deallocate(void* ptr, unsigned tcache_flag) {
  EmapEntry ent = g_emap.lookup_entry(ptr);
  if (JE_UNLIKELY(ent.edata == nullptr)) {
    invalid_pointer("free", ptr);
    return;
  }
  Tsd& tsd = tsd_fetch();
  Tcache* tc = pick_tcache(tsd, tcache_flag);
  idalloc(tc, ptr, ent);
  tsd.deallocated += sz::index2size(ent.szind);
  tsd_dalloc_event(tsd);
}

void free_slow(void* ptr) {
  if (ptr == nullptr) return;
  deallocate(ptr, kTcacheAuto);
}

void deallocate_sized(void* ptr, unsigned tcache_flag) {
  if (ptr == nullptr) return;
  deallocate(ptr, tcache_flag);
}

size_t usable_size(const void* ptr) {
  EmapEntry ent = g_emap.lookup_entry(ptr);
  if (ent.edata == nullptr || ent.szind >= sc::kNSizes) return 0;
  return sz::index2size(ent.szind);
}

namespace {

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

void* reallocate(void* ptr, const Request& r) {
  if (JE_UNLIKELY(!ensure_init())) return nullptr;
  const size_t usize = r.usize;
  const size_t alignment = r.flags.alignment;
  if (JE_UNLIKELY(usize == 0 || r.size > sc::kLargeMaxClass)) return nullptr;
  EmapEntry ent = g_emap.lookup_entry(ptr);
  if (JE_UNLIKELY(ent.edata == nullptr)) {
    invalid_pointer("realloc", ptr);
    return nullptr;
  }
  Tsd& tsd = tsd_fetch();
  size_t oldsize = sz::index2size(ent.szind);
  size_t newsize;
  if (arena_ralloc_no_move(ptr, ent, usize, 0, alignment, r.flags.zero, &newsize)) {
    account_resize(tsd, newsize, oldsize);
    return ptr;
  }
  bool bad;
  Arena* arena = explicit_arena(r.flags.arena, &bad);
  if (JE_UNLIKELY(bad)) return nullptr;
  Tcache* tc = pick_tcache(tsd, r.flags.tcache);
  const size_t huge_key = large_huge_key(usize, alignment, /*request=*/0);
  void* p;
  if (large_ralloc_bypasses_cache(oldsize, usize)) {
    p = large_malloc(
        arena, tsd.arena, [&tsd] { return tsd_arena(tsd); }, usize, alignment, r.flags.zero,
        huge_key);
  } else {
    p = ialloc(tsd, usize, alignment, r.flags.zero, tc, arena, huge_key);
  }
  if (JE_UNLIKELY(p == nullptr)) return nullptr;
  std::memcpy(p, ptr, usize < oldsize ? usize : oldsize);
  idalloc(tc, ptr, ent);
  account_resize(tsd, usize, oldsize);
  return p;
}

size_t resize_in_place(void* ptr, size_t size, size_t extra, const Flags& f) {
  EmapEntry ent = g_emap.lookup_entry(ptr);
  if (JE_UNLIKELY(ent.edata == nullptr)) return 0;
  size_t oldsize = sz::index2size(ent.szind);
  size_t newsize;
  if (arena_ralloc_no_move(ptr, ent, size, extra, f.alignment, f.zero, &newsize) &&
      newsize != oldsize) {
    account_resize(tsd_fetch(), newsize, oldsize);
  }
  return newsize;
}

}  // namespace je::api
