// ctl_stats_test.cc: the statistics snapshot -- meanings, invariants, merged and destroyed views.
//
// Drives real arenas through the Arena API (no public allocation names in libcore) and checks
// what `stats.*` reports after an `epoch` write.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "arena/arena.h"
#include "arena/arenas.h"
#include "ctl/ctl.h"
#include "extent/emap.h"
#include "meta/base.h"
#include "meta/sc.h"
#include "meta/sz.h"
#include "os/pages.h"
#include "support/config.h"
#include "thread/core_boot.h"
#include "thread/tcache.h"
#include "thread/tsd.h"

namespace je {
namespace {

constexpr size_t kPage = config::kPage;

class CtlStats : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!config::kStats) GTEST_SKIP() << "built with --disable-stats";
  }
  static void SetUpTestSuite() { ASSERT_TRUE(core_boot(CoreConfig{})); }

  template <class T>
  static T read(const std::string& name) {
    T v{};
    size_t len = sizeof(T);
    EXPECT_EQ(ctl_byname(name.c_str(), &v, &len, nullptr, 0), 0) << name;
    return v;
  }
  template <class T>
  static T astat(size_t ind, const std::string& leaf) {
    return read<T>("stats.arenas." + std::to_string(ind) + "." + leaf);
  }
  static void epoch() {
    uint64_t e = 1;
    ASSERT_EQ(ctl_byname("epoch", nullptr, nullptr, &e, sizeof(e)), 0);
  }
  static int act(const std::string& name) {
    return ctl_byname(name.c_str(), nullptr, nullptr, nullptr, 0);
  }
  /// A fresh manual arena that never purges on its own (decay -1), so tests see exact pages.
  static unsigned manual_arena(Arena** out) {
    unsigned ind = 0;
    size_t len = sizeof(ind);
    EXPECT_EQ(ctl_byname("arenas.create", &ind, &len, nullptr, 0), 0);
    ssize_t never = -1;
    std::string n = "arena." + std::to_string(ind) + ".dirty_decay_ms";
    EXPECT_EQ(ctl_byname(n.c_str(), nullptr, nullptr, &never, sizeof(never)), 0);
    *out = arena_get(ind, false);
    EXPECT_NE(*out, nullptr);
    return ind;
  }

  static void check_invariants(size_t ind) {
    size_t allocated =
        astat<size_t>(ind, "small.allocated") + astat<size_t>(ind, "large.allocated");
    size_t active = astat<size_t>(ind, "pactive") * kPage;
    size_t resident = astat<size_t>(ind, "resident");
    size_t mapped = astat<size_t>(ind, "mapped");
    EXPECT_LE(allocated, active) << "arena " << ind;
    EXPECT_LE(active, resident) << "arena " << ind;
    EXPECT_LE(active, mapped) << "arena " << ind;
  }
  static void check_global_invariants() {
    size_t allocated = read<size_t>("stats.allocated");
    size_t active = read<size_t>("stats.active");
    size_t resident = read<size_t>("stats.resident");
    size_t mapped = read<size_t>("stats.mapped");
    EXPECT_LE(allocated, active);
    EXPECT_LE(active, resident);
    EXPECT_LE(active, mapped);
    EXPECT_GT(read<size_t>("stats.metadata"), 0u);
    EXPECT_LE(read<size_t>("stats.metadata"), mapped);
  }
};

TEST_F(CtlStats, TypesAndMergedViewDefaults) {
  epoch();
  EXPECT_STREQ(astat<const char*>(4096, "dss"), "N/A");
  EXPECT_EQ(astat<ssize_t>(4096, "dirty_decay_ms"), -1);
  EXPECT_EQ(astat<ssize_t>(4096, "muzzy_decay_ms"), -1);
  EXPECT_STREQ(astat<const char*>(0, "dss"), "disabled");
  EXPECT_EQ(astat<ssize_t>(0, "dirty_decay_ms"), 10000);
  EXPECT_GT(astat<uint64_t>(0, "uptime"), 0u);
  EXPECT_EQ(astat<uint64_t>(4096, "uptime"), astat<uint64_t>(0, "uptime"));
  EXPECT_EQ(astat<size_t>(0, "hpa_sec_bytes"), 0u);
  EXPECT_EQ(astat<size_t>(0, "tcache_stashed_bytes"), 0u);
  EXPECT_EQ(astat<uint64_t>(0, "hpa_shard.npurges"), 0u);
  EXPECT_EQ(astat<size_t>(0, "hpa_shard.nonfull_slabs.63.ndirty_huge"), 0u);
  EXPECT_EQ(read<size_t>("stats.background_thread.num_threads"), 0u);
  // Widths: nthreads is an unsigned, max_num_thds a uint32_t, the rest 8 bytes.
  uint64_t wide;
  size_t len = sizeof(wide);
  EXPECT_EQ(ctl_byname("stats.arenas.0.nthreads", &wide, &len, nullptr, 0), EINVAL);
  EXPECT_EQ(len, 4u);
  len = sizeof(wide);
  EXPECT_EQ(ctl_byname("stats.mutexes.ctl.max_num_thds", &wide, &len, nullptr, 0), EINVAL);
  EXPECT_EQ(len, 4u);
  // Every arena mutex group reads; those of features not built read 0.
  EXPECT_GT(astat<uint64_t>(0, "mutexes.base.num_ops"), 0u);
  EXPECT_EQ(read<uint64_t>("stats.arenas.0.mutexes.hpa_sec.num_ops"), 0u);
  // metadata = base + internal (5.3.0's definition), over all arenas.
  EXPECT_EQ(read<size_t>("stats.metadata"),
            astat<size_t>(4096, "base") + astat<size_t>(4096, "internal"));
}

TEST_F(CtlStats, SmallAndLargeAccounting) {
  Arena* a;
  unsigned ind = manual_arena(&a);
  constexpr szind_t kBin = 5;  // 80 bytes, 256 per 20 KiB slab
  constexpr unsigned kN = 300;
  std::vector<void*> smalls;
  for (unsigned i = 0; i < kN; i++) smalls.push_back(a->malloc_small(kBin, false));
  constexpr size_t kLarge = 32768;
  std::vector<void*> larges;
  for (int i = 0; i < 3; i++) larges.push_back(a->malloc_large(kLarge, 64, false));
  for (void* p : larges) ASSERT_NE(p, nullptr);
  epoch();

  const std::string bin = "bins." + std::to_string(kBin) + ".";
  EXPECT_EQ(astat<size_t>(ind, bin + "curregs"), kN);
  EXPECT_EQ(astat<uint64_t>(ind, bin + "nmalloc"), kN);
  EXPECT_EQ(astat<size_t>(ind, bin + "curslabs"), 2u);
  EXPECT_EQ(astat<uint64_t>(ind, bin + "nslabs"), 2u);
  EXPECT_GT(astat<uint64_t>(ind, bin + "mutex.num_ops"), 0u);
  EXPECT_EQ(astat<size_t>(ind, "small.allocated"), kN * 80);
  EXPECT_EQ(astat<uint64_t>(ind, "small.nmalloc"), kN);

  const szind_t lj = sz::size2index(kLarge) - sc::kNBins;
  const std::string lext = "lextents." + std::to_string(lj) + ".";
  EXPECT_EQ(astat<size_t>(ind, lext + "curlextents"), 3u);
  EXPECT_EQ(astat<uint64_t>(ind, lext + "nmalloc"), 3u);
  EXPECT_EQ(astat<size_t>(ind, "large.allocated"), 3 * kLarge);
  EXPECT_EQ(astat<uint64_t>(ind, "large.nmalloc"), 3u);
  EXPECT_EQ(astat<uint64_t>(ind, "large.nfills"), 3u);
  // Two 20 KiB slabs and three 32 KiB extents with their cache-oblivious pad page.
  EXPECT_EQ(astat<size_t>(ind, "pactive") * kPage, 2 * 20480 + 3 * (kLarge + sz::kLargePad));
  check_invariants(ind);
  check_global_invariants();

  // Nothing changes until the next epoch.
  a->dalloc_large(g_emap.lookup(larges[0]));
  EXPECT_EQ(astat<size_t>(ind, lext + "curlextents"), 3u);
  epoch();
  EXPECT_EQ(astat<size_t>(ind, lext + "curlextents"), 2u);
  EXPECT_EQ(astat<uint64_t>(ind, lext + "ndalloc"), 1u);
  // The freed extent sits in the dirty cache (this arena never purges by itself).
  EXPECT_GE(astat<size_t>(ind, "pdirty") * kPage, kLarge + sz::kLargePad);
  size_t dirty_bytes = 0;
  size_t ndirty = 0;
  for (unsigned j = 0; j < sc::kNPSizes; j++) {
    dirty_bytes += astat<size_t>(ind, "extents." + std::to_string(j) + ".dirty_bytes");
    ndirty += astat<size_t>(ind, "extents." + std::to_string(j) + ".ndirty");
  }
  EXPECT_EQ(dirty_bytes, astat<size_t>(ind, "pdirty") * kPage);
  EXPECT_GE(ndirty, 1u);
  check_invariants(ind);

  // Reuse from the dirty cache is visible in our counters.
  uint64_t from_dirty = astat<uint64_t>(ind, "dirty_allocs");
  EXPECT_GE(astat<uint64_t>(ind, "fresh_allocs") + astat<uint64_t>(ind, "retained_allocs"), 1u);
  larges[0] = a->malloc_large(kLarge, 64, false);
  epoch();
  EXPECT_EQ(astat<uint64_t>(ind, "dirty_allocs"), from_dirty + 1);
  EXPECT_GE(astat<uint64_t>(ind, "dirty_alloc_pages"), (kLarge + sz::kLargePad) / kPage);

  // Purge: the dirty pages go, the purge counters move.
  for (void* p : larges) a->dalloc_large(g_emap.lookup(p));
  for (void* p : smalls) a->dalloc_small(g_emap.lookup(p), kBin, p);
  epoch();
  EXPECT_GT(astat<size_t>(ind, "pdirty"), 0u);
  uint64_t npurge = astat<uint64_t>(ind, "dirty_npurge");
  ASSERT_EQ(act("arena." + std::to_string(ind) + ".purge"), 0);
  epoch();
  EXPECT_EQ(astat<size_t>(ind, "pdirty"), 0u);
  EXPECT_EQ(astat<size_t>(ind, "pactive"), 0u);
  EXPECT_GT(astat<uint64_t>(ind, "dirty_npurge"), npurge);
  EXPECT_GT(astat<uint64_t>(ind, "dirty_purged"), 0u);
  EXPECT_GT(astat<size_t>(ind, "retained"), 0u);
  check_invariants(ind);

  // Destroyed: the counters move to the destroyed view, the gauges do not.
  uint64_t small_nmalloc = 0;  // the destroyed view exists only once an arena was destroyed
  size_t len = sizeof(small_nmalloc);
  ctl_byname("stats.arenas.4097.small.nmalloc", &small_nmalloc, &len, nullptr, 0);
  ASSERT_EQ(act("arena." + std::to_string(ind) + ".destroy"), 0);
  EXPECT_EQ(astat<uint64_t>(4097, "small.nmalloc"), small_nmalloc + kN);
  EXPECT_EQ(astat<size_t>(4097, bin + "curregs"), 0u);
  EXPECT_EQ(astat<size_t>(4097, "pactive"), 0u);
  EXPECT_STREQ(astat<const char*>(4097, "dss"), "N/A");
  EXPECT_EQ(astat<uint64_t>(4097, "uptime"), 0u);
}

TEST_F(CtlStats, MergedViewSumsTheArenas) {
  tsd_fetch();  // this thread's cache: internal bytes in arena 0
  // Some activity in two arenas.
  Arena* a;
  unsigned ind = manual_arena(&a);
  void* p = a->malloc_large(65536, 64, false);
  Arena* a0 = arena_get(0, false);
  void* q = a0->malloc_small(10, false);
  epoch();

  const unsigned n = read<unsigned>("arenas.narenas");
  size_t pactive = 0, mapped = 0, resident = 0, allocated = 0, base = 0, internal = 0;
  unsigned nthreads = 0;
  uint64_t nmalloc = 0;
  for (unsigned i = 0; i < n; i++) {
    bool init = false;
    size_t len = sizeof(init);
    std::string name = "arena." + std::to_string(i) + ".initialized";
    ASSERT_EQ(ctl_byname(name.c_str(), &init, &len, nullptr, 0), 0);
    if (!init) {
      size_t v;
      len = sizeof(v);
      std::string s = "stats.arenas." + std::to_string(i) + ".pactive";
      EXPECT_EQ(ctl_byname(s.c_str(), &v, &len, nullptr, 0), ENOENT);
      continue;
    }
    pactive += astat<size_t>(i, "pactive");
    mapped += astat<size_t>(i, "mapped");
    resident += astat<size_t>(i, "resident");
    base += astat<size_t>(i, "base");
    internal += astat<size_t>(i, "internal");
    allocated += astat<size_t>(i, "small.allocated") + astat<size_t>(i, "large.allocated");
    nthreads += astat<unsigned>(i, "nthreads");
    nmalloc += astat<uint64_t>(i, "small.nmalloc");
    check_invariants(i);
  }
  for (size_t all : {size_t{4096}, size_t{n}}) {  // the alias reads the merged view too
    EXPECT_EQ(astat<size_t>(all, "pactive"), pactive);
    EXPECT_EQ(astat<size_t>(all, "mapped"), mapped);
    EXPECT_EQ(astat<size_t>(all, "resident"), resident);
    EXPECT_EQ(astat<unsigned>(all, "nthreads"), nthreads);
    EXPECT_EQ(astat<uint64_t>(all, "small.nmalloc"), nmalloc);
  }
  EXPECT_EQ(read<size_t>("stats.active"), pactive * kPage);
  EXPECT_EQ(read<size_t>("stats.mapped"), mapped);
  EXPECT_EQ(read<size_t>("stats.resident"), resident);
  EXPECT_EQ(read<size_t>("stats.allocated"), allocated);
  EXPECT_GT(internal, 0u);  // this thread's cache slots, at least
  EXPECT_EQ(astat<size_t>(4096, "internal"), internal);
  EXPECT_EQ(read<size_t>("stats.metadata"), base + internal);
  EXPECT_EQ(read<size_t>("stats.retained"), astat<size_t>(4096, "retained"));
  check_invariants(4096);
  check_global_invariants();

  a->dalloc_large(g_emap.lookup(p));
  a0->dalloc_small(g_emap.lookup(q), 10, q);
  ASSERT_EQ(act("arena." + std::to_string(ind) + ".destroy"), 0);
}

TEST_F(CtlStats, TcacheBytes) {
  Tsd& tsd = tsd_fetch();
  Tcache* t = tsd_tcache(tsd);
  ASSERT_NE(t, nullptr);
  unsigned ind = tsd_arena(tsd)->ind();
  ASSERT_EQ(act("thread.tcache.flush"), 0);
  epoch();
  EXPECT_EQ(astat<size_t>(ind, "tcache_bytes"), 0u);
  void* p = tcache_alloc_small_hard(t, tsd_arena(tsd), 2);  // fills the bin, pops one
  ASSERT_NE(p, nullptr);
  epoch();
  size_t cached = astat<size_t>(ind, "tcache_bytes");
  EXPECT_GT(cached, 0u);
  EXPECT_EQ(cached % sz::index2size(2), 0u);
  EXPECT_EQ(astat<size_t>(4096, "tcache_bytes"), cached);
  ASSERT_EQ(act("thread.tcache.flush"), 0);
  epoch();
  EXPECT_EQ(astat<size_t>(ind, "tcache_bytes"), 0u);
  Edata* slab = g_emap.lookup(p);
  arena_get(slab->arena_ind, false)->dalloc_small(slab, 2, p);
}

TEST_F(CtlStats, MutexCounters) {
  epoch();
  EXPECT_GT(read<uint64_t>("stats.mutexes.ctl.num_ops"), 0u);
  EXPECT_EQ(read<uint64_t>("stats.mutexes.prof.num_ops"), 0u);
  EXPECT_GT(astat<uint64_t>(0, "mutexes.extents_dirty.num_ops") +
                astat<uint64_t>(0, "mutexes.extents_retained.num_ops"),
            0u);
  ASSERT_EQ(act("stats.mutexes.reset"), 0);
  epoch();
  // Only this test's few ctl calls since the reset.
  EXPECT_LT(read<uint64_t>("stats.mutexes.ctl.num_ops"), 10u);
}

TEST_F(CtlStats, ConcurrentRefreshPurgeAndDestroy) {
  std::atomic<bool> stop{false};
  std::atomic<unsigned> rounds{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; t++) {
    threads.emplace_back([&stop, &rounds, t] {
      while (!stop.load()) {
        rounds.fetch_add(1);
        uint64_t e = 1;
        EXPECT_EQ(ctl_byname("epoch", nullptr, nullptr, &e, sizeof(e)), 0);
        size_t v;
        size_t len = sizeof(v);
        EXPECT_EQ(ctl_byname("stats.allocated", &v, &len, nullptr, 0), 0);
        EXPECT_EQ(act(t == 0 ? "arena.4096.purge" : "arena.4096.decay"), 0);
        EXPECT_EQ(act("thread.tcache.flush"), 0);
      }
    });
  }
  // Arenas come and go while the other threads refresh and purge everything.
  for (int i = 0; i < 40 || rounds.load() < 300; i++) {
    Arena* a;
    unsigned ind = manual_arena(&a);
    void* big = a->malloc_large(size_t{1} << 20, 64, false);
    void* small = a->malloc_small(7, false);
    ASSERT_NE(big, nullptr);
    ASSERT_NE(small, nullptr);
    a->dalloc_large(g_emap.lookup(big));
    a->dalloc_small(g_emap.lookup(small), 7, small);
    ASSERT_EQ(act("arena." + std::to_string(ind) + ".destroy"), 0);
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  epoch();
  check_global_invariants();
}

// ---- internal, large.nflushes, the arena mutex groups --------------------------------------

TEST_F(CtlStats, InternalCountsCacheMemoryInArenaZero) {
  Arena* a;
  unsigned ind = manual_arena(&a);
  epoch();
  const size_t i0 = astat<size_t>(0, "internal");
  const size_t stack = sz::sa2u(g_tcache_geo.stack_bytes, config::kPage);
  // A cache bound to the manual arena still takes its slot array from arena 0, as 5.3.0.
  auto* t = new Tcache();
  ASSERT_TRUE(tcache_init(t, a));
  epoch();
  EXPECT_EQ(astat<size_t>(0, "internal"), i0 + stack);
  EXPECT_EQ(astat<size_t>(ind, "internal"), 0u);
  EXPECT_EQ(read<size_t>("stats.metadata"),
            astat<size_t>(4096, "base") + astat<size_t>(4096, "internal"));
  check_invariants(0);
  check_global_invariants();
  tcache_destroy(t);
  delete t;
  epoch();
  EXPECT_EQ(astat<size_t>(0, "internal"), i0);
  // An explicit cache: one block for the structure and its slots (5.3.0's single allocation).
  unsigned tc;
  ASSERT_TRUE(tcaches_create(a, &tc));
  epoch();
  EXPECT_EQ(astat<size_t>(0, "internal"),
            i0 + sz::sa2u(sizeof(Tcache) + g_tcache_geo.stack_bytes, config::kPage));
  ASSERT_TRUE(tcaches_destroy(tc));
  epoch();
  EXPECT_EQ(astat<size_t>(0, "internal"), i0);
  ASSERT_EQ(act("arena." + std::to_string(ind) + ".destroy"), 0);
}

TEST_F(CtlStats, LargeFlushesCountInTheCacheArena) {
  Arena *a, *b;
  unsigned ia = manual_arena(&a);
  unsigned ib = manual_arena(&b);
  const szind_t bin = sz::size2index(16384);
  ASSERT_GE(bin, sc::kNBins);
  ASSERT_LT(bin, g_tcache_geo.nhbins);
  const uint64_t nlarge = g_tcache_geo.nhbins - sc::kNBins;
  auto* t = new Tcache();
  ASSERT_TRUE(tcache_init(t, a));
  epoch();
  EXPECT_EQ(astat<uint64_t>(ia, "large.nflushes"), 0u);
  const uint64_t req_a = astat<uint64_t>(ia, "large.nrequests");
  // Three extents of arena b in a cache bound to a, with 7 cache hits not yet merged.
  for (int i = 0; i < 3; i++) {
    void* p = b->malloc_large(16384, 64, false);
    ASSERT_NE(p, nullptr);
    ASSERT_TRUE(t->bin(bin).push_fast(p));
  }
  t->bin(bin).nrequests = 7;
  epoch();
  const uint64_t nd_b = astat<uint64_t>(ib, "large.ndalloc");
  tcache_flush_large(t, bin, 0);
  epoch();
  // The flush counts once, in the cache's arena, with its requests; b only takes them back.
  EXPECT_EQ(astat<uint64_t>(ia, "large.nflushes"), 1u);
  EXPECT_EQ(astat<uint64_t>(ia, "large.nrequests"), req_a + 7);
  EXPECT_EQ(astat<uint64_t>(ib, "large.nflushes"), 0u);
  EXPECT_EQ(astat<uint64_t>(ib, "large.ndalloc"), nd_b + 3);
  // Flushing everything counts every large bin, empty ones too (5.3.0).
  tcache_flush_all(t);
  epoch();
  EXPECT_EQ(astat<uint64_t>(ia, "large.nflushes"), 1 + nlarge);
  // Leaving the arena merges the cache's counters there: one more per large bin (5.3.0).
  tcache_set_arena(t, b);
  epoch();
  EXPECT_EQ(astat<uint64_t>(ia, "large.nflushes"), 1 + 2 * nlarge);
  EXPECT_EQ(astat<uint64_t>(ib, "large.nflushes"), 0u);
  // Destruction: a full flush and the final merge, both in b now.
  tcache_destroy(t);
  delete t;
  epoch();
  EXPECT_EQ(astat<uint64_t>(ib, "large.nflushes"), 2 * nlarge);
  EXPECT_EQ(astat<uint64_t>(ia, "large.nflushes"), 1 + 2 * nlarge);
  EXPECT_GE(astat<uint64_t>(4096, "large.nflushes"), 1 + 4 * nlarge);  // summed
  // The destroyed view keeps the event counter.
  const uint64_t destroyed = astat<uint64_t>(4097, "large.nflushes");
  ASSERT_EQ(act("arena." + std::to_string(ia) + ".destroy"), 0);
  epoch();
  EXPECT_EQ(astat<uint64_t>(4097, "large.nflushes"), destroyed + 1 + 2 * nlarge);
  ASSERT_EQ(act("arena." + std::to_string(ib) + ".destroy"), 0);
}

TEST_F(CtlStats, SmallFlushesCountInTheCacheArena) {
  Arena *a, *b;
  unsigned ia = manual_arena(&a);
  unsigned ib = manual_arena(&b);
  constexpr szind_t kBin = 3;
  const std::string bin = "bins." + std::to_string(kBin) + ".";
  auto* t = new Tcache();
  ASSERT_TRUE(tcache_init(t, a));
  for (int i = 0; i < 5; i++) {
    void* p = b->malloc_small(kBin, false);
    ASSERT_NE(p, nullptr);
    ASSERT_TRUE(t->bin(kBin).push_fast(p));
  }
  t->bin(kBin).nrequests = 11;
  epoch();
  const uint64_t req_a = astat<uint64_t>(ia, bin + "nrequests");
  tcache_flush_small(t, kBin, 0);
  epoch();
  EXPECT_EQ(astat<uint64_t>(ia, bin + "nflushes"), 1u);
  EXPECT_EQ(astat<uint64_t>(ia, bin + "nrequests"), req_a + 11);
  EXPECT_EQ(astat<uint64_t>(ib, bin + "nflushes"), 0u);
  EXPECT_EQ(astat<uint64_t>(ib, bin + "ndalloc"), 5u);
  EXPECT_EQ(astat<size_t>(ib, bin + "curregs"), 0u);
  // Nothing left to flush: still one flush (5.3.0 counts every call).
  tcache_flush_small(t, kBin, 0);
  epoch();
  EXPECT_EQ(astat<uint64_t>(ia, bin + "nflushes"), 2u);
  EXPECT_EQ(astat<uint64_t>(ia, "small.nflushes"), 2u);
  // A move merges pending requests without counting a small flush.
  t->bin(kBin).nrequests = 4;
  tcache_set_arena(t, b);
  epoch();
  EXPECT_EQ(astat<uint64_t>(ia, bin + "nrequests"), req_a + 15);
  EXPECT_EQ(astat<uint64_t>(ia, "small.nflushes"), 2u);
  tcache_destroy(t);
  delete t;
  epoch();
  EXPECT_EQ(astat<uint64_t>(ib, "small.nflushes"), sc::kNBins);  // the final flush of every bin
  ASSERT_EQ(act("arena." + std::to_string(ia) + ".destroy"), 0);
  ASSERT_EQ(act("arena." + std::to_string(ib) + ".destroy"), 0);
}

TEST_F(CtlStats, ArenaMutexGroupsMoveAndReset) {
  Arena* a;
  unsigned ind = manual_arena(&a);
  const std::string purge = "arena." + std::to_string(ind) + ".purge";
  auto ops = [&](const char* m) {
    return astat<uint64_t>(ind, std::string("mutexes.") + m + ".num_ops");
  };
  epoch();
  // Every group of 5.3.0 reads, with its counter widths.
  for (const char* m : {"large", "extent_avail", "extents_dirty", "extents_muzzy",
                        "extents_retained", "decay_dirty", "decay_muzzy", "base", "tcache_list",
                        "hpa_shard", "hpa_shard_grow", "hpa_sec"}) {
    const std::string g = std::string("mutexes.") + m + ".";
    for (const char* c : {"num_ops", "num_wait", "num_spin_acq", "num_owner_switch",
                          "total_wait_time", "max_wait_time"}) {
      astat<uint64_t>(ind, g + c);
      astat<uint64_t>(4096, g + c);
    }
    astat<uint32_t>(ind, g + "max_num_thds");
  }
  // Reading the snapshot takes each of them once (as in 5.3.0).
  const uint64_t large0 = ops("large"), avail0 = ops("extent_avail");
  const uint64_t dd0 = ops("decay_dirty"), dm0 = ops("decay_muzzy"), base0 = ops("base");
  const uint64_t tl0 = ops("tcache_list");
  EXPECT_GT(large0, 0u);
  EXPECT_GT(base0, 0u);
  // Manual arenas list their large extents; carving and merging extents recycles descriptors;
  // purging takes both decay locks; caches register under the tcache list lock.
  for (int i = 0; i < 10; i++) {
    void* p = a->malloc_large(size_t{1} << 20, 64, false);
    ASSERT_NE(p, nullptr);
    a->dalloc_large(g_emap.lookup(p));
  }
  ASSERT_EQ(act(purge), 0);
  ASSERT_NE(a->base()->alloc(64, 8), nullptr);
  for (int i = 0; i < 20; i++) {
    auto* t = new Tcache();
    ASSERT_TRUE(tcache_init(t, a));
    tcache_destroy(t);
    delete t;
  }
  epoch();
  EXPECT_GE(ops("large"), large0 + 1 + 20);
  EXPECT_GT(ops("extent_avail"), avail0 + 1);
  EXPECT_GT(ops("decay_dirty"), dd0 + 1);
  EXPECT_GT(ops("decay_muzzy"), dm0 + 1);
  EXPECT_GT(ops("base"), base0 + 1);
  EXPECT_GE(ops("tcache_list"), tl0 + 40);
  // Merged view: summed, except the one global tcache list mutex, counted once.
  EXPECT_GE(astat<uint64_t>(4096, "mutexes.large.num_ops"), ops("large"));
  EXPECT_GE(astat<uint64_t>(4096, "mutexes.base.num_ops"),
            ops("base") + astat<uint64_t>(0, "mutexes.base.num_ops"));
  EXPECT_LT(astat<uint64_t>(4096, "mutexes.tcache_list.num_ops"),
            ops("tcache_list") + astat<uint64_t>(0, "mutexes.tcache_list.num_ops"));
  // stats.mutexes.reset zeroes them; the refresh then counts its own reads only.
  ASSERT_EQ(act("stats.mutexes.reset"), 0);
  epoch();
  const unsigned n = read<unsigned>("arenas.narenas");
  for (const char* m : {"large", "extent_avail", "decay_dirty", "decay_muzzy", "base"}) {
    EXPECT_LE(ops(m), 2u) << m;
  }
  EXPECT_LE(ops("tcache_list"), 2u * n + 2) << "one walk and one read per arena at most";
  EXPECT_LE(astat<uint64_t>(0, "mutexes.base.num_ops"), 4u);
  ASSERT_EQ(act("arena." + std::to_string(ind) + ".destroy"), 0);
}

}  // namespace
}  // namespace je
