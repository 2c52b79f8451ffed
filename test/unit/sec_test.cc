// sec_test: the small extent cache in front of a page allocator (ours, opt.extent_cache_bytes):
// a free of up to 16 pages is kept whole and handed back to the next request of exactly its
// size; everything cached reaches the dirty ecache before the Pac grows (small extents first,
// so that large ones absorb them), on purge and on a statistics read (large first: extents stay
// whole); in-place growth takes a cached neighbour; an overflow gives up half the capacity;
// zeroed requests and caches of size 0 never use it.
#include <cstring>

#include "pac_fixture.h"

namespace je {
namespace {

Pac* make_cached_pac(size_t cap) {
  PacOptions o;
  o.dirty_decay_ms = -1;  // nothing purged behind the tests' backs
  o.muzzy_decay_ms = 0;
  o.placement.extent_cache_bytes = cap;
  return make_pac(o);
}

TEST(Sec, SameSizeComesBackLastFreedFirst) {
  Pac* pac = make_cached_pac(size_t{1} << 20);
  Edata* a = pac->alloc(4 * kKiB, kPg, false);
  Edata* b = pac->alloc(4 * kKiB, kPg, false);
  Edata* c = pac->alloc(4 * kKiB, kPg, false);
  ASSERT_TRUE(a && b && c);
  void* bb = b->base();
  pac->dalloc(a);
  pac->dalloc(b);
  EXPECT_EQ(pac->ndirty(), 2u);                   // cached pages count as dirty
  EXPECT_EQ(state_at(bb), ExtentState::kActive);  // ... but neighbours see them taken
  EXPECT_TRUE(ecache_sizes(dirty_ecache(pac)).empty());
  uint64_t dirty_allocs = pac->counter(PacCounter::dirty_allocs);
  Edata* again = pac->alloc(4 * kKiB, kPg, false);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->base(), bb);
  EXPECT_FALSE(again->cached);
  EXPECT_EQ(pac->counter(PacCounter::dirty_allocs), dirty_allocs + 1);
  EXPECT_EQ(pac->ndirty(), 1u);
  EXPECT_EQ(pac->nactive(), 2u);
}

// The batch entry points (slabs): dalloc_batch caches all of a batch under one lock, with the
// same accounting as one dalloc() each; alloc_batch takes the cached ones first, most recent
// first, and the rest from the ecache, counting each allocation once; past the capacity the
// overflow goes to the dirty ecache and nothing is lost.
TEST(Sec, BatchesCountAsSingleCalls) {
  Pac* pac = make_cached_pac(32 * kKiB);
  Edata* p[12];
  for (Edata*& e : p) e = pac->alloc(4 * kKiB, kPg, false);
  void* last = p[7]->base();
  pac->dalloc_batch(p, 8);
  EXPECT_EQ(pac->ndirty(), 8u);
  EXPECT_EQ(pac->nactive(), 4u);
  EXPECT_TRUE(ecache_sizes(dirty_ecache(pac)).empty());
  const uint64_t allocs = pac->counter(PacCounter::dirty_allocs);
  Edata* q[10];
  ASSERT_EQ(pac->alloc_batch(4 * kKiB, q, 10), 10u);  // 8 cached, 2 more grown or recycled
  EXPECT_EQ(q[0]->base(), last);
  for (Edata* e : q) EXPECT_FALSE(e->cached);
  EXPECT_GE(pac->counter(PacCounter::dirty_allocs), allocs + 8);
  EXPECT_EQ(pac->nactive(), 14u);
  EXPECT_EQ(pac->ndirty(), 0u);
  pac->dalloc_batch(q, 10);  // 40 KiB into a 32 KiB cache: half of it goes on
  pac->dalloc_batch(p + 8, 4);
  EXPECT_EQ(pac->ndirty(), 14u);
  EXPECT_LE(pac->ndirty() - core(pac).npages(ExtentState::kDirty), 8u);
}

// The reuse promise: a freed 16 KiB extent and its freed one-page neighbour serve a 20 KiB
// request (after the flush: the large extent coalesces eagerly with the page, as any free of a
// large extent does) before any retained or fresh page is taken.
TEST(Sec, FlushedAndCoalescedBeforeGrowth) {
  Pac* pac = make_cached_pac(size_t{1} << 20);
  Edata* a = pac->alloc(16 * kKiB, kPg, false);
  Edata* b = pac->alloc(4 * kKiB, kPg, false);
  Edata* fence = pac->alloc(4 * kKiB, kPg, false);
  ASSERT_TRUE(a && b && fence);
  ASSERT_GT(core(pac).npages(ExtentState::kRetained), 5u);  // growth could serve it: must not
  void* first = a->base();
  pac->dalloc(a);
  pac->dalloc(b);
  uint64_t fresh = pac->counter(PacCounter::fresh_allocs);
  uint64_t retained = pac->counter(PacCounter::retained_allocs);
  Edata* big = pac->alloc(20 * kKiB, kPg, false);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->base(), first);
  EXPECT_EQ(pac->counter(PacCounter::fresh_allocs), fresh);
  EXPECT_EQ(pac->counter(PacCounter::retained_allocs), retained);
  EXPECT_EQ(pac->ndirty(), 0u);
}

// Any other flush (decay epoch, statistics, purge) keeps each extent whole: a freed 16 KiB
// extent and its freed one-page neighbour reach the ecache as two extents, so that the next
// requests of those sizes get them back as they were.
// Some arena (any Pac of the process) faulted pages in: the next free here first sends what the
// cache holds to the ecache, where it coalesces, can be borrowed and decays.
TEST(Sec, AGrowthAnywhereFlushesTheCacheAtTheNextFree) {
  Pac* pac = make_cached_pac(size_t{1} << 20);
  Edata* a = pac->alloc(4 * kKiB, kPg, false);
  Edata* b = pac->alloc(8 * kKiB, kPg, false);
  Edata* c = pac->alloc(8 * kKiB, kPg, false);
  ASSERT_TRUE(a && b && c);
  pac->dalloc(a);
  pac->dalloc(b);
  EXPECT_TRUE(ecache_sizes(dirty_ecache(pac)).empty());
  g_pac_growths.fetch_add(1);
  pac->dalloc(c);
  EXPECT_FALSE(ecache_sizes(dirty_ecache(pac)).empty());
  EXPECT_EQ(core(pac).npages(ExtentState::kDirty), 3u);  // a and b; c is cached
  EXPECT_EQ(pac->ndirty(), 5u);
}

TEST(Sec, StatisticsFlushKeepsExtentsWhole) {
  Pac* pac = make_cached_pac(size_t{1} << 20);
  Edata* a = pac->alloc(16 * kKiB, kPg, false);
  Edata* b = pac->alloc(4 * kKiB, kPg, false);
  Edata* fence = pac->alloc(4 * kKiB, kPg, false);
  ASSERT_TRUE(a && b && fence);
  void* first = a->base();
  pac->dalloc(b);
  pac->dalloc(a);
  PacStatsSnap snap;
  pac->read_stats(&snap);
  EXPECT_EQ(sorted(ecache_sizes(dirty_ecache(pac))), (std::vector<size_t>{4 * kKiB, 16 * kKiB}));
  Edata* again = pac->alloc(16 * kKiB, kPg, false);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->base(), first);
}

TEST(Sec, ExpandTakesACachedNeighbour) {
  Pac* pac = make_cached_pac(size_t{1} << 20);
  Edata* e = pac->alloc(16 * kKiB, kPg, false);
  Edata* next = pac->alloc(4 * kKiB, kPg, false);
  Edata* fence = pac->alloc(4 * kKiB, kPg, false);
  ASSERT_TRUE(e && next && fence);
  ASSERT_EQ(next->base_addr(), e->past_addr());
  pac->dalloc(next);
  ASSERT_TRUE(pac->expand(e, 16 * kKiB, 20 * kKiB, false));
  EXPECT_EQ(e->size, 20 * kKiB);
  EXPECT_EQ(pac->ndirty(), 0u);
}

TEST(Sec, PurgeAndStatsSeeCachedPages) {
  Pac* pac = make_cached_pac(size_t{1} << 20);
  Edata* e = pac->alloc(8 * kKiB, kPg, false);
  Edata* fence = pac->alloc(4 * kKiB, kPg, false);
  ASSERT_TRUE(e && fence);
  void* base = e->base();
  std::memset(base, 1, 8 * kKiB);
  pac->dalloc(e);
  PacStatsSnap snap;
  pac->read_stats(&snap);  // flushes: per-size extent counts as the ecache has them
  EXPECT_EQ(snap.ndirty, 2u);
  EXPECT_EQ(state_at(base), ExtentState::kDirty);
  Edata* f = pac->alloc(8 * kKiB, kPg, false);
  ASSERT_EQ(f->base(), base);
  pac->dalloc(f);  // cached again
  pac->decay_all(ExtentState::kDirty, false);
  EXPECT_EQ(pac->ndirty(), 0u);
  EXPECT_EQ(pages::resident_bytes(base, 8 * kKiB), 0u);
}

TEST(Sec, OverflowGivesUpHalf) {
  Pac* pac = make_cached_pac(64 * kKiB);
  Edata* p[40];
  for (Edata*& e : p) e = pac->alloc(4 * kKiB, kPg, false);
  for (Edata* e : p) pac->dalloc(e);
  EXPECT_EQ(pac->ndirty(), 40u);  // nothing lost: cached or recorded
  size_t in_ecache = core(pac).npages(ExtentState::kDirty);
  EXPECT_GE(in_ecache, 40u - 16u);
  EXPECT_LE(40u - in_ecache, 16u);  // at most the capacity stays cached
}

TEST(Sec, ZeroedRequestsAndDisabledCacheBypassIt) {
  Pac* pac = make_cached_pac(size_t{1} << 20);
  Edata* e = pac->alloc(4 * kKiB, kPg, false);
  Edata* fence = pac->alloc(4 * kKiB, kPg, false);
  ASSERT_TRUE(e && fence);
  void* base = e->base();
  std::memset(base, 7, 4 * kKiB);
  pac->dalloc(e);
  Edata* z = pac->alloc(4 * kKiB, kPg, true);
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(static_cast<unsigned char*>(z->base())[100], 0);

  Pac* off = make_cached_pac(0);
  Edata* g = off->alloc(4 * kKiB, kPg, false);
  Edata* h = off->alloc(4 * kKiB, kPg, false);
  ASSERT_TRUE(g && h);
  void* gb = g->base();
  off->dalloc(g);
  EXPECT_EQ(state_at(gb), ExtentState::kDirty);  // straight to the ecache, as 5.3.0
}

}  // namespace
}  // namespace je
