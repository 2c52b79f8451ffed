// alloc_path.cc: the general (slow) allocation paths behind every entry point (see
// alloc_path.h for the call tree).
#include "api/alloc_path.h"

#include <cerrno>
#include <cstring>

#include "api/init.h"
#include "arena/arenas.h"
#include "arena/bin_info.h"
#include "arena/large.h"
#include "ctl/opt.h"
#include "extent/extent.h"
#include "prof/prof.h"
#include "prof/prof_backtrace.h"
#include "prof/prof_sample.h"
#include "prof/prof_tctx.h"
#include "support/malloc_io.h"
#include "support/reentrancy.h"

namespace je::api {

constinit uintptr_t g_sized_free_mask = ~uintptr_t{0};

namespace {

Arena* arena_of(const Edata* e) { return arena_get(e->arena_ind, false); }

// ---- opt.safety_checks ----------------------------------------------------------------------
// Every check runs on the slow paths only: with the option on, tsd_recompute_fast sends each
// allocation and free of every thread there, so the fast paths carry no test of their own.

JE_ALWAYS_INLINE bool safety_on() { return JE_UNLIKELY(g_arena_opt.safety_checks); }

// Whether `ptr` already sits in bin `ind` of cache `tc` (freed, not yet handed out again).
bool cached_in(const Tcache* tc, szind_t ind, const void* ptr) {
  if (tc == nullptr || tc->cold == nullptr || ind >= g_tcache_geo.nhbins) return false;
  const CacheBin& bin = tc->bin(ind);
  for (void **p = bin.head, **end = bin.bottom(); p != end; ++p) {
    if (*p == ptr) return true;
  }
  return false;
}

// A free (or the old block of a realloc) of `ptr`, whose map entry is `ent` (edata non-null),
// into cache `tc`: abort on an interior pointer, a double free, or a sized deallocation whose
// size (`size`, with `alignment`; `sized` false when the caller gave none) names another class.
JE_NOINLINE_COLD void check_free(const char* func, const void* ptr, const EmapEntry& ent, Tsd& tsd,
                                 const Tcache* tc, bool sized, size_t size, size_t alignment) {
  const Edata* e = ent.edata;
  if (ent.state != ExtentState::kActive || ent.szind >= sc::kNSizes) {
    // The pages of a large block (or of a slab whose last region was freed) went back to the
    // page allocator; the map shows them free (or merged into a free neighbour).
    je_abort_msg("%s(): double free of %p (its pages are already free)", func, ptr);
  }
  const size_t usize = sz::index2size(ent.szind);
  if (ent.slab) {
    const uintptr_t off = addr_of(ptr) - e->base_addr();
    const size_t reg = g_bin_geo[ent.szind].reg_size;
    if (off % reg != 0 || off / reg >= g_bin_geo[ent.szind].nregs) {
      je_abort_msg("%s(): invalid pointer %p (inside the %zu-byte small block at %p)", func, ptr,
                   usize, ptr_of(e->base_addr() + off / reg * reg));
    }
  } else if (ptr != e->addr) {
    je_abort_msg("%s(): invalid pointer %p (inside the %zu-byte large block at %p)", func, ptr,
                 usize, e->addr);
  }
  if (cached_in(tc, ent.szind, ptr) ||
      (tsd.state != TsdState::kUninitialized && cached_in(&tsd.tcache, ent.szind, ptr))) {
    je_abort_msg("%s(): double free of %p (%s block of %zu bytes, still in the thread cache)", func,
                 ptr, ent.slab ? "small" : "large", usize);
  }
  if (ent.slab && !arena_of(e)->small_region_in_use(e, ent.szind, ptr)) {
    je_abort_msg("%s(): double free of %p (small block of %zu bytes, already free in its slab)",
                 func, ptr, usize);
  }
  if (sized) {
    // 5.3.0's words (its safety_check_fail_sized_dealloc) lead, so a grep for them matches.
    const size_t expect = usize_for(size == 0 ? 1 : size, alignment);  // new(0) took 1 byte
    if (expect == 0 || expect > sc::kLargeMaxClass || sz::size2index(expect) != ent.szind) {
      // A hook (experimental.hooks.safety_check_abort) may return: the free goes on with the
      // block's true size class, which the map gave.
      je_misuse_msg(
          "size mismatch detected (true size %zu vs input size %zu) in a sized "
          "deallocation of %p: the size given is not the block's size class",
          usize, size, ptr);
    }
  }
}

// With junk on free, a small region handed out again must still hold the free junk everywhere:
// a byte that differs was written after the region was freed.
JE_NOINLINE_COLD void check_junk(const void* p, size_t usize) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < usize; i++) {
    if (JE_UNLIKELY(b[i] != kJunkFreeByte)) {
      je_abort_msg(
          "write after free detected: %p (small block of %zu bytes), byte %zu is 0x%02x, "
          "not the 0x%02x junk left by free",
          p, usize, i, b[i], kJunkFreeByte);
    }
  }
}

// The cache for a request: automatic (the thread's, when usable), none, or explicit.
Tcache* pick_tcache(Tsd& tsd, unsigned tcache_flag) {
  if (JE_LIKELY(tcache_flag == kTcacheAuto)) return tsd_tcache(tsd);
  if (tcache_flag == kTcacheNone) return nullptr;
  return tcaches_get(tcache_flag - 2);
}

void* alloc_small(Tsd& tsd, Tcache* tc, Arena* arena, szind_t ind, bool zero) {
  const bool check_uaf = safety_on() && g_arena_opt.junk_free;
  if (tc != nullptr && ind < g_tcache_geo.nhbins) {
    CacheBin& bin = tc->bins[ind];
    void* p = bin.pop_fast();
    if (p == nullptr) {
      p = tcache_alloc_small_hard(tc, arena != nullptr ? arena : tsd_arena(tsd), ind);
      if (p == nullptr) return nullptr;
    }
    if constexpr (config::kStats) bin.nrequests++;
    if (check_uaf) check_junk(p, sz::index2size(ind));
    if (zero) std::memset(p, 0, sz::index2size(ind));
    return p;
  }
  if (arena == nullptr) arena = tsd_arena(tsd);
  if (arena == nullptr) return nullptr;
  if (JE_LIKELY(!check_uaf)) return arena->malloc_small(ind, zero);
  void* p = arena->malloc_small(ind, /*zero=*/false);
  if (p != nullptr) {
    check_junk(p, sz::index2size(ind));
    if (zero) std::memset(p, 0, sz::index2size(ind));
  }
  return p;
}

void* alloc_large(Tsd& tsd, Tcache* tc, Arena* arena, size_t usize, size_t alignment, bool zero,
                  size_t huge_key) {
  szind_t ind = sz::size2index(usize);
  if (tc != nullptr && ind < g_tcache_geo.nhbins && alignment <= kCacheline) {
    CacheBin& bin = tc->bin(ind);
    void* p = bin.pop_fast();
    if (p == nullptr) p = bin.pop_slow();
    if (p != nullptr) {
      if constexpr (config::kStats) bin.nrequests++;
      if (zero) std::memset(p, 0, usize);
      return p;
    }
    tcache_large_miss(tc, ind);
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

// ---- heap profiling ----------------------------------------------------------------------
// A sampled allocation is a large extent of its own, carrying its record in Edata::prof_rec. A
// sampled small allocation is promoted: the smallest large class, with its small class written
// into the map (so usable_size, sallocx and sized frees see the small class) and page aligned
// (which the sized-free fast path relies on: init.cc); the free restores the large class before
// the extent goes back. As 5.3.0's sampled blocks do, the extent returns to the thread cache's
// bin of its large class, and a later sample with an automatic arena and at most cacheline
// alignment takes it from there when it fits (each trip to the arena cost a sample about 1,400
// instructions, a seventh of a backtrace); otherwise it is a fresh, page-aligned extent.

// Whether the extent of map entry `ent` is a sampled block (the slab test first: slabs never
// are, and it needs no load).
JE_ALWAYS_INLINE bool is_sampled(const EmapEntry& ent) {
  return config::kProf && !ent.slab && JE_UNLIKELY(ent.edata->prof_rec != nullptr);
}

// A sampled block's extent, its record already detached and its large class back in the map,
// at `ptr`: into cache `tc`'s bin for it when there is room, else back to its arena.
void release_sampled_extent(Tcache* tc, Edata* e, void* ptr) {
  const szind_t ind = e->szind;
  if (tc != nullptr && ind < g_tcache_geo.nhbins && tc->bin(ind).push_fast(ptr)) return;
  arena_of(e)->dalloc_large(e);
}

JE_NOINLINE_COLD void dalloc_sampled(Tcache* tc, Edata* e, void* ptr) {
  auto* t = static_cast<ProfTctx*>(e->prof_rec);
  e->prof_rec = nullptr;
  prof_tctx_free(t);
  if (e->szind < sc::kNBins) g_emap.remap(e, sz::size2index(sc::kLargeMinClass), false);
  release_sampled_extent(tc, e, ptr);
}

// The extent at the top of cache `tc`'s bin for large class `ind`, taken for a sampled block,
// or nullptr: the bin is empty, or that block does not fit. A promoted block must be page
// aligned (the sized-free fast path tells it from a small region by that: init.cc), and a
// cached large block has a random cacheline offset unless it was itself sampled before; and a
// block of a manual arena must never be promoted (see alloc_sampled).
void* sampled_from_cache(Tcache* tc, szind_t ind, bool promote) {
  CacheBin& bin = tc->bin(ind);
  if (bin.ncached() == 0) return nullptr;
  void* p = *bin.head;  // what the pop below returns
  if (promote && (addr_of(p) & (config::kPage - 1)) != 0) return nullptr;
  if (JE_UNLIKELY(arena_of(g_emap.lookup_entry(p).edata)->manual())) return nullptr;
  if (bin.pop_fast() == nullptr) bin.pop_slow();
  if constexpr (config::kStats) bin.nrequests++;
  return p;
}

// Draws the distance to the thread's next sample, counted from `from` bytes of allocation: the
// end of the allocation that crossed the last threshold (bytes of that allocation beyond its
// sampled byte cannot make it "more sampled", so they must not count towards the next one).
void prof_arm(Tsd& tsd, uint64_t from) {
  if (tsd.prof_prng == 0) tsd.prof_prng = addr_of(&tsd) ^ 0x9e3779b97f4a7c15ULL;
  // lg_prof_interval counts bytes in batches of one sample distance per thread.
  if (tsd.prof_armed && !in_reentrant_call()) prof_interval_account(from - tsd.prof_counted);
  tsd.prof_counted = from;
  tsd.prof_epoch = prof_reset_epoch();
  tsd_set_prof_next_sample(tsd, from + prof_sample_gap(&tsd.prof_prng, prof_lg_sample()));
}

// The allocation that crosses the thread's threshold, with the backtrace the entry point
// captured; nullptr when it is not sampled after all (no memory for the record / the extent),
// in which case the caller allocates normally.
JE_NOINLINE_COLD void* alloc_sampled(Tsd& tsd, const Request& r, Arena* arena, Tcache* tc,
                                     ProfBt* bt) {
  const size_t usize = r.usize;
  const bool promote = usize <= sc::kSmallMaxClass;
  const size_t lusize = promote ? sc::kLargeMinClass : usize;
  const bool zero = alloc_zeroed(r.flags.zero);
  const szind_t lind = sz::size2index(lusize);
  void* p = nullptr;
  if (tc != nullptr && arena == nullptr && lind < g_tcache_geo.nhbins &&
      r.flags.alignment <= kCacheline) {
    p = sampled_from_cache(tc, lind, promote);
    if (p != nullptr && zero) std::memset(p, 0, usize);
  }
  if (p == nullptr) {
    const size_t align = r.flags.alignment > config::kPage ? r.flags.alignment : config::kPage;
    if (sz::sa2u(lusize, align) != lusize) return nullptr;
    Arena* a = arena;
    if (a == nullptr) a = large_huge_arena_for(tsd.arena, large_huge_key(usize, align, r.size));
    if (a == nullptr) a = tsd_arena(tsd);
    // A promoted block's map entry names a small class, which a manual arena's reset (walking
    // its large extents) must never meet: promote into automatic arena 0 instead.
    if (a != nullptr && promote && a->manual()) a = arena_get(0, false);
    if (a == nullptr) return nullptr;
    p = a->malloc_large(lusize, align, zero, /*may_borrow=*/arena == nullptr);
    if (p == nullptr) return nullptr;
  }
  Edata* e = g_emap.lookup_entry(p).edata;
  ProfTctx* t = prof_tctx_sample_bt(r.size, usize, bt);
  if (t == nullptr) {
    // Not sampled after all: an ordinary large block (promotion undone by the caller's
    // normal path).
    release_sampled_extent(tc, e, p);
    return nullptr;
  }
  if (promote) g_emap.remap(e, sz::size2index(usize), false);
  e->prof_rec = t;
  junk_on_alloc(p, usize, zero);
  return p;
}

// With opt.prof: whether this allocation of `r` crosses the thread's threshold and is to be
// sampled -- not when the call comes from inside the allocator (e.g. the unwinder) or the
// thread's profiling is inactive, in which case the next distance is drawn here at once.
JE_NOINLINE_COLD bool sample_due_slow(Tsd& tsd, const Request& r) {
  // Never armed, or armed before the last prof.reset (whose new rate must apply now, not after
  // a distance drawn with the old one): draw from here.
  if (JE_UNLIKELY(!tsd.prof_armed || tsd.prof_epoch != prof_reset_epoch())) {
    prof_arm(tsd, tsd.allocated);
  }
  if (tsd.allocated + r.usize < tsd.prof_next_sample) return false;
  if (!in_reentrant_call() && prof_tctx_wanted()) return true;
  prof_arm(tsd, tsd.allocated + r.usize);
  return false;
}

// The sampled allocation, then the distance to the next sample.
JE_NOINLINE_COLD void* sample_captured(Tsd& tsd, const Request& r, Arena* arena, Tcache* tc,
                                       ProfBt* bt) {
  void* p = alloc_sampled(tsd, r, arena, tc, bt);
  prof_arm(tsd, tsd.allocated + r.usize);
  return p;
}

// A large block resized in place, sampled before (its record in e->prof_rec) or due now (`bt`
// its backtrace, else nullptr): a due sample records the block at its new usable size `usize`,
// then the old record is released as at a free (in this order, as 5.3.0's prof_realloc: both
// may charge the same context, which must not drop to nothing in between).
JE_NOINLINE_COLD void resample_in_place(Tsd& tsd, const Request& r, Edata* e, size_t usize,
                                        ProfBt* bt) {
  auto* old = static_cast<ProfTctx*>(e->prof_rec);
  e->prof_rec = bt != nullptr ? prof_tctx_sample_bt(r.size, usize, bt) : nullptr;
  if (bt != nullptr) prof_arm(tsd, tsd.allocated + r.usize);
  if (old != nullptr) prof_tctx_free(old);
}

// prof_gdump: this thread's extent growth raised the high-water mark; now, with no allocator
// lock held, the dump can be written (never from inside the allocator's own calls: the mark
// waits for this thread's next allocation slow path).
JE_NOINLINE_COLD void gdump_slow() {
  if (in_reentrant_call()) return;
  if (extent::gdump_take_pending()) prof_gdump();
}

// The pending mark is tested inline (a thread-local byte): under opt.prof every allocation
// slow path passes here, and the call alone cost more than the test. Without opt.prof the
// flag test comes first, so those slow paths count what they did.
JE_ALWAYS_INLINE void gdump_at_safe_point() {
  if (config::kProf && JE_UNLIKELY(prof_enabled()) && JE_UNLIKELY(extent::gdump_pending())) {
    gdump_slow();
  }
}

// The sampled block when this allocation crosses the thread's threshold, else nullptr. Inlined
// into allocate/reallocate so that the unwinder starts there: each frame it walks costs about
// as much as the rest of a sample, and the frames below (the sampling helpers) would only be
// dropped again. The slow paths pay only the flag test when opt.prof is false.
JE_ALWAYS_INLINE bool sample_due(Tsd& tsd, const Request& r) {
  if (!config::kProf || JE_LIKELY(!prof_enabled())) return false;
  // Below the threshold (the common case on the slow paths): no call. An unarmed thread's
  // epoch is kTsdProfUnarmed, which never matches (tsd_fetch), so prof_armed needs no test here.
  if (JE_LIKELY(tsd.allocated + r.usize < tsd.prof_next_sample &&
                tsd.prof_epoch == prof_reset_epoch())) {
    return false;
  }
  return sample_due_slow(tsd, r);
}

JE_ALWAYS_INLINE void* maybe_sample(Tsd& tsd, const Request& r, Arena* arena, Tcache* tc) {
  if (JE_LIKELY(!sample_due(tsd, r))) return nullptr;
  ProfBt bt;
  prof_backtrace_inline(&bt);
  return sample_captured(tsd, r, arena, tc, &bt);
}

void idalloc(Tcache* tc, void* ptr, const EmapEntry& ent) {
  szind_t ind = ent.szind;
  junk_on_free(ptr, sz::index2size(ind));
  if (is_sampled(ent)) {
    dalloc_sampled(tc, ent.edata, ptr);
    return;
  }
  if (tc != nullptr && ind < g_tcache_geo.nhbins) {
    CacheBin& bin = tc->bin(ind);
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
  // A free before the first allocation must see the options too.
  if (!ensure_init()) return;
  if (g_opt.abort) je_abort_msg("%s(): invalid pointer %p", func, ptr);
  if (safety_on()) {
    je_abort_msg(
        "%s(): invalid pointer %p (not a block of this allocator, or inside a large "
        "block)",
        func, ptr);
  }
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

namespace {

// allocate's body; inlined into malloc_slow as well, whose sampled allocations then walk one
// internal frame fewer (see maybe_sample).
JE_ALWAYS_INLINE void* allocate_inline(const Request& r) {
  if (JE_UNLIKELY(!ensure_init())) return nullptr;
  if (JE_UNLIKELY(r.usize == 0 || r.usize > sc::kLargeMaxClass)) return nullptr;
  Tsd& tsd = tsd_fetch();
  bool bad;
  Arena* arena = explicit_arena(r.flags.arena, &bad);
  if (JE_UNLIKELY(bad)) return nullptr;
  Tcache* tc = pick_tcache(tsd, r.flags.tcache);
  if (JE_UNLIKELY(r.flags.tcache >= 2 && tc == nullptr)) return nullptr;
  void* p = maybe_sample(tsd, r, arena, tc);
  if (JE_LIKELY(p == nullptr)) {
    p = ialloc(tsd, r.usize, r.flags.alignment, r.flags.zero, tc, arena,
               large_huge_key(r.usize, r.flags.alignment, r.size));
  }
  if (JE_LIKELY(p != nullptr)) {
    tsd.allocated += r.usize;
    tsd_alloc_event(tsd);
  }
  gdump_at_safe_point();
  return p;
}

}  // namespace

void* allocate(const Request& r) { return allocate_inline(r); }

void* malloc_slow(size_t size) {
  void* p = allocate_inline(Request::of(size, {}));
  if (JE_UNLIKELY(p == nullptr)) errno = ENOMEM;
  return p;
}

void* mallocx_slow(size_t size) { return allocate(Request::of(size, {})); }

size_t batch_allocate(void** ptrs, size_t num, size_t size, int flags) {
  // 5.3.0 fills nothing from inside an extent hook (reentrant call).
  if (in_reentrant_call()) return 0;
  const Request r = Request::of(size, Flags::decode(flags));
  if (r.usize == 0) return 0;
  size_t filled = 0;
  while (filled < num) {
    void* p = allocate(r);
    if (p == nullptr) break;
    ptrs[filled++] = p;
  }
  return filled;
}

namespace {

// free and the sized frees; `sized` says whether `size` (with `alignment`) came with the call.
// Inlined into each caller, so free's slow path pays one flag test for the checks.
JE_ALWAYS_INLINE void deallocate_checked(const char* func, void* ptr, unsigned tcache_flag,
                                         bool sized, size_t size, size_t alignment) {
  EmapEntry ent = g_emap.lookup_entry(ptr);
  if (JE_UNLIKELY(ent.edata == nullptr)) {
    invalid_pointer(func, ptr);
    return;
  }
  Tsd& tsd = tsd_fetch();
  Tcache* tc = pick_tcache(tsd, tcache_flag);
  if (safety_on()) check_free(func, ptr, ent, tsd, tc, sized, size, alignment);
  idalloc(tc, ptr, ent);
  tsd.deallocated += sz::index2size(ent.szind);
  tsd_dalloc_event(tsd);
}

}  // namespace

void deallocate(void* ptr, unsigned tcache_flag) {
  deallocate_checked("free", ptr, tcache_flag, false, 0, 0);
}

void free_slow(void* ptr) {
  if (ptr == nullptr) return;
  deallocate(ptr, kTcacheAuto);
}

void sized_free_slow(void* ptr, size_t size) {
  if (ptr == nullptr) return;
  deallocate_checked("sdallocx", ptr, kTcacheAuto, true, size, 0);
}

void deallocate_sized(void* ptr, size_t size, const Flags& f) {
  if (ptr == nullptr) return;
  deallocate_checked("sdallocx", ptr, f.tcache, true, size, f.alignment);
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
  if (safety_on()) {
    check_free("realloc", ptr, ent, tsd, pick_tcache(tsd, r.flags.tcache), false, 0, 0);
  }
  size_t oldsize = sz::index2size(ent.szind);
  size_t newsize;
  // opt.zero covers the bytes a resize adds, in place or moved (5.3.0's zero_get on rallocx).
  const bool zero = alloc_zeroed(r.flags.zero);
  // Whether the resize is sampled is decided first, as for an allocation (5.3.0 too). A large
  // block, sampled or not, is then resized in place when it can be, like any other (growing a
  // sampled 4 MiB block by a byte at a time otherwise moved it every time: issue 29): the old
  // record, if any, is dropped as at a free, and a due sample is taken on the block where it
  // stays. A small resize that is due moves, so that the sample gets a block of its own; a
  // promoted sampled block (a small class on a large extent) always moves.
  const bool due = sample_due(tsd, r);
  ProfBt bt;
  if (config::kProf && JE_UNLIKELY(due)) prof_backtrace_inline(&bt);
  const bool sampled = is_sampled(ent);
  const bool both_large = oldsize >= sc::kLargeMinClass && usize >= sc::kLargeMinClass;
  if ((!due || both_large) && (!sampled || ent.szind >= sc::kNBins) &&
      arena_ralloc_no_move(ptr, ent, usize, 0, alignment, zero, &newsize)) {
    if (config::kProf && JE_UNLIKELY(due || sampled)) {
      resample_in_place(tsd, r, ent.edata, newsize, due ? &bt : nullptr);
    }
    account_resize(tsd, newsize, oldsize);
    return ptr;
  }
  bool bad;
  Arena* arena = explicit_arena(r.flags.arena, &bad);
  if (JE_UNLIKELY(bad)) return nullptr;
  Tcache* tc = pick_tcache(tsd, r.flags.tcache);
  const size_t huge_key = large_huge_key(usize, alignment, /*request=*/0);
  void* p = config::kProf && JE_UNLIKELY(due) ? sample_captured(tsd, r, arena, tc, &bt) : nullptr;
  if (p != nullptr) {
    // sampled: a block of its own
  } else if (large_ralloc_bypasses_cache(oldsize, usize)) {
    p = large_malloc(
        arena, tsd.arena, [&tsd] { return tsd_arena(tsd); }, usize, alignment, zero, huge_key);
  } else {
    p = ialloc(tsd, usize, alignment, r.flags.zero, tc, arena, huge_key);
  }
  if (JE_UNLIKELY(p == nullptr)) return nullptr;
  std::memcpy(p, ptr, usize < oldsize ? usize : oldsize);
  idalloc(tc, ptr, ent);
  account_resize(tsd, usize, oldsize);
  gdump_at_safe_point();
  return p;
}

size_t resize_in_place(void* ptr, size_t size, size_t extra, const Flags& f) {
  EmapEntry ent = g_emap.lookup_entry(ptr);
  if (JE_UNLIKELY(ent.edata == nullptr)) return 0;
  size_t oldsize = sz::index2size(ent.szind);
  // A sampled large block resizes as any other, as for realloc (see reallocate); a promoted
  // one stays as it is.
  const bool sampled = is_sampled(ent);
  if (sampled && ent.szind < sc::kNBins) return oldsize;
  size_t newsize;
  if (arena_ralloc_no_move(ptr, ent, size, extra, f.alignment, alloc_zeroed(f.zero), &newsize) &&
      newsize != oldsize) {
    Tsd& tsd = tsd_fetch();
    // Sampled at the size it got (5.3.0 decides on the largest it could get, then rechecks).
    const Request r{size, newsize, f};
    const bool due = sample_due(tsd, r);
    ProfBt bt;
    if (config::kProf && JE_UNLIKELY(due)) prof_backtrace_inline(&bt);
    if (config::kProf && JE_UNLIKELY(due || sampled)) {
      resample_in_place(tsd, r, ent.edata, newsize, due ? &bt : nullptr);
    }
    account_resize(tsd, newsize, oldsize);
  }
  return newsize;
}

}  // namespace je::api
