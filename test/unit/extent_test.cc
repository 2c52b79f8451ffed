// extent_test: the page allocator end to end on real memory -- split/merge bookkeeping, the
// head barrier, the three coalescing regimes, the coalescing bound, growth.
#include <sys/mman.h>

#include <cstring>

#include "pac_fixture.h"

namespace je {
namespace {

PacOptions defaults() {
  PacOptions o;
  o.dirty_decay_ms = -1;  // tests drive purging explicitly
  o.muzzy_decay_ms = -1;
  o.placement.extent_cache_bytes = 0;  // every free reaches the ecache
  return o;
}

Edata* alloc(Pac* pac, size_t size) {
  Edata* e = pac->alloc(size, kPg, false);
  EXPECT_NE(e, nullptr);
  return e;
}

TEST(Extent, CoalesceBoundSaturates) {
  // The eset's reach for the request's own extent size, in this build's layout: with the pad,
  // a 16 KiB block's 20 KiB extent merges up to 1.25 MiB (the last class whose bin the search
  // reaches); without it (--disable-cache-oblivious) up to the last page of the 1.25 MiB bin.
  constexpr bool kPad = config::kCacheOblivious;
  EXPECT_EQ(PacCore::coalesce_bound(20 * kKiB, 6), kPad ? 1280 * kKiB : 1536 * kKiB - kPg);
  EXPECT_EQ(PacCore::coalesce_bound(20 * kKiB, 0), 20 * kKiB);
  EXPECT_EQ(PacCore::coalesce_bound(sc::kLargeMaxClass, 6), sc::kLargeMaxClass);
  EXPECT_EQ(PacCore::coalesce_bound(size_t{1} << 58, 6), sc::kLargeMaxClass);
  EXPECT_EQ(PacCore::coalesce_bound(size_t{1} << 50, 6),
            kPad ? size_t{1} << 56 : (size_t{5} << 54) - kPg);
  EXPECT_EQ(PacCore::coalesce_bound(4096, 63), sc::kLargeMaxClass);
  EXPECT_EQ(PacCore::coalesce_bound(4096, 64), sc::kLargeMaxClass);
}

TEST(Extent, GrowthCarvesAdjacentExtentsOldestFirst) {
  Pac* pac = make_pac(defaults());
  Edata* a = alloc(pac, 20 * kKiB);
  Edata* b = alloc(pac, 20 * kKiB);
  Edata* c = alloc(pac, 8 * kKiB);
  EXPECT_EQ(a->past_addr(), b->base_addr());
  EXPECT_EQ(b->past_addr(), c->base_addr());
  EXPECT_TRUE(a->is_head);  // start of the 2 MiB growth region
  EXPECT_FALSE(b->is_head);
  EXPECT_EQ(a->sn, b->sn);  // split pieces inherit the region's serial number
  // The rest of the 2 MiB region is retained, not mapped-and-active.
  EXPECT_EQ(pac->nretained() * kPg, 2048 * kKiB - 48 * kKiB);
  EXPECT_EQ(pac->nactive() * kPg, 48 * kKiB);
  EXPECT_EQ(pac->mapped(), 48 * kKiB);
  EXPECT_EQ(g_emap.lookup(a->base()), a);
  EXPECT_EQ(g_emap.lookup(ptr_of(a->last_page_addr())), a);
  EXPECT_EQ(state_at(b->base()), ExtentState::kActive);
  // memory is usable and zero
  EXPECT_EQ(static_cast<char*>(c->base())[100], 0);
  std::memset(a->base(), 0xab, a->size);
}

TEST(Extent, GrowthSeriesGetsLarger) {
  Pac* pac = make_pac(defaults());
  pszind_t first = PacTestAccess::grow_next(pac);
  alloc(pac, 4 * kKiB);
  EXPECT_EQ(PacTestAccess::grow_next(pac), first + 1);
  Edata* big = alloc(pac, 5 * 1024 * kKiB);  // skips ahead to a class >= 5 MiB
  EXPECT_GE(sz::pind2sz(PacTestAccess::grow_next(pac) - 1), 5 * 1024 * kKiB);
  EXPECT_TRUE(big->is_head);
}

TEST(Extent, SplitAndMergeKeepTheMapConsistent) {
  Pac* pac = make_pac(defaults());
  Edata* e = alloc(pac, 64 * kKiB);
  Edata* t = core(pac).split_wrapper(e, 16 * kKiB, 48 * kKiB);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(e->size, 16 * kKiB);
  EXPECT_EQ(t->base_addr(), e->past_addr());
  EXPECT_EQ(g_emap.lookup(ptr_of(e->last_page_addr())), e);
  EXPECT_EQ(g_emap.lookup(t->base()), t);
  EXPECT_EQ(g_emap.lookup(ptr_of(t->last_page_addr())), t);
  ASSERT_TRUE(core(pac).merge_wrapper(e, t));
  EXPECT_EQ(e->size, 64 * kKiB);
  EXPECT_EQ(g_emap.lookup(ptr_of(e->last_page_addr())), e);
  // pages that became interior no longer map to anything
  EXPECT_EQ(g_emap.lookup(ptr_of(e->base_addr() + 16 * kKiB)), nullptr);
  EXPECT_EQ(g_emap.lookup(ptr_of(e->base_addr() + 12 * kKiB)), nullptr);
}

TEST(Extent, ShrinkAndExpandInPlace) {
  Pac* pac = make_pac(defaults());
  Edata* e = alloc(pac, 64 * kKiB);
  alloc(pac, 20 * kKiB);  // a neighbour after the 64 KiB keeps the tail from the retained rest
  ASSERT_TRUE(pac->shrink(e, 64 * kKiB, 16 * kKiB));
  EXPECT_EQ(sorted(ecache_sizes(dirty_ecache(pac))), std::vector<size_t>{48 * kKiB});
  ASSERT_TRUE(pac->expand(e, 16 * kKiB, 40 * kKiB, true));
  EXPECT_EQ(e->size, 40 * kKiB);
  EXPECT_EQ(sorted(ecache_sizes(dirty_ecache(pac))), std::vector<size_t>{24 * kKiB});
  ASSERT_TRUE(pac->expand(e, 40 * kKiB, 64 * kKiB, false));
  EXPECT_TRUE(ecache_sizes(dirty_ecache(pac)).empty());
  EXPECT_FALSE(pac->expand(e, 64 * kKiB, 68 * kKiB, false));  // the neighbour is active
}

TEST(Extent, SmallDirtyExtentsAreNotCoalescedUntilEvicted) {
  Pac* pac = make_pac(defaults());
  Edata* a = alloc(pac, 4 * kKiB);
  Edata* b = alloc(pac, 4 * kKiB);
  Edata* c = alloc(pac, 8 * kKiB);
  alloc(pac, 4 * kKiB);  // fence
  pac->dalloc(a);
  pac->dalloc(b);
  pac->dalloc(c);
  EXPECT_EQ(sorted(ecache_sizes(dirty_ecache(pac))),
            (std::vector<size_t>{4 * kKiB, 4 * kKiB, 8 * kKiB}));
  // Eviction coalesces the LRU extent without bound before handing it out.
  Edata* v = core(pac).evict(ExtentState::kDirty, 0);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->size, 16 * kKiB);
  EXPECT_EQ(pac->counter(PacCounter::evict_merges), 2u);
  EXPECT_EQ(state_at(v->base()), ExtentState::kActive);
  EXPECT_TRUE(ecache_sizes(dirty_ecache(pac)).empty());
}

TEST(Extent, LargeDirtyExtentsCoalesceEagerlyBothSides) {
  Pac* pac = make_pac(defaults());
  Edata* a = alloc(pac, 20 * kKiB);
  Edata* b = alloc(pac, 20 * kKiB);
  Edata* c = alloc(pac, 20 * kKiB);
  Edata* s = alloc(pac, 4 * kKiB);  // a small (delayed) dirty neighbour
  alloc(pac, 4 * kKiB);             // fence
  pac->dalloc(s);
  pac->dalloc(a);
  pac->dalloc(c);  // absorbs the small extent after it
  EXPECT_EQ(sorted(ecache_sizes(dirty_ecache(pac))), (std::vector<size_t>{20 * kKiB, 24 * kKiB}));
  pac->dalloc(b);  // merges forward and backward
  EXPECT_EQ(ecache_sizes(dirty_ecache(pac)), std::vector<size_t>{64 * kKiB});
  EXPECT_EQ(pac->counter(PacCounter::dirty_merges), 3u);
  EXPECT_EQ(pac->counter(PacCounter::dirty_merges_refused), 0u);
}

TEST(Extent, BoundLimitsEagerCoalescing) {
  PacOptions o = defaults();
  o.lg_max_fit = 1;  // bound = 2 x the freed extent
  Pac* pac = make_pac(o);
  Edata* a = alloc(pac, 20 * kKiB);
  Edata* b = alloc(pac, 20 * kKiB);
  Edata* c = alloc(pac, 20 * kKiB);
  alloc(pac, 4 * kKiB);  // fence
  void* a_base = a->base();
  pac->dalloc(a);
  pac->dalloc(c);
  pac->dalloc(b);  // forward merge with c fills the budget (40 KiB); a is refused, released
  EXPECT_EQ(sorted(ecache_sizes(dirty_ecache(pac))), (std::vector<size_t>{20 * kKiB, 40 * kKiB}));
  EXPECT_EQ(pac->counter(PacCounter::dirty_merges_refused), 1u);
  EXPECT_EQ(state_at(a_base), ExtentState::kDirty);  // released, not stuck "merging"
  // A refused neighbour stays mergeable: eviction (unbounded) merges it.
  Edata* v = core(pac).evict(ExtentState::kDirty, 0);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->size, 60 * kKiB);
}

TEST(Extent, BoundBackwardAndShrinkingBudget) {
  PacOptions o = defaults();
  o.lg_max_fit = 2;  // bound = 4 x 20 KiB = 80 KiB
  Pac* pac = make_pac(o);
  Edata* e[6];
  for (auto& x : e) x = alloc(pac, 20 * kKiB);
  alloc(pac, 4 * kKiB);  // fence
  for (int i = 0; i < 5; i++) pac->dalloc(e[i]);
  // Frees walk upward: each new extent merges backward while the budget allows.
  // e0+e1 (40), +e2 (60), +e3 (80 = bound); e4 finds room 0 for the 80 KiB extent.
  EXPECT_EQ(sorted(ecache_sizes(dirty_ecache(pac))), (std::vector<size_t>{20 * kKiB, 80 * kKiB}));
  pac->dalloc(e[5]);  // 20 KiB: backward neighbour e4 (20) fits, then 80 KiB does not
  EXPECT_EQ(sorted(ecache_sizes(dirty_ecache(pac))), (std::vector<size_t>{40 * kKiB, 80 * kKiB}));
  EXPECT_EQ(pac->counter(PacCounter::dirty_merges_refused), 2u);
}

TEST(Extent, UnboundedModeReproducesStockBehaviour) {
  PacOptions o = defaults();
  o.lg_max_fit = 1;
  o.placement.bounded_coalesce = false;
  o.placement.reuse_before_grow = false;
  Pac* pac = make_pac(o);
  Edata* e[6];
  for (auto& x : e) x = alloc(pac, 20 * kKiB);
  alloc(pac, 4 * kKiB);
  for (auto* x : e) pac->dalloc(x);
  EXPECT_EQ(ecache_sizes(dirty_ecache(pac)), std::vector<size_t>{120 * kKiB});
  // ...and that extent is now too big to be reused for the 20 KiB requests (lg fit 1).
  uint64_t from_dirty = pac->counter(PacCounter::dirty_allocs);
  alloc(pac, 20 * kKiB);
  EXPECT_EQ(pac->counter(PacCounter::dirty_allocs), from_dirty);
}

TEST(Extent, ReuseBeforeGrowSplitsAnOversizedDirtyExtent) {
  // Ours (opt.reuse_before_grow): the same 120 KiB dirty extent, too big for a 20 KiB request
  // under lg fit 1, is split for it anyway rather than taking retained pages; a request that
  // fits within the ratio still takes the normal path, and one larger than any dirty extent
  // still grows.
  PacOptions o = defaults();
  o.lg_max_fit = 1;
  o.placement.bounded_coalesce = false;
  ASSERT_TRUE(o.placement.reuse_before_grow);  // the default
  Pac* pac = make_pac(o);
  Edata* e[6];
  for (auto& x : e) x = alloc(pac, 20 * kKiB);
  alloc(pac, 4 * kKiB);
  uintptr_t lo = e[0]->base_addr();
  for (auto* x : e) pac->dalloc(x);
  ASSERT_EQ(ecache_sizes(dirty_ecache(pac)), std::vector<size_t>{120 * kKiB});
  auto grown_pages = [&] {
    return pac->counter(PacCounter::retained_alloc_pages) +
           pac->counter(PacCounter::fresh_alloc_pages);
  };
  size_t grown = grown_pages();
  Edata* a = alloc(pac, 20 * kKiB);
  EXPECT_EQ(a->base_addr(), lo);  // the oldest, lowest piece of the dirty extent
  EXPECT_EQ(grown_pages(), grown);
  EXPECT_EQ(sorted(ecache_sizes(dirty_ecache(pac))), std::vector<size_t>{100 * kKiB});
  Edata* b = alloc(pac, 200 * kKiB);  // nothing dirty is big enough: grows
  EXPECT_EQ(grown_pages(), grown + 200 * kKiB / kPg);
  EXPECT_EQ(sorted(ecache_sizes(dirty_ecache(pac))), std::vector<size_t>{100 * kKiB});
  pac->dalloc(a);
  pac->dalloc(b);
}

TEST(Extent, RefusedNeighbourIsReleasedWithFitZero) {
  // After jemalloc 675ab079: allocate 64 KiB, shrink it to 16 KiB (48 KiB dirty tail), free the
  // head with lg_extent_max_active_fit 0: the tail must stay dirty and reusable.
  PacOptions o = defaults();
  o.lg_max_fit = 0;
  Pac* pac = make_pac(o);
  Edata* e = alloc(pac, 64 * kKiB);
  alloc(pac, 4 * kKiB);  // fence
  void* tail = ptr_of(e->base_addr() + 16 * kKiB);
  ASSERT_TRUE(pac->shrink(e, 64 * kKiB, 16 * kKiB));
  pac->dalloc(e);
  EXPECT_EQ(state_at(tail), ExtentState::kDirty);
  EXPECT_EQ(sorted(ecache_sizes(dirty_ecache(pac))), (std::vector<size_t>{16 * kKiB, 48 * kKiB}));
  // Still mergeable: eviction (no bound) joins head and tail again.
  Edata* v = core(pac).evict(ExtentState::kDirty, 0);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->size, 64 * kKiB);
}

TEST(Extent, RetainedCoalescesFullyAfterPurge) {
  Pac* pac = make_pac(defaults());
  Edata* e[8];
  for (auto& x : e) x = alloc(pac, 8 * kKiB);  // small: delayed in dirty
  Edata* fence = alloc(pac, 4 * kKiB);
  for (auto* x : e) pac->dalloc(x);
  EXPECT_EQ(ecache_sizes(dirty_ecache(pac)).size(), 8u);
  size_t retained_before = ecache_sizes(PacTestAccess::ecache(pac, ExtentState::kRetained)).size();
  pac->decay_all(ExtentState::kDirty, true);
  EXPECT_TRUE(ecache_sizes(dirty_ecache(pac)).empty());
  // the 64 KiB run merges into one retained extent (eviction merged it already, one madvise)
  EXPECT_EQ(pac->counter(PacCounter::dirty_nmadvise), 1u);
  EXPECT_EQ(pac->counter(PacCounter::dirty_purged), 16u);
  EXPECT_EQ(ecache_sizes(PacTestAccess::ecache(pac, ExtentState::kRetained)).size(),
            retained_before + 1);
  // Freeing the fence joins both retained neighbours once purged: retained is fully coalesced.
  pac->dalloc(fence);
  pac->decay_all(ExtentState::kDirty, true);
  EXPECT_EQ(ecache_sizes(PacTestAccess::ecache(pac, ExtentState::kRetained)).size(), 1u);
  EXPECT_EQ(pac->nretained() * kPg, 2048 * kKiB);
  EXPECT_EQ(pac->mapped(), 0u);
}

// prof_gdump's high-water mark: pages out of retained (or freshly mapped) count up, pages
// purged back to retained count down, and a new maximum marks the thread only while the
// switch is on. (The counters are process-wide: the test works with differences.)
TEST(Extent, GdumpHighWaterMarkFollowsMappedPages) {
  extent::gdump_boot(false);
  extent::gdump_take_pending();
  Pac* pac = make_pac(defaults());
  size_t cur0, high0;
  extent::gdump_pages(&cur0, &high0);
  Edata* a = alloc(pac, 64 * kKiB);
  size_t cur1, high1;
  extent::gdump_pages(&cur1, &high1);
  EXPECT_EQ(cur1 - cur0, 64 * kKiB / kPg);
  EXPECT_GE(high1, cur1);
  EXPECT_FALSE(extent::gdump_take_pending());  // switch off: a new maximum marks nothing
  pac->dalloc(a);
  pac->decay_all(ExtentState::kDirty, true);  // purged to retained: counted down
  size_t cur2, high2;
  extent::gdump_pages(&cur2, &high2);
  EXPECT_EQ(cur2, cur0);
  EXPECT_EQ(high2, high1);
  extent::gdump_switch(true);
  Edata* b = alloc(pac, 32 * kKiB);  // below the maximum: no mark
  EXPECT_FALSE(extent::gdump_take_pending());
  Edata* c = alloc(pac, (high1 - cur2) * kPg);  // now beyond it
  EXPECT_TRUE(extent::gdump_take_pending());
  EXPECT_FALSE(extent::gdump_take_pending());  // taking clears the mark
  extent::gdump_switch(false);
  pac->dalloc(b);
  pac->dalloc(c);
}

TEST(Extent, HeadBarrierSeparatesGrowthRegions) {
  // Hooks that hand out consecutive slices of one reservation, so two growth regions are
  // address-adjacent; they must never merge, in any regime.
  static char* reservation;
  static size_t used;
  static size_t cap;
  cap = 16 * 1024 * kKiB;
  reservation = static_cast<char*>(mmap(nullptr, cap, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  ASSERT_NE(reservation, MAP_FAILED);
  used = 0;
  static extent_hooks_t hooks = kDefaultExtentHooks;
  hooks.alloc = [](extent_hooks_t*, void* new_addr, size_t size, size_t, bool* zero, bool* commit,
                   unsigned) -> void* {
    if (new_addr != nullptr || used + size > cap) return nullptr;
    void* p = reservation + used;
    used += size;
    *zero = true;
    *commit = true;
    return p;
  };
  hooks.dalloc = nullptr;
  PacOptions o = defaults();
  o.hooks = &hooks;
  Pac* pac = make_pac(o);
  Edata* first = alloc(pac, 2048 * kKiB - 20 * kKiB);
  Edata* last = alloc(pac, 20 * kKiB);    // end of region 1
  Edata* next = alloc(pac, 2560 * kKiB);  // region 2, right after
  EXPECT_EQ(last->past_addr(), next->base_addr());
  EXPECT_TRUE(next->is_head);
  pac->dalloc(last);
  pac->dalloc(next);  // forward/backward across the head boundary: refused
  EXPECT_EQ(sorted(ecache_sizes(dirty_ecache(pac))), (std::vector<size_t>{20 * kKiB, 2560 * kKiB}));
  pac->decay_all(ExtentState::kDirty, true);  // eviction and retained coalescing respect it too
  pac->dalloc(first);
  pac->decay_all(ExtentState::kDirty, true);
  EXPECT_EQ(sorted(ecache_sizes(PacTestAccess::ecache(pac, ExtentState::kRetained))),
            (std::vector<size_t>{2048 * kKiB, 2560 * kKiB}));
  // The reservation stays mapped: the emap still describes it for the rest of the process.
}

}  // namespace
}  // namespace je
