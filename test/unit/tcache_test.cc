// tcache_test.cc: thread caches (src/thread/tcache.h) driven directly on a booted core --
// the geometry tcache_boot derives from the options, set-up and teardown (slot memory counted in
// arena 0's internal bytes), a miss filling half a small bin from the arena (one fill, the
// pending requests merged), a full bin flushing its oldest half, flush statistics (one flush per
// call in the cache's own arena, empty flushes included, whichever arena takes the regions
// back), large bins, incremental GC (3/4 of what stayed unused, the adaptive fill size, the GC
// delay, the round-robin over bins), the merge into the old arena on tcache_set_arena,
// tcache_bytes, and the explicit-cache registry.
//
// Every test uses its own cache bound to a fresh manual arena that never decays, so the arena's
// bin statistics and page counts are exact.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

#include "arena/arena.h"
#include "arena/arenas.h"
#include "arena_fixture.h"
#include "ctl/opt.h"
#include "extent/emap.h"
#include "extent/pac.h"
#include "meta/sc.h"
#include "meta/sz.h"
#include "support/config.h"
#include "thread/core_boot.h"
#include "thread/tcache.h"

namespace je {
namespace {

constexpr szind_t kBin = 2;  // 32-byte regions
constexpr size_t kBinSize = 32;
constexpr szind_t kLargeBin = sc::kNBins;  // the smallest large class (16 KiB)

class TcacheTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // 5.3.0's teardown purge (DestroyReturnsEverythingAndZeroesTheCache): with opt.idle_return
    // a deserted arena's memory goes back by time instead (test/stress/idle_return_test).
    CoreConfig cfg;
    cfg.arena.policy.idle_return = false;
    ASSERT_TRUE(core_boot(cfg));
  }

  void SetUp() override {
    if (!config::kStats) GTEST_SKIP() << "built with --disable-stats";
    arena_ = manual_arena_without_decay();
    ASSERT_NE(arena_, nullptr);
    ASSERT_TRUE(tcache_init(tc_.get(), arena_));
  }
  void TearDown() override { tcache_destroy(tc_.get()); }  // a no-op once torn down

  CacheBin& bin(szind_t i) { return tc_->bin(i); }

  /// n regions of kBin straight from `a`, pushed into the cache (the first is the oldest).
  std::vector<void*> cache_small(unsigned n, Arena* a = nullptr) {
    if (a == nullptr) a = arena_;
    std::vector<void*> v;
    for (unsigned i = 0; i < n; i++) {
      void* p = a->malloc_small(kBin, false);
      EXPECT_NE(p, nullptr);
      EXPECT_TRUE(bin(kBin).push_fast(p)) << i;
      v.push_back(p);
    }
    return v;
  }
  /// n blocks of the smallest large class from the cache's arena, pushed into the cache.
  void cache_large(unsigned n) {
    for (unsigned i = 0; i < n; i++) {
      void* p = arena_->malloc_large(sz::index2size(kLargeBin), kCacheline, false);
      ASSERT_NE(p, nullptr);
      ASSERT_TRUE(bin(kLargeBin).push_fast(p)) << i;
    }
  }
  /// Free a region popped from the cache back to its arena.
  static void free_small(void* p) {
    Edata* slab = g_emap.lookup(p);
    arena_get(slab->arena_ind, false)->dalloc_small(slab, kBin, p);
  }
  size_t curlextents() { return arena_stat<size_t>(arena_->ind(), "lextents.0.curlextents"); }
  uint64_t large_stat(const char* leaf) {
    return arena_stat<uint64_t>(arena_->ind(), std::string("large.") + leaf);
  }

  Arena* arena_ = nullptr;
  std::unique_ptr<Tcache> tc_ = std::make_unique<Tcache>();
};

TEST_F(TcacheTest, GeometryFollowsTheOptions) {
  const TcacheGeometry& g = g_tcache_geo;
  EXPECT_EQ(g.maxclass, g_thread_opt.tcache_max);
  EXPECT_EQ(g.nhbins, sz::size2index(g_thread_opt.tcache_max) + 1);
  size_t slots = 0;
  for (szind_t i = 0; i < g.nhbins; i++) {
    unsigned want = g_thread_opt.tcache_nslots_large;
    if (i < sc::kNBins) {
      // Twice the regions of a slab, made even, within [small_min, small_max].
      want = g_bin_geo[i].nregs << g_thread_opt.lg_tcache_nslots_mul;
      want += want % 2;
      if (want < g_thread_opt.tcache_nslots_small_min) want = g_thread_opt.tcache_nslots_small_min;
      if (want > g_thread_opt.tcache_nslots_small_max) want = g_thread_opt.tcache_nslots_small_max;
    }
    EXPECT_EQ(g.ncached_max[i], want) << "bin " << i;
    slots += g.ncached_max[i];
  }
  EXPECT_EQ(g.stack_bytes, (slots + 2) * sizeof(void*));
}

TEST_F(TcacheTest, InitGivesEmptyBinsBoundToTheArena) {
  for (szind_t i = 0; i < kTcacheMaxBins; i++) {
    EXPECT_EQ(bin(i).ncached(), 0u) << i;
    EXPECT_EQ(bin(i).ncached_max(), i < g_tcache_geo.nhbins ? g_tcache_geo.ncached_max[i] : 0u)
        << i;
  }
  EXPECT_FALSE(bin(g_tcache_geo.nhbins).push_fast(this));  // beyond tcache_max: always full
  EXPECT_EQ(tc_->slow().arena, arena_);
  EXPECT_EQ(tc_->slow().owner, tc_.get());
  EXPECT_EQ(tcache_bytes(arena_), 0u);
}

TEST_F(TcacheTest, SlotMemoryIsInternalToArena0) {
  Arena* a0 = arena_get(0, false);
  ASSERT_NE(a0, nullptr);
  size_t before = a0->internal_bytes();
  auto t = std::make_unique<Tcache>();
  ASSERT_TRUE(tcache_init(t.get(), arena_));
  EXPECT_EQ(a0->internal_bytes() - before, sz::sa2u(g_tcache_geo.stack_bytes, config::kPage));
  EXPECT_EQ(g_emap.lookup(t->slow().stack)->arena_ind, 0u);
  tcache_destroy(t.get());
  EXPECT_EQ(a0->internal_bytes(), before);
  EXPECT_EQ(t->cold, nullptr);
}

TEST_F(TcacheTest, MissFillsHalfTheBinFromTheArena) {
  CacheBin& b = bin(kBin);
  const unsigned nfill = b.ncached_max() >> 1;  // lg_fill_div starts at 1
  b.nrequests = 9;                              // hits since the last merge
  BinStats before = bin_stats(arena_, kBin);
  void* p = tcache_alloc_small_hard(tc_.get(), arena_, kBin);
  ASSERT_NE(p, nullptr);
  BinStats after = bin_stats(arena_, kBin);
  EXPECT_EQ(after.nfills - before.nfills, 1u);
  EXPECT_EQ(after.nmalloc - before.nmalloc, nfill);
  EXPECT_EQ(after.curregs - before.curregs, nfill);
  EXPECT_EQ(after.nrequests - before.nrequests, 9u);
  EXPECT_EQ(b.nrequests, 0u);
  EXPECT_EQ(b.ncached(), nfill - 1);
  EXPECT_TRUE(tc_->slow().bin_refilled[kBin]);
  EXPECT_EQ(tcache_bytes(arena_), (nfill - 1) * kBinSize);
  // The rest pops on the fast path; all distinct regions of this arena's class.
  std::set<void*> seen{p};
  while (b.can_pop_fast()) {
    void* q = b.pop_unchecked();
    EXPECT_TRUE(seen.insert(q).second);
    EXPECT_EQ(g_emap.lookup(q)->arena_ind, arena_->ind());
    EXPECT_EQ(g_emap.lookup_entry(q).szind, kBin);
  }
  EXPECT_EQ(seen.size(), nfill);
  for (void* q : seen) free_small(q);
}

TEST_F(TcacheTest, FullBinFlushesItsOldestHalf) {
  CacheBin& b = bin(kBin);
  const unsigned max = b.ncached_max();
  std::vector<void*> regs = cache_small(max);
  void* extra = arena_->malloc_small(kBin, false);
  ASSERT_NE(extra, nullptr);
  BinStats before = bin_stats(arena_, kBin);
  tcache_dalloc_small_hard(tc_.get(), kBin, extra);
  BinStats after = bin_stats(arena_, kBin);
  const unsigned keep = max >> g_thread_opt.lg_tcache_flush_small_div;
  ASSERT_EQ(b.ncached(), keep + 1);
  EXPECT_EQ(after.ndalloc - before.ndalloc, max - keep);
  EXPECT_EQ(before.curregs - after.curregs, max - keep);
  EXPECT_EQ(after.nflushes - before.nflushes, 1u);
  // The newest stayed, in order: extra on top, then the last ones pushed.
  EXPECT_EQ(b.head[0], extra);
  for (unsigned i = 0; i < keep; i++) EXPECT_EQ(b.head[1 + i], regs[max - 1 - i]) << i;
}

TEST_F(TcacheTest, EachFlushCountsOnceWithThePendingRequests) {
  CacheBin& b = bin(kBin);
  // Nothing cached: the flush still counts, with the requests served since the last one.
  b.nrequests = 4;
  BinStats s0 = bin_stats(arena_, kBin);
  tcache_flush_small(tc_.get(), kBin, 0);
  BinStats s1 = bin_stats(arena_, kBin);
  EXPECT_EQ(s1.nflushes - s0.nflushes, 1u);
  EXPECT_EQ(s1.nrequests - s0.nrequests, 4u);
  EXPECT_EQ(b.nrequests, 0u);
  // More than one batch of regions (the flush works in chunks of 128): still one flush.
  cache_small(150);
  b.nrequests = 3;
  s0 = bin_stats(arena_, kBin);
  tcache_flush_small(tc_.get(), kBin, 10);
  s1 = bin_stats(arena_, kBin);
  EXPECT_EQ(b.ncached(), 10u);
  EXPECT_EQ(s1.ndalloc - s0.ndalloc, 140u);
  EXPECT_EQ(s1.nflushes - s0.nflushes, 1u);
  EXPECT_EQ(s1.nrequests - s0.nrequests, 3u);
}

TEST_F(TcacheTest, RegionsOfAnotherArenaGoBackThereButTheFlushCountsHere) {
  Arena* other = manual_arena_without_decay();
  ASSERT_NE(other, nullptr);
  cache_small(10, other);
  cache_small(6);
  bin(kBin).nrequests = 5;
  BinStats own0 = bin_stats(arena_, kBin), oth0 = bin_stats(other, kBin);
  tcache_flush_small(tc_.get(), kBin, 0);
  BinStats own1 = bin_stats(arena_, kBin), oth1 = bin_stats(other, kBin);
  EXPECT_EQ(oth1.ndalloc - oth0.ndalloc, 10u);
  EXPECT_EQ(oth1.curregs, 0u);
  EXPECT_EQ(oth1.nflushes, oth0.nflushes);
  EXPECT_EQ(oth1.nrequests, oth0.nrequests);
  EXPECT_EQ(own1.ndalloc - own0.ndalloc, 6u);
  EXPECT_EQ(own1.nflushes - own0.nflushes, 1u);
  EXPECT_EQ(own1.nrequests - own0.nrequests, 5u);
  // Only foreign regions: the flush and the requests still land in the cache's own arena.
  cache_small(4, other);
  bin(kBin).nrequests = 2;
  tcache_flush_small(tc_.get(), kBin, 0);
  BinStats own2 = bin_stats(arena_, kBin);
  EXPECT_EQ(own2.nflushes - own1.nflushes, 1u);
  EXPECT_EQ(own2.nrequests - own1.nrequests, 2u);
  EXPECT_EQ(own2.ndalloc, own1.ndalloc);
}

TEST_F(TcacheTest, LargeBinsFlushTheirOldestHalfAndCountFlushes) {
  CacheBin& b = bin(kLargeBin);
  const unsigned max = b.ncached_max();
  cache_large(max);
  EXPECT_EQ(tcache_bytes(arena_), max * sz::index2size(kLargeBin));
  void* extra = arena_->malloc_large(sz::index2size(kLargeBin), kCacheline, false);
  ASSERT_NE(extra, nullptr);
  uint64_t nflushes = large_stat("nflushes");
  tcache_dalloc_large_hard(tc_.get(), kLargeBin, extra);
  const unsigned keep = max >> g_thread_opt.lg_tcache_flush_large_div;
  EXPECT_EQ(b.ncached(), keep + 1);
  EXPECT_EQ(curlextents(), keep + 1);
  EXPECT_EQ(large_stat("nflushes") - nflushes, 1u);
  b.nrequests = 6;
  uint64_t nrequests = large_stat("nrequests");
  tcache_flush_large(tc_.get(), kLargeBin, 0);
  EXPECT_EQ(b.ncached(), 0u);
  EXPECT_EQ(curlextents(), 0u);
  EXPECT_EQ(large_stat("nflushes") - nflushes, 2u);
  EXPECT_EQ(large_stat("nrequests") - nrequests, 6u);
  EXPECT_EQ(arena_pages(arena_->ind()).active, 0u);
}

TEST_F(TcacheTest, GcFlushesThreeQuartersOfWhatStayedUnusedAndFillsLess) {
  CacheBin& b = bin(kBin);
  cache_small(40);
  b.reset_low_water();  // all 40 unused since this "visit"
  tc_->slow().next_gc_bin = kBin;
  BinStats s0 = bin_stats(arena_, kBin);
  tcache_gc_step(tc_.get());
  EXPECT_EQ(b.ncached(), 10u);  // 40 - 40 + 40/4
  EXPECT_EQ(bin_stats(arena_, kBin).ndalloc - s0.ndalloc, 30u);
  EXPECT_EQ(b.nlow_water(), 10u);  // the mark restarts at the current count
  EXPECT_EQ(tc_->slow().lg_fill_div[kBin], 2u);
  EXPECT_EQ(tc_->slow().next_gc_bin, kBin + 1);
  // The next fill is a quarter of the bin.
  while (void* p = b.pop_slow()) free_small(p);
  void* p = tcache_alloc_small_hard(tc_.get(), arena_, kBin);
  ASSERT_NE(p, nullptr);
  free_small(p);
  EXPECT_EQ(b.ncached(), (b.ncached_max() >> 2) - 1);
}

TEST_F(TcacheTest, GcOfAFullyUsedRefilledBinFillsMore) {
  tc_->slow().lg_fill_div[kBin] = 3;
  void* p = tcache_alloc_small_hard(tc_.get(), arena_, kBin);  // empty bin: a refill
  ASSERT_NE(p, nullptr);
  free_small(p);
  ASSERT_EQ(bin(kBin).nlow_water(), 0u);  // it ran dry since the last visit
  tc_->slow().next_gc_bin = kBin;
  unsigned ncached = bin(kBin).ncached();
  tcache_gc_step(tc_.get());
  EXPECT_EQ(bin(kBin).ncached(), ncached);  // nothing flushed
  EXPECT_EQ(tc_->slow().lg_fill_div[kBin], 2u);
  EXPECT_FALSE(tc_->slow().bin_refilled[kBin]);
  // Never below 1 (a fill of half the bin).
  tc_->slow().lg_fill_div[kBin] = 1;
  tc_->slow().bin_refilled[kBin] = true;
  while (void* q = bin(kBin).pop_slow()) free_small(q);
  tc_->slow().next_gc_bin = kBin;
  tcache_gc_step(tc_.get());
  EXPECT_EQ(tc_->slow().lg_fill_div[kBin], 1u);
}

TEST_F(TcacheTest, GcDelayDefersSmallFlushesByItems) {
  CacheBin& b = bin(kBin);
  cache_small(40);
  tc_->slow().flush_delay_items[kBin] = 100;
  // Each visit would flush 30 items: counted against the delay until it is used up.
  for (unsigned left : {70u, 40u, 10u}) {
    b.reset_low_water();
    tc_->slow().next_gc_bin = kBin;
    tcache_gc_step(tc_.get());
    EXPECT_EQ(b.ncached(), 40u);
    EXPECT_EQ(tc_->slow().flush_delay_items[kBin], left);
  }
  b.reset_low_water();
  tc_->slow().next_gc_bin = kBin;
  tcache_gc_step(tc_.get());
  EXPECT_EQ(b.ncached(), 10u);
  // The delay restarts from the option (tcache_gc_delay_bytes, in items of the class).
  EXPECT_EQ(tc_->slow().flush_delay_items[kBin], g_thread_opt.tcache_gc_delay_bytes / kBinSize);
}

TEST_F(TcacheTest, GcVisitsOneBinPerStepRoundRobin) {
  tc_->slow().next_gc_bin = g_tcache_geo.nhbins - 1;
  tcache_gc_step(tc_.get());
  EXPECT_EQ(tc_->slow().next_gc_bin, 0u);
  for (unsigned i = 1; i <= 3; i++) {
    tcache_gc_step(tc_.get());
    EXPECT_EQ(tc_->slow().next_gc_bin, i);
  }
}

TEST_F(TcacheTest, SetArenaMergesPendingRequestsIntoTheOldArena) {
  Arena* other = manual_arena_without_decay();
  ASSERT_NE(other, nullptr);
  bin(kBin).nrequests = 7;
  bin(kLargeBin).nrequests = 3;
  BinStats s0 = bin_stats(arena_, kBin);
  uint64_t lreq = large_stat("nrequests"), lflush = large_stat("nflushes");
  tcache_set_arena(tc_.get(), other);
  BinStats s1 = bin_stats(arena_, kBin);
  EXPECT_EQ(s1.nrequests - s0.nrequests, 7u);
  EXPECT_EQ(s1.nflushes, s0.nflushes);  // small classes: requests only
  EXPECT_EQ(large_stat("nrequests") - lreq, 3u);
  // Large classes: one flush each, as 5.3.0 counts a merge.
  EXPECT_EQ(large_stat("nflushes") - lflush, g_tcache_geo.nhbins - sc::kNBins);
  EXPECT_EQ(bin(kBin).nrequests, 0u);
  EXPECT_EQ(tc_->slow().arena, other);
  // What is cached from now on counts for the new arena.
  cache_small(3);
  EXPECT_EQ(tcache_bytes(other), 3 * kBinSize);
  EXPECT_EQ(tcache_bytes(arena_), 0u);
}

TEST_F(TcacheTest, DestroyReturnsEverythingAndZeroesTheCache) {
  BinStats s0 = bin_stats(arena_, kBin);
  cache_small(25);
  cache_large(4);
  EXPECT_EQ(tcache_bytes(arena_), 25 * kBinSize + 4 * sz::index2size(kLargeBin));
  tcache_destroy(tc_.get());
  EXPECT_EQ(bin_stats(arena_, kBin).curregs, s0.curregs);
  EXPECT_EQ(curlextents(), 0u);
  EXPECT_EQ(tcache_bytes(arena_), 0u);
  EXPECT_EQ(tc_->cold, nullptr);  // the large bins and the cold state went with the block
  for (szind_t i = 0; i < sc::kNBins; i++) EXPECT_EQ(bin(i).ncached_max(), 0u) << i;
  // The arena has no thread, so the teardown's decay pass purged it entirely.
  ArenaPages pg = arena_pages(arena_->ind());
  EXPECT_EQ(pg.active, 0u);
  EXPECT_EQ(pg.dirty, 0u);
  tcache_destroy(tc_.get());  // a second teardown does nothing
}

TEST_F(TcacheTest, ExplicitCachesReuseTheLastDestroyedIndex) {
  unsigned i1 = 0, i2 = 0, i3 = 0;
  ASSERT_TRUE(tcaches_create(arena_, &i1));
  ASSERT_TRUE(tcaches_create(arena_, &i2));
  EXPECT_NE(i1, i2);
  Tcache* t1 = tcaches_get(i1);
  ASSERT_NE(t1, nullptr);
  EXPECT_EQ(t1->slow().arena, arena_);
  EXPECT_EQ(t1->bins[kBin].ncached_max(), g_tcache_geo.ncached_max[kBin]);
  // Flushing empties the cache and keeps it usable.
  void* p = tcache_alloc_small_hard(t1, arena_, kBin);
  ASSERT_NE(p, nullptr);
  EXPECT_GT(t1->bins[kBin].ncached(), 0u);
  EXPECT_TRUE(tcaches_flush(i1));
  EXPECT_EQ(t1->bins[kBin].ncached(), 0u);
  EXPECT_EQ(tcaches_get(i1), t1);
  free_small(p);
  // Destroy: the index is free and comes back first.
  EXPECT_TRUE(tcaches_destroy(i1));
  EXPECT_EQ(tcaches_get(i1), nullptr);
  EXPECT_FALSE(tcaches_destroy(i1));
  EXPECT_FALSE(tcaches_flush(i1));
  ASSERT_TRUE(tcaches_create(arena_, &i3));
  EXPECT_EQ(i3, i1);
  EXPECT_EQ(tcaches_get(kTcachesMax), nullptr);
  EXPECT_FALSE(tcaches_destroy(kTcachesMax));
  EXPECT_TRUE(tcaches_destroy(i2));
  EXPECT_TRUE(tcaches_destroy(i3));
}

// ---- growth (ours, opt.tcache_grow_bytes) ------------------------------------------------------

// The cache has seen every page growth so far (bins grow only in a cache that has not seen
// one since it last looked).
void settle(Tcache* t) {
  if (t->slow().grow != nullptr) t->slow().grow->seen_growths = g_pac_growths.load();
}

// Fills large bin kLargeBin through the free path (tcache_dalloc_large_hard when full) with
// `n` fresh blocks of the cache's arena, allocated before the first is freed.
void free_large_into(Tcache* t, Arena* a, unsigned n) {
  std::vector<void*> v;
  for (unsigned i = 0; i < n; i++) {
    void* p = a->malloc_large(sz::index2size(kLargeBin), kCacheline, false);
    ASSERT_NE(p, nullptr);
    v.push_back(p);
  }
  settle(t);
  for (void* p : v) {
    if (!t->bin(kLargeBin).push_fast(p)) tcache_dalloc_large_hard(t, kLargeBin, p);
  }
}

TEST_F(TcacheTest, AFullBinThatRanDryGrowsWithinItsLimitInsteadOfFlushing) {
  CacheBin& b = bin(kLargeBin);
  const unsigned base = g_tcache_geo.ncached_max[kLargeBin];
  const unsigned gmax = g_tcache_geo.grow_max[kLargeBin];
  ASSERT_GT(gmax, 2 * base) << "the default budget lets the 16 KiB bin grow";
  ASSERT_NE(tc_->slow().grow, nullptr);
  // Full without having run dry: 5.3.0's flush of the oldest half.
  free_large_into(tc_.get(), arena_, base + 1);
  EXPECT_EQ(b.ncached_max(), base);
  EXPECT_EQ(b.ncached(), base / 2 + 1);
  tcache_flush_large(tc_.get(), kLargeBin, 0);
  // A request missed the bin: the next overflow doubles the capacity, nothing is flushed.
  tcache_large_miss(tc_.get(), kLargeBin);
  uint64_t nflushes = large_stat("nflushes");
  free_large_into(tc_.get(), arena_, base + 1);
  EXPECT_EQ(b.ncached_max(), 2 * base);
  EXPECT_EQ(b.ncached(), base + 1);
  // The block beyond 5.3.0's capacity counts as 5.3.0's flush would have left it: not
  // allocated (doc/compat.md#tcache-grow); tcache_bytes still has it.
  EXPECT_EQ(curlextents(), base);
  EXPECT_EQ(tcache_bytes(arena_), (base + 1) * sz::index2size(kLargeBin));
  EXPECT_EQ(large_stat("nflushes"), nflushes);
  EXPECT_EQ(tc_->slow().grow->grown_bytes, base * sz::index2size(kLargeBin));
  // ...and again up to the limit; past it, a full bin flushes its oldest half again.
  free_large_into(tc_.get(), arena_, gmax - (base + 1));
  EXPECT_EQ(b.ncached_max(), gmax);
  EXPECT_EQ(b.ncached(), gmax);
  EXPECT_EQ(large_stat("nflushes"), nflushes);
  EXPECT_LE(tc_->slow().grow->grown_bytes, g_tcache_geo.grow_bytes);
  EXPECT_EQ(tcache_bytes(arena_), gmax * sz::index2size(kLargeBin));
  EXPECT_EQ(curlextents(), base);
  free_large_into(tc_.get(), arena_, 1);
  EXPECT_EQ(b.ncached(), gmax / 2 + 1);
  EXPECT_EQ(large_stat("nflushes") - nflushes, 1u);
  // Everything pops back, newest first, and a flush of all restores 5.3.0's capacity.
  tcache_flush_all(tc_.get());
  EXPECT_EQ(b.ncached_max(), base);
  EXPECT_EQ(tc_->slow().grow->grown_bytes, 0u);
  EXPECT_EQ(curlextents(), 0u);
}

TEST_F(TcacheTest, AGrownSmallBinKeepsItsItemsAndLowWaterWhenItMoves) {
  CacheBin& b = bin(kBin);
  const unsigned base = b.ncached_max();
  void* p = tcache_alloc_small_hard(tc_.get(), arena_, kBin);  // empty: a miss, a fill
  ASSERT_NE(p, nullptr);
  free_small(p);
  tcache_flush_small(tc_.get(), kBin, 0);
  std::vector<void*> regs = cache_small(base);
  b.reset_low_water();
  void* extra = arena_->malloc_small(kBin, false);
  ASSERT_NE(extra, nullptr);
  settle(tc_.get());
  tcache_dalloc_small_hard(tc_.get(), kBin, extra);
  EXPECT_EQ(b.ncached_max(), 2 * base);
  ASSERT_EQ(b.ncached(), base + 1);
  EXPECT_EQ(b.nlow_water(), base);
  EXPECT_EQ(b.head[0], extra);
  for (unsigned i = 0; i < base; i++) EXPECT_EQ(b.head[1 + i], regs[base - 1 - i]) << i;
  for (unsigned i = 0; i <= base; i++) EXPECT_NE(b.pop_slow(), nullptr) << i;
  EXPECT_EQ(b.pop_slow(), nullptr);
  free_small(extra);
  for (void* r : regs) free_small(r);
}

TEST_F(TcacheTest, GcShrinksAGrownBinOnlyAfterItStayedUnusedForSeveralVisits) {
  CacheBin& b = bin(kLargeBin);
  const unsigned base = g_tcache_geo.ncached_max[kLargeBin];
  tcache_large_miss(tc_.get(), kLargeBin);
  free_large_into(tc_.get(), arena_, 4 * base);  // grows to 4 x base, full
  ASSERT_EQ(b.ncached_max(), 4 * base);
  auto visit = [&] {
    tc_->slow().next_gc_bin = kLargeBin;
    tcache_gc_step(tc_.get());
  };
  b.reset_low_water();
  // Seven idle visits, then one that finds the bin drained: nothing flushed, the count restarts.
  for (int i = 0; i < 7; i++) visit();
  EXPECT_EQ(b.ncached(), 4 * base);
  while (b.pop_slow() != nullptr) {
  }
  free_large_into(tc_.get(), arena_, 4 * base);
  visit();  // low water 0 since the last visit
  b.reset_low_water();
  for (int i = 0; i < 8; i++) visit();
  EXPECT_EQ(b.ncached(), 4 * base);
  EXPECT_EQ(b.ncached_max(), 4 * base);
  // The ninth idle visit in a row halves the capacity, flushing the oldest that no longer fit.
  visit();
  EXPECT_EQ(b.ncached_max(), 2 * base);
  EXPECT_EQ(b.ncached(), 2 * base);
  visit();
  EXPECT_EQ(b.ncached_max(), base);
  EXPECT_EQ(tc_->slow().grow->grown_bytes, 0u);
  // Back at 5.3.0's capacity, 5.3.0's rule: 3/4 of what stayed unused goes.
  visit();
  EXPECT_EQ(b.ncached(), base / 4);
}

TEST_F(TcacheTest, GrownBinsGoBackWhenPagesAreFaultedIn) {
  CacheBin& b = bin(kLargeBin);
  const unsigned base = g_tcache_geo.ncached_max[kLargeBin];
  tcache_large_miss(tc_.get(), kLargeBin);
  free_large_into(tc_.get(), arena_, 4 * base);
  ASSERT_EQ(b.ncached_max(), 4 * base);
  // No growth since: a GC step of another bin leaves it alone.
  tc_->slow().next_gc_bin = kBin;
  tcache_gc_step(tc_.get());
  EXPECT_EQ(b.ncached(), 4 * base);
  // An arena takes new pages (here a fresh arena's first block): the next GC step returns
  // what the cache holds beyond 5.3.0's capacities...
  Arena* other = manual_arena_without_decay();
  ASSERT_NE(other, nullptr);
  void* big = other->malloc_large(size_t{1} << 20, kCacheline, false);
  ASSERT_NE(big, nullptr);
  tc_->slow().next_gc_bin = kBin;
  tcache_gc_step(tc_.get());
  EXPECT_EQ(b.ncached_max(), base);
  EXPECT_EQ(b.ncached(), base);
  EXPECT_EQ(curlextents(), base);
  EXPECT_EQ(tc_->slow().grow->grown_bytes, 0u);
  // ...and a bin that overflows right after a growth it has not seen does not grow.
  tcache_large_miss(tc_.get(), kLargeBin);
  other->dalloc_large(g_emap.lookup(big));
  void* big2 = other->malloc_large(size_t{4} << 20, kCacheline, false);
  ASSERT_NE(big2, nullptr);
  void* extra = arena_->malloc_large(sz::index2size(kLargeBin), kCacheline, false);
  ASSERT_NE(extra, nullptr);
  tcache_dalloc_large_hard(tc_.get(), kLargeBin, extra);
  EXPECT_EQ(b.ncached_max(), base);
  EXPECT_EQ(b.ncached(), base / 2 + 1);
  other->dalloc_large(g_emap.lookup(big2));
}

TEST_F(TcacheTest, ExplicitCachesDoNotGrow) {
  unsigned ind = 0;
  ASSERT_TRUE(tcaches_create(arena_, &ind));
  Tcache* t = tcaches_get(ind);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->slow().grow, nullptr);
  const unsigned base = g_tcache_geo.ncached_max[kLargeBin];
  tcache_large_miss(t, kLargeBin);
  free_large_into(t, arena_, base + 1);
  EXPECT_EQ(t->bin(kLargeBin).ncached_max(), base);
  EXPECT_EQ(t->bin(kLargeBin).ncached(), base / 2 + 1);
  EXPECT_TRUE(tcaches_destroy(ind));
}

}  // namespace
}  // namespace je
