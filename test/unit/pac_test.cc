// pac_test: purging really returns memory (dirty -> retained, dirty -> muzzy -> retained), the
// decay curve on a fake clock, the oversize shortcut, and the 4 KiB -> 16 KiB realloc pattern
// at the page-allocator level, bounded vs unbounded coalescing in one run, and with our
// reuse_before_grow.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "pac_fixture.h"

namespace je {
namespace {

// The cache-oblivious pad real large allocations add to their extents: one page, or none in a
// build configured --disable-cache-oblivious. Extent sizes below are "class + kPad".
constexpr size_t kPad = sz::kLargePad;

PacOptions opts(int64_t dirty_ms, int64_t muzzy_ms) {
  PacOptions o;
  o.dirty_decay_ms = dirty_ms;
  o.muzzy_decay_ms = muzzy_ms;
  o.placement.extent_cache_bytes = 0;  // the ecaches alone (sec_test has the cache in front)
  return o;
}

// Ours (opt.purge_on_grow): ten 128 KiB dirty extents (fenced apart) and a 2 MiB request that
// none fits: the growth purges as many pages as it takes beyond the 1 MiB reserve, from whole
// extents of at least 64 KiB; small dirty pieces are never taken; off, nothing is purged.
void growth_purge_case(bool on, size_t* purged, size_t* ndirty) {
  PacOptions o = opts(10000, 0);
  o.purge_on_grow = on;
  Pac* pac = make_pac(o);
  Edata* big[10];
  Edata* small[10];
  for (int i = 0; i < 10; i++) {
    big[i] = pac->alloc(128 * kKiB, kPg, false);
    small[i] = pac->alloc(4 * kKiB, kPg, false);
  }
  for (int i = 0; i < 10; i++) pac->dalloc(big[i]);
  for (int i = 0; i < 5; i++) pac->dalloc(small[i]);  // 4 KiB pieces, fenced by the others
  size_t before = pac->counter(PacCounter::dirty_purged);
  Edata* g = pac->alloc(2048 * kKiB, kPg, false);
  ASSERT_NE(g, nullptr);
  *purged = pac->counter(PacCounter::dirty_purged) - before;
  *ndirty = pac->ndirty();
}

TEST(Pac, GrowthPurgesLargeIdleDirtyExtents) {
  size_t purged, ndirty;
  growth_purge_case(true, &purged, &ndirty);
  // 10 x 32 + 5 pages dirty, reserve 256 pages: 69 to purge, in whole 32-page extents -> 96.
  EXPECT_EQ(purged, 96u);
  EXPECT_EQ(ndirty, 10 * 32 + 5 - 96u);
  growth_purge_case(false, &purged, &ndirty);
  EXPECT_EQ(purged, 0u);
  EXPECT_EQ(ndirty, 10 * 32 + 5u);
}

// Extent sizes below are usable size + kPad, as real large allocations request them (other
// sizes would land between the eset's bins).
TEST(Pac, PurgeDirtyToRetainedDropsResidency) {
  Pac* pac = make_pac(opts(-1, 0));
  Edata* e = pac->alloc(1024 * kKiB + kPad, kPg, false);
  ASSERT_NE(e, nullptr);
  pac->alloc(4 * kKiB, kPg, false);  // fence: keep the extent apart from the retained rest
  void* base = e->base();
  std::memset(base, 0x5a, 1024 * kKiB);
  EXPECT_EQ(pages::resident_bytes(base, 1024 * kKiB), 1024 * kKiB);
  pac->dalloc(e);
  EXPECT_EQ(pac->ndirty(), (1024 * kKiB + kPad) / kPg);
  EXPECT_EQ(pages::resident_bytes(base, 1024 * kKiB), 1024 * kKiB);  // dirty: still resident
  pac->decay_all(ExtentState::kDirty, false);
  EXPECT_EQ(pac->ndirty(), 0u);
  EXPECT_EQ(pages::resident_bytes(base, 1024 * kKiB), 0u);
  EXPECT_EQ(state_at(base), ExtentState::kRetained);
  EXPECT_EQ(pac->counter(PacCounter::dirty_npurge), 1u);
  EXPECT_EQ(pac->counter(PacCounter::dirty_purged), (1024 * kKiB + kPad) / kPg);
  // Reuse comes back zeroed (DONTNEED), from retained.
  uint64_t from_retained = pac->counter(PacCounter::retained_allocs);
  Edata* again = pac->alloc(1024 * kKiB + kPad, kPg, false);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->base(), base);
  EXPECT_TRUE(again->zeroed);
  EXPECT_EQ(static_cast<unsigned char*>(base)[12345], 0);
  EXPECT_EQ(pac->counter(PacCounter::retained_allocs), from_retained + 1);
}

// Ours (opt.reuse_before_grow): a request bigger than every dirty extent takes a dirty extent
// whose next pages are retained and extends it by them, so only the extension faults in; off
// (5.3.0's placement), it is carved from the retained pages alone and the dirty pages stay
// beside it. A zeroed request gets the dirty part zeroed.
void dirty_head_case(bool reuse_before_grow, bool zero) {
  PacOptions o = opts(-1, 0);
  o.placement.reuse_before_grow = reuse_before_grow;
  Pac* pac = make_pac(o);
  // The first growth maps a 2 MiB region: 1 MiB is handed out, the rest stays retained.
  Edata* a = pac->alloc(1024 * kKiB + kPad, kPg, false);
  ASSERT_NE(a, nullptr);
  void* base = a->base();
  std::memset(base, 0x5a, 1024 * kKiB);
  pac->dalloc(a);
  ASSERT_EQ(state_at(static_cast<char*>(base) + 1024 * kKiB + kPad), ExtentState::kRetained);
  const uint64_t dirty_pages = pac->counter(PacCounter::dirty_alloc_pages);
  Edata* b = pac->alloc(1536 * kKiB + kPad, kPg, zero);
  ASSERT_NE(b, nullptr);
  if (!reuse_before_grow) {
    EXPECT_NE(b->base(), base);
    EXPECT_EQ(pac->ndirty(), (1024 * kKiB + kPad) / kPg);
    return;
  }
  EXPECT_EQ(b->base(), base);
  EXPECT_EQ(b->size, 1536 * kKiB + kPad);
  EXPECT_EQ(pac->ndirty(), 0u);
  EXPECT_EQ(pac->nactive(), (1536 * kKiB + kPad) / kPg);
  EXPECT_EQ(pac->counter(PacCounter::dirty_alloc_pages) - dirty_pages, (1024 * kKiB + kPad) / kPg);
  // The dirty part was resident and stays so: no fault brought it in.
  EXPECT_EQ(pages::resident_bytes(base, 1024 * kKiB), 1024 * kKiB);
  const unsigned char* p = static_cast<const unsigned char*>(base);
  EXPECT_EQ(p[4096], zero ? 0 : 0x5a);
  EXPECT_EQ(b->zeroed, zero);
  if (zero) {
    EXPECT_EQ(p[1536 * kKiB - 1], 0);
  }
}

TEST(Pac, GrowthExtendsADirtyHeadByRetainedPages) {
  dirty_head_case(/*reuse_before_grow=*/true, /*zero=*/false);
  dirty_head_case(/*reuse_before_grow=*/true, /*zero=*/true);
  dirty_head_case(/*reuse_before_grow=*/false, /*zero=*/false);
}

TEST(Pac, PurgeDirtyToMuzzyThenRetained) {
  Pac* pac = make_pac(opts(-1, 10000));
  Edata* e = pac->alloc(512 * kKiB + kPad, kPg, false);
  pac->alloc(4 * kKiB, kPg, false);  // fence
  void* base = e->base();
  std::memset(base, 0x77, 512 * kKiB);
  pac->dalloc(e);
  pac->decay_all(ExtentState::kDirty, false);  // muzzy decay > 0: MADV_FREE -> muzzy
  EXPECT_EQ(pac->ndirty(), 0u);
  EXPECT_EQ(pac->nmuzzy(), (512 * kKiB + kPad) / kPg);
  EXPECT_EQ(state_at(base), ExtentState::kMuzzy);
  EXPECT_EQ(pac->counter(PacCounter::dirty_purged), (512 * kKiB + kPad) / kPg);
  // Muzzy memory is reused before retained.
  Edata* r = pac->alloc(512 * kKiB + kPad, kPg, false);
  ASSERT_EQ(r->base(), base);
  EXPECT_EQ(pac->counter(PacCounter::muzzy_allocs), 1u);
  std::memset(base, 0x11, 512 * kKiB);
  pac->dalloc(r);
  pac->decay_all(ExtentState::kDirty, false);
  pac->decay_all(ExtentState::kMuzzy, false);  // muzzy -> retained with DONTNEED
  EXPECT_EQ(pac->nmuzzy(), 0u);
  EXPECT_EQ(state_at(base), ExtentState::kRetained);
  EXPECT_EQ(pages::resident_bytes(base, 512 * kKiB), 0u);
  EXPECT_EQ(pac->counter(PacCounter::muzzy_purged), (512 * kKiB + kPad) / kPg);
}

// In-place growth takes the same cascade as a new extent: a muzzy neighbour is absorbed while
// muzzy decay is on; with muzzy_decay_ms 0 the muzzy ecache is not even looked at (its lock is
// not taken), as for alloc().
uint64_t muzzy_lock_ops(Pac* pac) {
  Mutex& m = PacTestAccess::ecache(pac, ExtentState::kMuzzy).mtx;
  MutexGuard g(m);
  return m.stats().num_ops;
}

TEST(Pac, ExpandAbsorbsMuzzyNeighbour) {
  Pac* pac = make_pac(opts(-1, 10000));
  Edata* e = pac->alloc(64 * kKiB, kPg, false);
  Edata* n = pac->alloc(64 * kKiB, kPg, false);
  pac->alloc(4 * kKiB, kPg, false);  // fence
  ASSERT_EQ(n->base(), e->past());
  pac->dalloc(n);
  pac->decay_all(ExtentState::kDirty, false);  // the neighbour goes muzzy
  ASSERT_EQ(pac->nmuzzy(), 16u);
  const uint64_t muzzy_allocs = pac->counter(PacCounter::muzzy_allocs);
  ASSERT_TRUE(pac->expand(e, 64 * kKiB, 128 * kKiB, false));
  EXPECT_EQ(e->size, 128 * kKiB);
  EXPECT_EQ(pac->nmuzzy(), 0u);
  EXPECT_EQ(pac->counter(PacCounter::muzzy_allocs), muzzy_allocs + 1);
}

TEST(Pac, ExpandSkipsMuzzyWithoutMuzzyDecay) {
  for (int64_t muzzy_ms : {int64_t{0}, int64_t{10000}}) {
    Pac* pac = make_pac(opts(10000, muzzy_ms));
    Edata* e = pac->alloc(64 * kKiB, kPg, false);
    pac->alloc(4 * kKiB, kPg, false);  // active neighbour: nothing can serve the growth
    const uint64_t before = muzzy_lock_ops(pac);
    EXPECT_FALSE(pac->expand(e, 64 * kKiB, 128 * kKiB, false));
    // One lock for the reading itself; the muzzy lookup adds one only with muzzy decay on.
    EXPECT_EQ(muzzy_lock_ops(pac) - before, muzzy_ms == 0 ? 1u : 2u) << muzzy_ms;
  }
}

TEST(Pac, FullyDecaySkipsMuzzy) {
  Pac* pac = make_pac(opts(-1, 10000));
  Edata* e = pac->alloc(64 * kKiB, kPg, false);
  pac->alloc(4 * kKiB, kPg, false);
  pac->dalloc(e);
  pac->decay_all(ExtentState::kDirty, /*fully=*/true);
  EXPECT_EQ(pac->nmuzzy(), 0u);
  EXPECT_EQ(pac->ndirty(), 0u);
}

TEST(Pac, OversizeExtentsArePurgedOnFree) {
  PacOptions o = opts(10000, 0);
  o.oversize_threshold = 1024 * kKiB;
  o.hold.on = false;  // 5.3.0's purge (the hold keeps it: HoldKeepsOversizeFreesInATimedArena)
  Pac* pac = make_pac(o);
  Edata* e = pac->alloc(2048 * kKiB, kPg, false);
  pac->alloc(4 * kKiB, kPg, false);
  void* base = e->base();
  std::memset(base, 1, 2048 * kKiB);
  pac->dalloc(e);
  EXPECT_EQ(pac->ndirty(), 0u);
  EXPECT_EQ(state_at(base), ExtentState::kRetained);
  EXPECT_EQ(pages::resident_bytes(base, 2048 * kKiB), 0u);
  EXPECT_EQ(pac->counter(PacCounter::dirty_nmadvise), 1u);
  // ...but not when decay is disabled (-1): the user asked to keep dirty memory.
  Pac* keep = make_pac(opts(-1, 0));
  keep->set_oversize_threshold(1024 * kKiB);
  Edata* k = keep->alloc(2048 * kKiB, kPg, false);
  keep->alloc(4 * kKiB, kPg, false);
  keep->dalloc(k);
  EXPECT_EQ(keep->ndirty(), 512u);
}

TEST(Pac, DecayZeroPurgesImmediately) {
  Pac* pac = make_pac(opts(0, 0));
  Edata* e = pac->alloc(64 * kKiB, kPg, false);
  pac->alloc(4 * kKiB, kPg, false);
  pac->dalloc(e);
  EXPECT_EQ(pac->ndirty(), 16u);
  bool advanced;
  ASSERT_TRUE(pac->try_decay(ExtentState::kDirty, nstime_now_ns(), Pac::Eagerness::kOnEpochAdvance,
                             &advanced));
  EXPECT_EQ(pac->ndirty(), 0u);
}

TEST(Pac, DecayFollowsSmootherstepOnFakeClock) {
  PacOptions o = opts(-1, -1);
  o.hold.on = false;  // 5.3.0's curve alone (the hold: HoldKeepsTheDipBelowThePeak)
  Pac* pac = make_pac(o);
  // 256 non-adjacent 8 KiB extents (every other one freed), so eviction cannot merge them and
  // the purge curve has page granularity.
  constexpr int kN = 256;
  Edata* e[2 * kN];
  for (auto& x : e) x = pac->alloc(8 * kKiB, kPg, false);
  const uint64_t t0 = uint64_t{1} << 40;
  ASSERT_TRUE(pac->decay_ms_set(ExtentState::kDirty, 1000, t0));
  for (int i = 0; i < 2 * kN; i += 2) pac->dalloc(e[i]);
  const size_t total = pac->ndirty();
  ASSERT_EQ(total, 2u * kN);
  const uint64_t interval = 1000 * 1000000ull / 200;
  size_t prev = total;
  size_t at_half = 0;
  for (int k = 1; k <= 205; k++) {
    bool advanced;
    ASSERT_TRUE(pac->try_decay(ExtentState::kDirty, t0 + k * interval + interval / 2,
                               Pac::Eagerness::kOnEpochAdvance, &advanced));
    size_t now = pac->ndirty();
    EXPECT_LE(now, prev) << "epoch " << k;
    prev = now;
    if (k == 100) at_half = now;
  }
  EXPECT_EQ(pac->ndirty(), 0u);
  // Pages freed half a window ago are kept with weight 1 - s(0.5) = 0.5.
  EXPECT_NEAR(static_cast<double>(at_half), total * 0.5, total * 0.03);
  EXPECT_EQ(pac->counter(PacCounter::dirty_purged), total);
}

// Ours (opt.decay_hold_peak): half of 512 one-extent pages are freed while the other half stay
// active. Decay alone purges them along the smootherstep curve (half of them by mid-window);
// with the hold they stay until the peak (512 active pages) ages out -- one rotation at half
// a window keeps it as the previous peak, the next one drops it -- and then go at once.
std::vector<size_t> dip_ndirty(bool hold) {
  PacOptions o = opts(-1, -1);
  o.hold.on = hold;
  Pac* pac = make_pac(o);
  constexpr int kN = 256;
  Edata* e[2 * kN];
  const uint64_t t0 = uint64_t{1} << 40;
  EXPECT_TRUE(pac->decay_ms_set(ExtentState::kDirty, 1000, t0));
  for (auto& x : e) x = pac->alloc(8 * kKiB, kPg, false);
  for (int i = 0; i < 2 * kN; i += 2) pac->dalloc(e[i]);
  EXPECT_EQ(pac->ndirty(), 2u * kN);
  const uint64_t interval = 1000 * 1000000ull / 200;
  std::vector<size_t> ndirty{pac->ndirty()};
  for (int k = 1; k <= 205; k++) {
    bool advanced;
    EXPECT_TRUE(pac->try_decay(ExtentState::kDirty, t0 + k * interval + interval / 2,
                               Pac::Eagerness::kOnEpochAdvance, &advanced));
    ndirty.push_back(pac->ndirty());
  }
  // The slack (1/64 of the peak, hold_slack) goes two whole windows after the half window of
  // the last activity.
  bool advanced;
  EXPECT_TRUE(pac->try_decay(ExtentState::kDirty, t0 + 2600 * 1000000ull,
                             Pac::Eagerness::kOnEpochAdvance, &advanced));
  ndirty.push_back(pac->ndirty());
  return ndirty;
}

TEST(Pac, HoldKeepsTheDipBelowThePeak) {
  const std::vector<size_t> off = dip_ndirty(false), on = dip_ndirty(true);
  const size_t total = on[0];
  EXPECT_NEAR(static_cast<double>(off[100]), total * 0.5, total * 0.03);
  for (int k = 1; k < 200; k++) EXPECT_EQ(on[k], total) << "epoch " << k;
  EXPECT_EQ(on.back(), 0u);
  EXPECT_EQ(off.back(), 0u);
}

// Ours (opt.oversize_hold): with dirty decay 0 and the immediate hold, an oversize free stays
// dirty (no inline purge) up to the dip below the peak, a decay step keeps it until the peak
// has aged out (two rotations of half the hold's window), and without the hold it is purged
// inline as 5.3.0 does.
TEST(Pac, ImmediateHoldKeepsOversizeFreesUntilThePeakAgesOut) {
  constexpr size_t kBig = 16 << 20;  // above the 8 MiB oversize threshold
  for (bool hold : {true, false}) {
    PacOptions o = opts(-1, -1);
    o.hold.immediate_ms = hold ? 1000 : 0;
    Pac* pac = make_pac(o);
    const uint64_t t0 = uint64_t{1} << 43;
    ASSERT_TRUE(pac->decay_ms_set(ExtentState::kDirty, 0, t0));
    ASSERT_TRUE(pac->decay_ms_set(ExtentState::kMuzzy, 0, t0));
    EXPECT_EQ(pac->immediate_hold(), hold);
    Edata* a = pac->alloc(kBig, kPg, false);
    Edata* b = pac->alloc(kBig, kPg, false);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    pac->dalloc(a);
    bool advanced;
    ASSERT_TRUE(pac->try_decay(ExtentState::kDirty, t0 + 1, Pac::Eagerness::kAlways, &advanced));
    if (!hold) {
      EXPECT_EQ(pac->ndirty(), 0u);
      EXPECT_EQ(pac->counter(PacCounter::oversize_purged), kBig / kPg);
      pac->dalloc(b);
      continue;
    }
    EXPECT_EQ(pac->ndirty(), kBig / kPg);  // the dip: peak 2 blocks, 1 active
    EXPECT_EQ(pac->counter(PacCounter::oversize_purged), 0u);
    EXPECT_NE(pac->decay_ns_until_purge(ExtentState::kDirty, t0 + 1, 1), UINT64_MAX);
    // The same size again: served from the held pages.
    Edata* c = pac->alloc(kBig, kPg, false);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(pac->ndirty(), 0u);
    pac->dalloc(c);
    pac->dalloc(b);
    const uint64_t half = 500'000'000;  // half of the 1000 ms window
    ASSERT_TRUE(
        pac->try_decay(ExtentState::kDirty, t0 + half / 2, Pac::Eagerness::kAlways, &advanced));
    EXPECT_EQ(pac->ndirty(), 2 * kBig / kPg);
    ASSERT_TRUE(
        pac->try_decay(ExtentState::kDirty, t0 + half + 1, Pac::Eagerness::kAlways, &advanced));
    EXPECT_EQ(pac->ndirty(), 2 * kBig / kPg);  // the peak is now the previous half's
    ASSERT_TRUE(
        pac->try_decay(ExtentState::kDirty, t0 + 2 * half + 2, Pac::Eagerness::kAlways, &advanced));
    EXPECT_EQ(pac->ndirty(), 0u);
  }
}

// Ours (opt.oversize_hold): blocks that outlive a whole window with no decay step in between
// (a query's hash tables) are still freed from the peak: the first free after the quiet stretch
// keeps its block within the hold instead of finding the peak stale. A decay step with no
// free since the last one still lets a stale peak go, so an idle arena returns its pages.
TEST(Pac, ImmediateHoldKeepsTheFirstFreeAfterAQuietWindow) {
  constexpr size_t kBig = 16 << 20;
  PacOptions o = opts(-1, -1);
  o.hold.immediate_ms = 1000;
  Pac* pac = make_pac(o);
  const uint64_t t0 = uint64_t{1} << 43;
  ASSERT_TRUE(pac->decay_ms_set(ExtentState::kDirty, 0, t0));
  ASSERT_TRUE(pac->decay_ms_set(ExtentState::kMuzzy, 0, t0));
  Edata* a = pac->alloc(kBig, kPg, false);
  Edata* b = pac->alloc(kBig, kPg, false);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  bool advanced;
  ASSERT_TRUE(pac->try_decay(ExtentState::kDirty, t0, Pac::Eagerness::kAlways, &advanced));
  const uint64_t quiet = 3'000'000'000;  // three windows without a decay step
  pac->dalloc(a);
  ASSERT_TRUE(pac->try_decay(ExtentState::kDirty, t0 + quiet, Pac::Eagerness::kAlways, &advanced));
  EXPECT_EQ(pac->ndirty(), kBig / kPg);  // freed from the peak of two blocks: held
  EXPECT_EQ(pac->counter(PacCounter::oversize_purged), 0u);
  pac->dalloc(b);
  ASSERT_TRUE(
      pac->try_decay(ExtentState::kDirty, t0 + quiet + 1, Pac::Eagerness::kAlways, &advanced));
  EXPECT_EQ(pac->ndirty(), 2 * kBig / kPg);
  // Idle: the next step, a whole window later and with no free since, purges everything.
  ASSERT_TRUE(
      pac->try_decay(ExtentState::kDirty, t0 + 2 * quiet, Pac::Eagerness::kAlways, &advanced));
  EXPECT_EQ(pac->ndirty(), 0u);
}

// Ours (opt.decay_hold_peak, Pac::keeps_oversize): an extent at the oversize threshold in an
// arena with timed decay -- a request just below 8 MiB, sent by its size to the thread's arena
// and given 8 MiB and a pad page -- stays dirty within the hold when freed, and the next round
// takes it back without new pages; without the hold it is purged when freed, as in 5.3.0.
TEST(Pac, HoldKeepsOversizeFreesInATimedArena) {
  constexpr size_t kBlock = (8 << 20) + kPad;
  for (bool hold : {true, false}) {
    PacOptions o = opts(10000, 0);
    o.hold.on = hold;
    Pac* pac = make_pac(o);
    Edata* e[4];
    for (auto& x : e) x = pac->alloc(kBlock, kPg, false);
    for (Edata* x : e) ASSERT_NE(x, nullptr);
    for (Edata* x : e) pac->dalloc(x);
    if (!hold) {
      EXPECT_EQ(pac->counter(PacCounter::oversize_purged), 4 * kBlock / kPg);
      EXPECT_EQ(pac->ndirty(), 0u);
      continue;
    }
    EXPECT_EQ(pac->counter(PacCounter::oversize_purged), 0u);
    EXPECT_EQ(pac->ndirty(), 4 * kBlock / kPg);
    const size_t retained = pac->nretained();
    for (auto& x : e) x = pac->alloc(kBlock, kPg, false);
    for (Edata* x : e) ASSERT_NE(x, nullptr);
    EXPECT_EQ(pac->nretained(), retained);
    EXPECT_EQ(pac->ndirty(), 0u);
    for (Edata* x : e) pac->dalloc(x);
  }
}

// Ours (opt.decay_hold_peak's slack, hold_slack): the oversize arena's rounds in a
// ClickHouse GROUP BY, per thread: an 8 MiB table replaced by a second one, then 16 MiB and
// 32 MiB tables, all freed at the end. The two freed 8 MiB neighbours (a pad page each) serve a
// 16 MiB block with one page to spare, and that page stays between the blocks: the round's
// footprint is a page more than its peak of active pages. Held to the dip alone, a page of it
// was purged, the next round's last 32 MiB block found its piece one page short, took 32 MiB
// of retained pages (faulted in) and purged the piece, round after round; the slack keeps the
// whole footprint. (Without the pad the neighbours make exactly 16 MiB: no crumb.)
TEST(Pac, HoldSlackKeepsARoundsCrumbs) {
  constexpr size_t k8 = (8 << 20) + kPad, k16 = (16 << 20) + kPad, k32 = (32 << 20) + kPad;
  PacOptions o = opts(-1, -1);
  o.hold.immediate_ms = 10'000;
  o.grow_start = size_t{256} << 20;
  Pac* pac = make_pac(o);
  uint64_t now = uint64_t{1} << 43;
  ASSERT_TRUE(pac->decay_ms_set(ExtentState::kDirty, 0, now));
  ASSERT_TRUE(pac->decay_ms_set(ExtentState::kMuzzy, 0, now));
  // As the arena frees (Arena::dirty_added): each free purges down to the hold at once.
  auto free_block = [&](Edata* e) {
    pac->dalloc(e);
    bool advanced;
    now += 1'000'000;
    ASSERT_TRUE(pac->try_decay(ExtentState::kDirty, now, Pac::Eagerness::kAlways, &advanced));
  };
  size_t retained = 0;
  for (int round = 0; round < 3; round++) {
    Edata* t[2][3];
    Edata* first[2];
    for (int i = 0; i < 2; i++) first[i] = pac->alloc(k8, kPg, false);
    for (int i = 0; i < 2; i++) t[i][0] = pac->alloc(k8, kPg, false);
    for (int i = 0; i < 2; i++) free_block(first[i]);
    for (int i = 0; i < 2; i++) t[i][1] = pac->alloc(k16, kPg, false);
    for (int i = 0; i < 2; i++) t[i][2] = pac->alloc(k32, kPg, false);
    for (auto& row : t) {
      for (Edata* e : row) ASSERT_NE(e, nullptr);
    }
    if (round == 0) {
      retained = pac->nretained();
    } else {
      EXPECT_EQ(pac->nretained(), retained) << "round " << round << " took new pages";
    }
    for (auto& row : t) {
      for (int j = 2; j >= 0; j--) free_block(row[j]);
    }
    // Held: the round's whole footprint, its peak of active pages and the crumb beside them.
    EXPECT_EQ(pac->ndirty(), (2 * (k8 + k16 + k32) + kPad) / kPg) << "round " << round;
    EXPECT_EQ(pac->counter(PacCounter::dirty_purged), 0u) << "round " << round;
  }
  // Idle: once the peak has aged out and two whole windows passed with no activity, nothing
  // is held, the slack included.
  bool advanced;
  ASSERT_TRUE(pac->try_decay(ExtentState::kDirty, now + 20'000'000'000, Pac::Eagerness::kAlways,
                             &advanced));
  EXPECT_EQ(pac->ndirty(), 0u);
}

// Ours (PacOptions::grow_start, the oversize arena with opt.oversize_hold): one big first
// reservation keeps a round's blocks side by side, so that two freed neighbours merge into a
// piece the round's next bigger block fits; the growth series from 2 MiB maps them apart.
// Under an address-space limit below the reservation a block still gets a region of its own.
TEST(Pac, GrowStartKeepsBlocksSideBySide) {
  constexpr size_t kBlock = (8 << 20) + kPad;  // an 8 MiB block and its pad page
  for (size_t start : {size_t{256} << 20, size_t{0}}) {
    PacOptions o = opts(-1, -1);
    o.grow_start = start;
    Pac* pac = make_pac(o);
    Edata* a = pac->alloc(kBlock, kPg, false);
    Edata* b = pac->alloc(kBlock, kPg, false);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->base() == a->past() || a->base() == b->past(), start != 0) << start;
    if (start != 0) {
      EXPECT_GE((pac->nretained() + 2 * kBlock / kPg) * kPg, start);
    }
    pac->dalloc(a);
    pac->dalloc(b);
    // The two freed neighbours serve a 16 MiB block without growing.
    const size_t retained = pac->nretained();
    Edata* c = pac->alloc((16 << 20) + kPad, kPg, false);
    ASSERT_NE(c, nullptr);
    if (start != 0) {
      EXPECT_EQ(pac->nretained(), retained);
    }
    pac->dalloc(c);
  }
  // The fallback: a child process whose address space cannot take 256 MiB more.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    struct rlimit rl;
    long vm_kib = 0;
    char line[256];
    FILE* f = fopen("/proc/self/status", "r");
    while (f != nullptr && fgets(line, sizeof line, f) != nullptr) {
      if (strncmp(line, "VmSize:", 7) == 0) vm_kib = atol(line + 7);
    }
    if (f != nullptr) fclose(f);
    rl.rlim_cur = rl.rlim_max = static_cast<rlim_t>(vm_kib) * 1024 + (64 << 20);
    if (vm_kib == 0 || setrlimit(RLIMIT_AS, &rl) != 0) _exit(2);
    PacOptions o = opts(-1, -1);
    o.grow_start = size_t{256} << 20;
    Pac* pac = make_pac(o);
    Edata* a = pac->alloc(kBlock, kPg, false);
    Edata* b = pac->alloc(kBlock, kPg, false);
    _exit(a != nullptr && b != nullptr ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Ours (opt.decay_hold_peak's shared budget): a Pac that shares the budget publishes its
// active pages in whole granules (exactly floor(active / granule) of them, however its count
// moved), the budget's peak keeps the highest sum, and a hold cap of 0 leaves decay to its curve.
TEST(Pac, HoldBudgetPublishesGranules) {
  constexpr size_t kG = hold_budget::kGranulePages;
  PacOptions o = opts(-1, -1);
  o.hold.shares_budget = true;
  Pac* pac = make_pac(o);
  const size_t base = hold_budget::active_pages();
  constexpr int kN = 256;  // 2 pages each: 512 pages
  Edata* e[kN];
  for (auto& x : e) x = pac->alloc(8 * kKiB, kPg, false);
  EXPECT_EQ(hold_budget::active_pages() - base, (2 * kN / kG) * kG);
  const uint64_t t0 = uint64_t{1} << 41;
  EXPECT_GE(hold_budget::peak_pages(t0, 1000), base + (2 * kN / kG) * kG);
  for (int i = 0; i < kN; i += 3) pac->dalloc(e[i]);  // 86 extents: 172 pages
  const size_t active = pac->nactive();
  EXPECT_EQ(active, 2u * kN - 172);
  EXPECT_EQ(hold_budget::active_pages() - base, active / kG * kG);
  // The peak stays within the window and is forgotten two half windows later.
  EXPECT_GE(hold_budget::peak_pages(t0 + 100'000'000, 1000), base + (2 * kN / kG) * kG);
  hold_budget::peak_pages(t0 + 1'200'000'000, 1000);
  EXPECT_EQ(hold_budget::peak_pages(t0 + 2'400'000'000, 1000), hold_budget::active_pages());
  // A cap of 0: the freed pages go by the curve alone, as without the hold (all by the end).
  const uint64_t t1 = uint64_t{1} << 42;
  ASSERT_TRUE(pac->decay_ms_set(ExtentState::kDirty, 1000, t1));
  const size_t freed = pac->ndirty();
  size_t at_half = 0;
  const uint64_t interval = 1000 * 1000000ull / 200;
  for (int k = 1; k <= 205; k++) {
    bool advanced;
    ASSERT_TRUE(pac->try_decay(ExtentState::kDirty, t1 + k * interval + interval / 2,
                               Pac::Eagerness::kOnEpochAdvance, &advanced, /*hold_cap=*/0));
    if (k == 100) at_half = pac->ndirty();
  }
  EXPECT_NEAR(static_cast<double>(at_half), freed * 0.5, freed * 0.05);
  EXPECT_EQ(pac->ndirty(), 0u);
}

// The ClickHouse pattern at page level. Per round: optionally 256 one-page slabs (the 4 KiB
// class), then 256 20 KiB large extents (16 KiB + pad) -- each followed by freeing one slab, as
// the small->large realloc move does -- then all 256 large extents freed. Records, per round,
// the pages that came from retained or fresh memory (each a page fault when touched) and the
// mapped bytes after the round.
struct PatternResult {
  std::vector<size_t> faulting_pages;
  std::vector<size_t> mapped;
  size_t later_faulting(int from) const {
    size_t n = 0;
    for (size_t i = from; i < faulting_pages.size(); i++) n += faulting_pages[i];
    return n;
  }
};

PatternResult run_pattern(bool bounded, bool with_slabs, int rounds, bool ours = false) {
  PacOptions o = opts(10000, 0);
  o.placement.bounded_coalesce = bounded;
  // Our other placement options off: the bound alone vs stock 5.3 (see the last test).
  o.placement.reuse_before_grow = ours;
  o.placement.best_fit = ours;
  o.purge_on_grow = ours;
  Pac* pac = make_pac(o);
  PatternResult r;
  constexpr int kBlocks = 256;
  Edata* slabs[kBlocks] = {};
  Edata* large[kBlocks];
  auto faulting = [&] {
    return pac->counter(PacCounter::retained_alloc_pages) +
           pac->counter(PacCounter::fresh_alloc_pages);
  };
  for (int round = 0; round < rounds; round++) {
    size_t before = faulting();
    if (with_slabs) {
      for (auto& s : slabs) s = pac->alloc(4 * kKiB, kPg, false);
    }
    for (int i = 0; i < kBlocks; i++) {
      large[i] = pac->alloc(20 * kKiB, kPg, false);
      if (with_slabs) pac->dalloc(slabs[i]);
    }
    for (auto* l : large) pac->dalloc(l);
    r.faulting_pages.push_back(faulting() - before);
    r.mapped.push_back(pac->mapped());
  }
  return r;
}

void print_pattern(const char* name, const PatternResult& b, const PatternResult& u) {
  auto row = [](const char* policy, const PatternResult& r) {
    std::printf(
        "  %-9s pages from retained/fresh per round: %zu, %zu, %zu, %zu ... last %zu;"
        " total after round 2: %zu; mapped KiB after rounds 0/1/3/last: %zu/%zu/%zu/%zu\n",
        policy, r.faulting_pages[0], r.faulting_pages[1], r.faulting_pages[2], r.faulting_pages[3],
        r.faulting_pages.back(), r.later_faulting(3), r.mapped[0] >> 10, r.mapped[1] >> 10,
        r.mapped[3] >> 10, r.mapped.back() >> 10);
  };
  std::printf("%s (%zu rounds of 256 blocks, page-allocator level):\n", name,
              b.faulting_pages.size());
  row("bounded", b);
  row("unbounded", u);
}

TEST(Pac, RallocPatternLargeOnly) {
  // 256 adjacent 20 KiB extents freed, then requested again, round after round.
  constexpr int kRounds = 40;
  PatternResult b = run_pattern(true, false, kRounds);
  PatternResult u = run_pattern(false, false, kRounds);
  print_pattern("20 KiB extents", b, u);
  // Bounded: every request after the first round is served from resident dirty memory.
  EXPECT_EQ(b.later_faulting(1), 0u);
  EXPECT_EQ(b.mapped.back(), b.mapped[0]);
  // Unbounded (stock 5.3): the freed blocks merge into extents too big to reuse, so every round
  // falls through to retained/fresh memory and mapped memory keeps growing.
  for (int i = 1; i < kRounds; i++) EXPECT_GT(u.faulting_pages[i], 100u) << "round " << i;
  EXPECT_GT(u.mapped.back(), 4 * b.mapped.back());
}

TEST(Pac, RallocPatternWithSlabs) {
  // With the one-page slabs of the 4 KiB class interleaved (as the real rallocx loop does), the
  // large frees absorb the emptied slabs, so the next rounds' slabs need new pages until the
  // layout settles (jemalloc's anchor commit shows the same warm-up); then nothing faults.
  constexpr int kRounds = 40;
  PatternResult b = run_pattern(true, true, kRounds);
  PatternResult u = run_pattern(false, true, kRounds);
  print_pattern("4 KiB slabs + 20 KiB extents", b, u);
  EXPECT_EQ(b.later_faulting(3), 0u);
  EXPECT_EQ(b.mapped.back(), b.mapped[3]);
  for (int i = 1; i < kRounds; i++) EXPECT_GT(u.faulting_pages[i], 100u) << "round " << i;
  EXPECT_GT(u.mapped.back(), 4 * b.mapped.back());
}

// A burst of `n` extents of `size` bytes, all freed, then requested again: the pages the second
// burst takes from retained or fresh memory (each a page fault when touched) and the pages the
// free path purged. No memory is touched here, so large sweeps stay cheap.
struct BurstResult {
  size_t faulting_pages;
  uint64_t purged;
};

BurstResult burst_twice(Pac* pac, size_t size, size_t n) {
  std::vector<Edata*> v(n);
  auto faulting = [&] {
    return pac->counter(PacCounter::retained_alloc_pages) +
           pac->counter(PacCounter::fresh_alloc_pages);
  };
  for (auto& e : v) e = pac->alloc(size, kPg, false);
  for (auto* e : v) pac->dalloc(e);
  size_t before = faulting();
  for (auto& e : v) e = pac->alloc(size, kPg, false);
  BurstResult r{faulting() - before, pac->counter(PacCounter::dirty_purged)};
  for (auto* e : v) pac->dalloc(e);
  return r;
}

TEST(Pac, BurstsAreReusedAtEverySize) {
  // Extent sizes of allocations (class + pad) from 16 KiB to 6 MiB, among them the 30-420 KiB
  // band whose merged extents used to land in a bin their own size never searches, and sizes
  // whose bound passes the 8 MiB oversize threshold. Default decay (10 s: the free path may
  // purge oversize extents inline) and decay off.
  // The bound alone must give the guarantee (reuse_before_grow off; best fit on and off), and
  // the defaults must keep it.
  struct Placement {
    bool reuse_before_grow, best_fit;
  };
  for (Placement pl : {Placement{false, false}, Placement{false, true}, Placement{true, true}})
    for (int64_t ms : {int64_t{10000}, int64_t{-1}}) {
      for (size_t usize = 16 * kKiB; usize <= 6 * 1024 * kKiB; usize = sz::s2u(usize + 1)) {
        size_t size = usize + sz::kLargePad;
        size_t n = std::max<size_t>(32, (64 * 1024 * kKiB) / size);  // >= 64 MiB per burst
        PacOptions o = opts(ms, 0);
        o.placement.reuse_before_grow = pl.reuse_before_grow;
        o.placement.best_fit = pl.best_fit;
        Pac* pac = make_pac(o);
        BurstResult r = burst_twice(pac, size, n);
        EXPECT_EQ(r.faulting_pages, 0u)
            << "extent " << size << " decay " << ms << " reuse_before_grow " << pl.reuse_before_grow
            << " best_fit " << pl.best_fit;
        EXPECT_EQ(r.purged, 0u) << "extent " << size << " decay " << ms;
        pac->destroy_retained();
        pac->decay_all(ExtentState::kDirty, true);
        pac->destroy_retained();
      }
    }
}

TEST(Pac, UnboundedBurstsAreNotReused) {
  // The same burst under 5.3.0's unbounded merging and placement (decay off): at 116 KiB the
  // merged extents are out of the requests' reach.
  PacOptions o = opts(-1, 0);
  o.placement.bounded_coalesce = false;
  o.placement.reuse_before_grow =
      false;  // 5.3.0's placement: nothing splits the out-of-reach extents
  o.placement.best_fit = false;
  Pac* pac = make_pac(o);
  BurstResult r = burst_twice(pac, 116 * kKiB, 600);
  EXPECT_GT(r.faulting_pages, 600u * 29 / 4);  // a quarter of the 29-page extents or more
}

TEST(Pac, LentExtentBecomesTheBorrowers) {
  // Ours (opt.borrow_dirty, slabs): a free extent of one Pac, lent and adopted, is the other's:
  // its arena index, the borrower's active and mapped pages, no longer the lender's mapped
  // ones. Freed by the borrower it stays the borrower's: no merge with the lender's free
  // neighbour beside it.
  Pac* lender = make_pac(opts(-1, 0));
  Pac* borrower = make_pac(opts(-1, 0));
  Edata* x[3];
  for (auto& e : x) e = lender->alloc(128 * kKiB + kPad, kPg, false);
  lender->alloc(4 * kKiB, kPg, false);  // fence
  for (Edata* e : x) lender->dalloc(e);
  const size_t freed = 3 * (128 * kKiB + kPad);
  ASSERT_EQ(ecache_sizes(dirty_ecache(lender)), (std::vector<size_t>{freed}));
  const size_t lender_mapped = lender->mapped();
  ExtentState was = ExtentState::kActive;
  Edata* e = lender->lend(128 * kKiB + kPad, &was);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(was, ExtentState::kDirty);
  EXPECT_EQ(lender->mapped(), lender_mapped - e->size);
  EXPECT_EQ(lender->ndirty() * kPg, freed - e->size);
  borrower->adopt(e, was);
  EXPECT_EQ(e->arena_ind, borrower->ind());
  EXPECT_EQ(borrower->nactive() * kPg, e->size);
  EXPECT_EQ(borrower->mapped(), e->size);
  EXPECT_EQ(state_at(e->base()), ExtentState::kActive);
  borrower->dalloc(e);
  EXPECT_EQ(ecache_sizes(dirty_ecache(borrower)), (std::vector<size_t>{128 * kKiB + kPad}));
  EXPECT_EQ(ecache_sizes(dirty_ecache(lender)), (std::vector<size_t>{freed - (128 * kKiB + kPad)}));
  EXPECT_EQ(borrower->nactive(), 0u);
  // Nothing cached of that size: nothing lent.
  EXPECT_EQ(borrower->lend(freed, &was), nullptr);
}

TEST(Pac, EvictionHandsOutWhatItMerged) {
  // Three adjacent 1 MiB extents that the bound kept apart (lg fit 0). A purge that wants one
  // extent's pages takes the oldest alone; one that wants everything merges the rest and takes
  // it whole. Nothing merged is put back into the dirty cache. One first reservation keeps
  // the three side by side in either layout (the 2 MiB growth series would put the second or
  // the third in a region of its own, depending on the pad).
  PacOptions o = opts(-1, 0);
  o.lg_max_fit = 0;
  o.grow_start = size_t{64} << 20;
  Pac* pac = make_pac(o);
  Edata* e[3];
  for (auto& x : e) x = pac->alloc(1024 * kKiB, kPg, false);
  pac->alloc(4 * kKiB, kPg, false);  // fence
  for (auto* x : e) pac->dalloc(x);
  ASSERT_EQ(ecache_sizes(dirty_ecache(pac)).size(), 3u);
  Edata* v = core(pac).evict(ExtentState::kDirty, 0, 256);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->size, 1024 * kKiB);
  EXPECT_EQ(ecache_sizes(dirty_ecache(pac)), (std::vector<size_t>{1024 * kKiB, 1024 * kKiB}));
  Edata* w = core(pac).evict(ExtentState::kDirty, 0);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->size, 2048 * kKiB);
  EXPECT_TRUE(ecache_sizes(dirty_ecache(pac)).empty());
  core(pac).dalloc_wrapper(v);
  core(pac).dalloc_wrapper(w);
}

TEST(Pac, RallocPatternUnboundedWithReuseBeforeGrow) {
  // Ours (opt.reuse_before_grow, with extent_best_fit and purge_on_grow on): with
  // 5.3.0's unbounded merging the freed blocks still merge into extents beyond the reuse
  // ratio, but the next round splits them instead of faulting in new pages; after the second
  // round (the slabs' layout settles) nothing comes from retained or fresh memory.
  constexpr int kRounds = 20;
  PatternResult u = run_pattern(false, true, kRounds, /*ours=*/true);
  PatternResult b = run_pattern(true, true, kRounds, /*ours=*/true);
  print_pattern("4 KiB slabs + 20 KiB extents, reuse_before_grow + best fit", b, u);
  EXPECT_LE(u.faulting_pages[1], 64u);
  EXPECT_EQ(u.later_faulting(2), 0u);
  EXPECT_EQ(u.mapped.back(), u.mapped[1]);
  EXPECT_EQ(b.later_faulting(3), 0u);
  EXPECT_EQ(b.mapped.back(), b.mapped[3]);
}

}  // namespace
}  // namespace je
