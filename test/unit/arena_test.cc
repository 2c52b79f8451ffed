// arena_test.cc: one arena (src/arena/arena.h) driven through its public functions -- small
// regions through the bins (fresh slabs, a full slab opening another, an emptied slab going back
// to the page allocator dirty, region reuse and zeroing, fill/batch-free statistics), large
// allocations (one extent with the pad page, the cache-oblivious offset, alignment, zeroing of
// reused dirty pages), in-place resizing with ralloc_large_no_move (expand, shrink, a size
// already in range, the largest size that fits, a neighbour in the way), reset and destroy of a
// manual arena, and decay (explicit steps, purge-all, and the allocation tick).
//
// Every test makes its own manual arena; most never decay on their own (decay -1), so page
// counts are exact. Page counts and large-class counters come from the stats snapshot.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "arena/arena.h"
#include "arena/arenas.h"
#include "arena/bin_info.h"
#include "arena_fixture.h"
#include "extent/emap.h"
#include "meta/sc.h"
#include "meta/sz.h"
#include "support/config.h"
#include "thread/core_boot.h"

namespace je {
namespace {

constexpr size_t kPage = config::kPage;
constexpr szind_t kBin = 2;  // 32-byte regions
// A large class: 64 KiB with 4 KiB pages; with --with-lg-page builds, where 64 KiB is small,
// the smallest large class (4 pages) instead.
constexpr size_t k64K = sc::kLargeMinClass > 64 * 1024 ? sc::kLargeMinClass : 64 * 1024;

size_t pages_of(size_t bytes) { return bytes / kPage; }

class ArenaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(core_boot(CoreConfig{})); }
  void SetUp() override {
    if (!config::kStats) GTEST_SKIP() << "built with --disable-stats";
    a_ = manual_arena_without_decay();
    ASSERT_NE(a_, nullptr);
  }

  void* large(size_t usize, size_t alignment = kCacheline, bool zero = false) {
    void* p = a_->malloc_large(usize, alignment, zero);
    EXPECT_NE(p, nullptr) << usize;
    return p;
  }
  void free_small(void* p) { a_->dalloc_small(g_emap.lookup(p), kBin, p); }
  void free_large(void* p) { a_->dalloc_large(g_emap.lookup(p)); }
  ArenaPages pages() { return arena_pages(a_->ind()); }
  size_t curlextents(size_t usize) {
    unsigned j = sz::size2index(usize) - sc::kNBins;
    return arena_stat<size_t>(a_->ind(), "lextents." + std::to_string(j) + ".curlextents");
  }
  /// Whether [p, p + n) reads as zero.
  static bool all_zero(const void* p, size_t n) {
    const unsigned char* c = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; i++) {
      if (c[i] != 0) return false;
    }
    return true;
  }

  Arena* a_ = nullptr;
};

// ---- small ---------------------------------------------------------------------------------

TEST_F(ArenaTest, SmallRegionComesFromAFreshSlabAndTheEmptySlabGoesBackDirty) {
  const size_t slab_pages = pages_of(g_bin_geo[kBin].slab_size);
  void* p = a_->malloc_small(kBin, false);
  ASSERT_NE(p, nullptr);
  EmapEntry ent = g_emap.lookup_entry(p);
  EXPECT_TRUE(ent.slab);
  EXPECT_EQ(ent.szind, kBin);
  EXPECT_EQ(ent.edata->arena_ind, a_->ind());
  BinStats s = bin_stats(a_, kBin);
  EXPECT_EQ(s.nmalloc, 1u);
  EXPECT_EQ(s.nrequests, 1u);
  EXPECT_EQ(s.curregs, 1u);
  EXPECT_EQ(s.nslabs, 1u);
  EXPECT_EQ(s.curslabs, 1u);
  EXPECT_EQ(pages().active, slab_pages);
  free_small(p);
  s = bin_stats(a_, kBin);
  EXPECT_EQ(s.ndalloc, 1u);
  EXPECT_EQ(s.curregs, 0u);
  EXPECT_EQ(s.curslabs, 0u);
  ArenaPages pg = pages();
  EXPECT_EQ(pg.active, 0u);
  EXPECT_EQ(pg.dirty, slab_pages);
}

TEST_F(ArenaTest, AFullSlabOpensAnother) {
  const unsigned nregs = g_bin_geo[kBin].nregs;
  std::vector<void*> regs;
  std::set<void*> distinct;
  for (unsigned i = 0; i <= nregs; i++) {
    void* p = a_->malloc_small(kBin, false);
    ASSERT_NE(p, nullptr) << i;
    regs.push_back(p);
    distinct.insert(p);
  }
  EXPECT_EQ(distinct.size(), nregs + 1u);
  Edata* first = g_emap.lookup(regs[0]);
  for (unsigned i = 1; i < nregs; i++) EXPECT_EQ(g_emap.lookup(regs[i]), first) << i;
  EXPECT_NE(g_emap.lookup(regs[nregs]), first);
  EXPECT_EQ(bin_stats(a_, kBin).curslabs, 2u);
  for (void* p : regs) free_small(p);
  BinStats s = bin_stats(a_, kBin);
  EXPECT_EQ(s.curregs, 0u);
  EXPECT_EQ(s.curslabs, 0u);
  EXPECT_EQ(pages().active, 0u);
}

TEST_F(ArenaTest, AFreedRegionIsReusedAndZeroedOnRequest) {
  void* keep = a_->malloc_small(kBin, false);  // keeps the slab in the bin
  void* p = a_->malloc_small(kBin, false);
  ASSERT_NE(keep, nullptr);
  ASSERT_NE(p, nullptr);
  std::memset(p, 0xa5, g_bin_geo[kBin].reg_size);
  free_small(p);
  void* q = a_->malloc_small(kBin, true);
  EXPECT_EQ(q, p);
  EXPECT_TRUE(all_zero(q, g_bin_geo[kBin].reg_size));
  free_small(q);
  free_small(keep);
}

TEST_F(ArenaTest, FillAndBatchFreeCountOnceEach) {
  constexpr unsigned kN = 50;
  void* out[kN];
  BinStats s0 = bin_stats(a_, kBin);
  ASSERT_EQ(a_->fill_small(kBin, out, kN, 7), kN);
  BinStats s1 = bin_stats(a_, kBin);
  EXPECT_EQ(s1.nfills - s0.nfills, 1u);
  EXPECT_EQ(s1.nmalloc - s0.nmalloc, kN);
  EXPECT_EQ(s1.nrequests - s0.nrequests, 7u);
  EXPECT_EQ(s1.curregs, kN);
  EXPECT_EQ(std::set<void*>(out, out + kN).size(), kN);
  Edata* slabs[kN];
  for (unsigned i = 0; i < kN; i++) slabs[i] = g_emap.lookup(out[i]);
  // Half without the stats merge (another arena's cache), half with it (the cache's own).
  a_->dalloc_small_batch(kBin, out, slabs, kN / 2, /*merge_stats=*/false, 99);
  BinStats s2 = bin_stats(a_, kBin);
  EXPECT_EQ(s2.ndalloc - s1.ndalloc, kN / 2);
  EXPECT_EQ(s2.nflushes, s1.nflushes);
  EXPECT_EQ(s2.nrequests, s1.nrequests);
  a_->dalloc_small_batch(kBin, out + kN / 2, slabs + kN / 2, kN / 2, /*merge_stats=*/true, 3);
  BinStats s3 = bin_stats(a_, kBin);
  EXPECT_EQ(s3.nflushes - s2.nflushes, 1u);
  EXPECT_EQ(s3.nrequests - s2.nrequests, 3u);
  EXPECT_EQ(s3.curregs, 0u);
  EXPECT_EQ(pages().active, 0u);
}

// ---- large ---------------------------------------------------------------------------------

TEST_F(ArenaTest, LargeAllocationIsOneExtentWithThePadPage) {
  void* p = large(k64K);
  ASSERT_NE(p, nullptr);
  EmapEntry ent = g_emap.lookup_entry(p);
  Edata* e = ent.edata;
  EXPECT_FALSE(ent.slab);
  EXPECT_EQ(ent.szind, sz::size2index(k64K));
  EXPECT_EQ(e->size, k64K + sz::kLargePad);
  // The cache-oblivious offset: a cache line inside the first page.
  uintptr_t off = reinterpret_cast<uintptr_t>(p) - e->base_addr();
  EXPECT_LT(off, sz::kLargePad == 0 ? 1 : kPage);
  EXPECT_EQ(off % kCacheline, 0u);
  EXPECT_EQ(pages().active, pages_of(k64K + sz::kLargePad));
  EXPECT_EQ(curlextents(k64K), 1u);
  free_large(p);
  ArenaPages pg = pages();
  EXPECT_EQ(pg.active, 0u);
  EXPECT_EQ(pg.dirty, pages_of(k64K + sz::kLargePad));
  EXPECT_EQ(curlextents(k64K), 0u);
}

TEST_F(ArenaTest, LargeAlignmentIsHonoured) {
  for (size_t align : {kPage, size_t{64} << 10, size_t{2} << 20}) {
    void* p = large(k64K, align);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << align;
    free_large(p);
  }
}

TEST_F(ArenaTest, ReusedDirtyLargePagesAreZeroedOnRequest) {
  void* p = large(k64K);
  std::memset(p, 0xff, k64K);
  free_large(p);
  ASSERT_GT(pages().dirty, 0u);
  void* q = large(k64K, kCacheline, /*zero=*/true);
  EXPECT_EQ(pages().dirty, 0u);    // the dirty extent was reused ...
  EXPECT_TRUE(all_zero(q, k64K));  // ... and cleared
  free_large(q);
}

// ---- in-place resizing ---------------------------------------------------------------------

TEST_F(ArenaTest, RallocExpandsInPlaceAndZeroesTheNewPart) {
  void* p = large(k64K);
  std::memset(p, 0x5a, k64K);
  Edata* e = g_emap.lookup(p);
  ASSERT_TRUE(a_->ralloc_large_no_move(e, 2 * k64K, 2 * k64K, /*zero=*/true));
  EXPECT_EQ(g_emap.lookup(p), e);
  EXPECT_EQ(e->addr, p);
  EXPECT_EQ(g_emap.lookup_entry(p).szind, sz::size2index(2 * k64K));
  EXPECT_EQ(e->size, 2 * k64K + sz::kLargePad);
  EXPECT_EQ(static_cast<unsigned char*>(p)[k64K - 1], 0x5a);
  EXPECT_TRUE(all_zero(static_cast<char*>(p) + k64K, k64K));
  EXPECT_EQ(curlextents(k64K), 0u);
  EXPECT_EQ(curlextents(2 * k64K), 1u);
  EXPECT_EQ(pages().active, pages_of(2 * k64K + sz::kLargePad));
  free_large(p);
}

TEST_F(ArenaTest, RallocShrinksInPlaceAndTheTailGoesDirty) {
  void* p = large(4 * k64K);
  Edata* e = g_emap.lookup(p);
  ASSERT_TRUE(a_->ralloc_large_no_move(e, k64K, k64K, false));
  EXPECT_EQ(e->addr, p);
  EXPECT_EQ(g_emap.lookup_entry(p).szind, sz::size2index(k64K));
  EXPECT_EQ(e->size, k64K + sz::kLargePad);
  ArenaPages pg = pages();
  EXPECT_EQ(pg.active, pages_of(k64K + sz::kLargePad));
  EXPECT_EQ(pg.dirty, pages_of(3 * k64K));
  EXPECT_EQ(curlextents(4 * k64K), 0u);
  EXPECT_EQ(curlextents(k64K), 1u);
  free_large(p);
}

TEST_F(ArenaTest, RallocPrefersTheLargestSizeThatFits) {
  void* p = large(k64K);
  Edata* e = g_emap.lookup(p);
  ASSERT_TRUE(a_->ralloc_large_no_move(e, 80 * 1024, 4 * k64K, false));
  EXPECT_EQ(g_emap.lookup_entry(p).szind, sz::size2index(4 * k64K));
  free_large(p);
}

TEST_F(ArenaTest, RallocWithANeighbourInTheWay) {
  void* p = large(k64K);
  void* q = large(k64K);
  Edata* e = g_emap.lookup(p);
  if (g_emap.lookup(q)->base_addr() != e->base_addr() + e->size) {
    free_large(q);
    free_large(p);
    GTEST_SKIP() << "the two extents are not adjacent";
  }
  // Cannot grow: fails and leaves the allocation as it was.
  EXPECT_FALSE(a_->ralloc_large_no_move(e, 2 * k64K, 2 * k64K, false));
  EXPECT_EQ(g_emap.lookup_entry(p).szind, sz::size2index(k64K));
  EXPECT_EQ(e->size, k64K + sz::kLargePad);
  // A range that includes the current size succeeds without a change.
  EXPECT_TRUE(a_->ralloc_large_no_move(e, 48 * 1024, 2 * k64K, false));
  EXPECT_EQ(g_emap.lookup_entry(p).szind, sz::size2index(k64K));
  EXPECT_EQ(curlextents(k64K), 2u);
  free_large(q);
  free_large(p);
}

// ---- reset and destroy ---------------------------------------------------------------------

TEST_F(ArenaTest, ResetFreesEverythingAndLeavesThePagesDirty) {
  for (szind_t i : {szind_t{0}, kBin, szind_t{10}, szind_t{sc::kNBins - 1}}) {
    for (int n = 0; n < 100; n++) ASSERT_NE(a_->malloc_small(i, false), nullptr);
  }
  for (int n = 0; n < 5; n++) large(k64K * (n + 1));
  ArenaPages before = pages();
  ASSERT_GT(before.active, 0u);
  a_->reset();
  for (Bin* b = a_->bins_begin(); b != a_->bins_end(); b++) {
    MutexGuard g(b->mtx);
    EXPECT_EQ(b->stats.curregs, 0u);
    EXPECT_EQ(b->stats.curslabs, 0u);
    EXPECT_EQ(b->slabcur, nullptr);
  }
  EXPECT_EQ(arena_stat<size_t>(a_->ind(), "small.allocated"), 0u);
  EXPECT_EQ(arena_stat<size_t>(a_->ind(), "large.allocated"), 0u);
  ArenaPages after = pages();
  EXPECT_EQ(after.active, 0u);
  EXPECT_EQ(after.dirty, before.dirty + before.active);  // not purged
  // The arena stays usable, on its dirty pages first.
  void* p = a_->malloc_small(kBin, false);
  ASSERT_NE(p, nullptr);
  EXPECT_LT(pages().dirty, after.dirty);
  free_small(p);
}

TEST_F(ArenaTest, DestroyUnmapsTheArenaAndFreesItsIndex) {
  const unsigned ind = a_->ind();
  void* p = large(size_t{1} << 20);
  ASSERT_NE(a_->malloc_small(kBin, false), nullptr);
  arena_bind(a_);
  EXPECT_FALSE(arena_destroy_manual(ind)) << "destroyed with a thread bound";
  arena_unbind(a_);
  ASSERT_TRUE(arena_destroy_manual(ind));
  EXPECT_EQ(arena_get(ind, false), nullptr);
  EXPECT_TRUE(arena_is_destroyed(ind));
  // The large block's pages went back to the OS.
  unsigned char vec;
  void* page = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~(kPage - 1));
  EXPECT_EQ(mincore(page, kPage, &vec), -1);
  EXPECT_EQ(errno, ENOMEM);
  // The index is handed out again.
  unsigned again = 0;
  ASSERT_TRUE(arena_create_manual(nullptr, &again));
  EXPECT_EQ(again, ind);
  EXPECT_FALSE(arena_is_destroyed(ind));
  a_ = arena_get(again, false);
  ASSERT_NE(a_, nullptr);
  EXPECT_EQ(pages().active, 0u);
}

// ---- decay ---------------------------------------------------------------------------------

TEST_F(ArenaTest, DecayStepsFollowTheTimeAndPurgeAllEmptiesEverything) {
  make_dirty(a_, 8, k64K);
  const size_t dirty = pages().dirty;
  ASSERT_GT(dirty, 0u);
  uint64_t npurge = arena_stat<uint64_t>(a_->ind(), "dirty_npurge");
  a_->decay(false, false);  // decay -1: a step purges nothing
  EXPECT_EQ(pages().dirty, dirty);
  a_->decay(false, true);
  ArenaPages pg = pages();
  EXPECT_EQ(pg.dirty, 0u);
  EXPECT_EQ(pg.muzzy, 0u);
  EXPECT_GT(arena_stat<uint64_t>(a_->ind(), "dirty_npurge"), npurge);
  EXPECT_EQ(arena_stat<uint64_t>(a_->ind(), "dirty_purged"), dirty);
}

TEST_F(ArenaTest, TheAllocationTickRunsADecayStep) {
  Arena* a = manual_arena_with_decay(/*dirty_ms=*/1, /*muzzy_ms=*/0);
  ASSERT_NE(a, nullptr);
  make_dirty(a, 8, k64K);
  const size_t dirty = arena_pages(a->ind()).dirty;
  ASSERT_GT(dirty, 0u);
  // As in 5.3.0, pages freed between two epochs count as freed when the next epoch starts:
  // this step starts their decay and purges nothing yet.
  a->decay(false, false);
  EXPECT_EQ(arena_pages(a->ind()).dirty, dirty);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // well past the decay time
  EXPECT_EQ(arena_pages(a->ind()).dirty, dirty);               // nothing decays without a step
  // A thread's ticks run a step at most every 2 x 1000 - 1 of them: everything is purged.
  std::thread t([a] {
    for (int i = 0; i < 2000; i++) a->decay_tick();
  });
  t.join();
  EXPECT_EQ(arena_pages(a->ind()).dirty, 0u);
}

}  // namespace
}  // namespace je
