// bin_info_test.cc: run-time bin geometry (slab_sizes, bin_shards) and its use by arenas --
// the table bin_info_boot builds, exact region indexing in slabs with a tail, slabs holding the
// configured number of regions, per-thread shard choice, frees returning to the slab's shard,
// shard-merged statistics and reset, and thread-cache capacity following the regions per slab.
//
// The geometry is process-wide and fixed before the first arena exists, so this program boots
// once with one non-default configuration (test_config() below) and every test reads it.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "arena/arena.h"
#include "arena/arenas.h"
#include "arena/bin_info.h"
#include "arena/slab.h"
#include "ctl/opt.h"
#include "extent/emap.h"
#include "thread/core_boot.h"
#include "thread/tcache.h"

namespace je {
namespace {

// Classes this configuration changes (indices into the 5.3.0 table).
constexpr szind_t k8 = 0;       // 8 B: 4 shards, default slab (1 page, 512 regions)
constexpr szind_t k32 = 2;      // 32 B: asks 100 pages, clamped to 4 (512 regions)
constexpr szind_t k48 = 3;      // 48 B: 1 page -> 85 regions and a 16-byte tail
constexpr szind_t k14336 = 35;  // 14 KiB: asks 1 page, clamped to 4 -> 1 region, 2 KiB tail
constexpr szind_t k80 = 5;      // 80 B: 3 shards, default slab

CoreConfig test_config() {
  CoreConfig c;
  auto& pages = c.slab_pages;
  pages[k32] = 100;
  pages[k48] = 1;
  pages[k14336] = 1;
  for (szind_t i : {k32, k48, k14336}) {
    pages[i] = static_cast<uint16_t>(bin_slab_pages_clamp(i, pages[i]));
  }
  c.bin_shards[k8] = 4;
  c.bin_shards[k80] = 3;
  c.bin_shards[k14336] = 64;
  return c;
}

class BinInfo : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(core_boot(test_config())); }

  static Arena* manual_arena() {
    unsigned ind = 0;
    EXPECT_TRUE(arena_create_manual(nullptr, &ind));
    return arena_get(ind, false);
  }

  static size_t shard_curregs(Arena* a, szind_t binind, unsigned shard) {
    Bin& b = a->bin(binind, shard);
    MutexGuard g(b.mtx);
    return b.stats.curregs;
  }
};

TEST_F(BinInfo, ClampFollowsTheRegionLimits) {
  if (config::kLgPage != 12) GTEST_SKIP() << "literal 4 KiB-page geometry";
  EXPECT_EQ(bin_slab_pages_clamp(k8, 0), 1u);     // at least one region's pages
  EXPECT_EQ(bin_slab_pages_clamp(k8, 2), 1u);     // 512 regions of 8 B fill one page
  EXPECT_EQ(bin_slab_pages_clamp(k32, 100), 4u);  // 512 x 32 B = 4 pages
  EXPECT_EQ(bin_slab_pages_clamp(k48, 1), 1u);
  EXPECT_EQ(bin_slab_pages_clamp(k14336, 1), 4u);        // one 14 KiB region needs 4 pages
  EXPECT_EQ(bin_slab_pages_clamp(k14336, 5000), 1792u);  // 512 regions
}

TEST_F(BinInfo, BootBuildsTheConfiguredGeometry) {
  if (config::kLgPage != 12) GTEST_SKIP() << "literal 4 KiB-page geometry";
  EXPECT_EQ(g_bin_geo[k8].nregs, 512u);
  EXPECT_EQ(g_bin_geo[k8].slab_size, 4096u);
  EXPECT_EQ(g_bin_geo[k32].slab_size, 4u * 4096);
  EXPECT_EQ(g_bin_geo[k32].nregs, 512u);
  EXPECT_EQ(g_bin_geo[k48].slab_size, 4096u);
  EXPECT_EQ(g_bin_geo[k48].nregs, 85u);
  EXPECT_EQ(g_bin_geo[k14336].slab_size, 4u * 4096);
  EXPECT_EQ(g_bin_geo[k14336].nregs, 1u);
  // Untouched classes keep the default geometry.
  for (szind_t i = 0; i < sc::kNBins; i++) {
    EXPECT_EQ(g_bin_geo[i].reg_size, sc::kBinInfo[i].reg_size);
    if (i != k32 && i != k48 && i != k14336) {
      EXPECT_EQ(g_bin_geo[i].slab_size, sc::kBinInfo[i].slab_size) << i;
      EXPECT_EQ(g_bin_geo[i].nregs, sc::kBinInfo[i].nregs) << i;
    }
    EXPECT_LE(size_t{g_bin_geo[i].nregs} * g_bin_geo[i].reg_size, g_bin_geo[i].slab_size);
    EXPECT_GT(size_t{g_bin_geo[i].nregs + 1} * g_bin_geo[i].reg_size, g_bin_geo[i].slab_size);
  }
  // Shards and their placement in an arena's bin array.
  unsigned base = 0;
  for (szind_t i = 0; i < sc::kNBins; i++) {
    EXPECT_EQ(g_bin_geo[i].shard_base, base) << i;
    base += g_bin_geo[i].nshards;
  }
  EXPECT_EQ(g_nbins_total, base);
  EXPECT_EQ(g_nbins_total, sc::kNBins - 3 + 4 + 3 + 64);
}

TEST_F(BinInfo, RegionIndexIsExactInTheLargestSlabs) {
  // Every class at its largest slab (512 regions), including offsets past the last region's
  // start that a tail leaves.
  Edata slab;
  slab.addr = ptr_of(uintptr_t{1} << 40);
  for (szind_t i = 0; i < sc::kNBins; i++) {
    const size_t reg = g_bin_geo[i].reg_size;
    for (size_t k = 0; k < kSlabMaxRegs; k++) {
      const void* p = ptr_of(slab.base_addr() + k * reg);
      ASSERT_EQ(slab::regind(&slab, i, p), k) << "class " << i << " region " << k;
    }
  }
}

TEST_F(BinInfo, SlabsHoldTheConfiguredRegionCount) {
  Arena* a = manual_arena();
  ASSERT_NE(a, nullptr);
  for (szind_t binind : {k48, k14336, k32}) {
    const unsigned nregs = g_bin_geo[binind].nregs;
    std::vector<void*> v;
    for (unsigned i = 0; i < nregs + 1; i++) v.push_back(a->malloc_small(binind, false));
    std::set<Edata*> slabs;
    for (void* p : v) {
      ASSERT_NE(p, nullptr);
      Edata* s = g_emap.lookup(p);
      ASSERT_NE(s, nullptr);
      EXPECT_TRUE(s->slab);
      EXPECT_EQ(s->size, g_bin_geo[binind].slab_size);
      // Regions never reach into the tail.
      EXPECT_LE(addr_of(p) + g_bin_geo[binind].reg_size,
                s->base_addr() + size_t{nregs} * g_bin_geo[binind].reg_size);
      slabs.insert(s);
    }
    EXPECT_EQ(slabs.size(), 2u) << "class " << binind;  // nregs fill one slab exactly
    // The interior pages of a multi-page slab find it too.
    for (Edata* s : slabs) {
      for (uintptr_t pg = s->base_addr(); pg < s->past_addr(); pg += config::kPage) {
        EXPECT_EQ(g_emap.lookup(ptr_of(pg)), s);
      }
    }
    for (void* p : v) a->dalloc_small(g_emap.lookup(p), binind, p);
    EXPECT_EQ(shard_curregs(a, binind, 0), 0u);
  }
  EXPECT_TRUE(arena_destroy_manual(a->ind()));
}

TEST_F(BinInfo, ThreadsOfAnArenaSpreadOverTheShardsAndFreesGoHome) {
  Arena* a = manual_arena();
  ASSERT_NE(a, nullptr);
  // Each new thread binds to the arena (taking the next ticket) and allocates one 8-byte
  // region; four threads cover the four shards.
  constexpr unsigned kThreads = 4;
  void* ptrs[kThreads] = {};
  unsigned shard_of[kThreads] = {};
  for (unsigned t = 0; t < kThreads; t++) {
    std::thread([&, t] {
      arena_bind(a);
      shard_of[t] = t_bin_shards.shard[k8];
      ptrs[t] = a->malloc_small(k8, false);
      // The other classes use the same ticket modulo their own shard count.
      EXPECT_EQ(t_bin_shards.shard[k80], t % 3);
      EXPECT_EQ(t_bin_shards.shard[k48], 0u);
      EXPECT_EQ(t_bin_shards.shard[k14336], t);
      arena_unbind(a);
    }).join();
  }
  std::set<unsigned> shards;
  std::set<Edata*> slabs;
  for (unsigned t = 0; t < kThreads; t++) {
    ASSERT_NE(ptrs[t], nullptr);
    Edata* s = g_emap.lookup(ptrs[t]);
    EXPECT_EQ(s->binshard, shard_of[t]);
    shards.insert(shard_of[t]);
    slabs.insert(s);
    EXPECT_EQ(shard_curregs(a, k8, shard_of[t]), 1u);
  }
  EXPECT_EQ(shards.size(), kThreads);
  EXPECT_EQ(slabs.size(), kThreads);  // one slab per shard

  // A binding after the first keeps the thread's shards (thread.arena, percpu migration).
  std::thread([&] {
    arena_bind(a);
    const unsigned first = t_bin_shards.shard[k8];
    arena_unbind(a);
    arena_bind(a);
    EXPECT_EQ(t_bin_shards.shard[k8], first);
    arena_unbind(a);
  }).join();

  // This thread frees all four: each region returns to the shard its slab belongs to, and the
  // now-empty slabs leave their bins.
  for (unsigned t = 0; t < kThreads; t++) {
    a->dalloc_small(g_emap.lookup(ptrs[t]), k8, ptrs[t]);
    EXPECT_EQ(shard_curregs(a, k8, shard_of[t]), 0u);
  }
  for (unsigned s = 0; s < g_bin_geo[k8].nshards; s++) {
    Bin& b = a->bin(k8, s);
    MutexGuard g(b.mtx);
    EXPECT_EQ(b.stats.nmalloc, 1u);
    EXPECT_EQ(b.stats.ndalloc, 1u);
    EXPECT_EQ(b.stats.curslabs, 0u);
  }
  EXPECT_TRUE(arena_destroy_manual(a->ind()));
}

TEST_F(BinInfo, ResetEmptiesEveryShard) {
  Arena* a = manual_arena();
  ASSERT_NE(a, nullptr);
  for (unsigned t = 0; t < 3; t++) {
    std::thread([&] {
      arena_bind(a);
      for (int i = 0; i < 100; i++) ASSERT_NE(a->malloc_small(k80, false), nullptr);
      arena_unbind(a);
    }).join();
  }
  size_t total = 0;
  for (unsigned s = 0; s < 3; s++) {
    EXPECT_EQ(shard_curregs(a, k80, s), 100u);
    total += shard_curregs(a, k80, s);
  }
  EXPECT_EQ(total, 300u);
  a->reset();
  for (unsigned s = 0; s < 3; s++) {
    Bin& b = a->bin(k80, s);
    MutexGuard g(b.mtx);
    EXPECT_EQ(b.stats.curregs, 0u);
    EXPECT_EQ(b.stats.curslabs, 0u);
    EXPECT_EQ(b.slabcur, nullptr);
  }
  EXPECT_EQ(a->nactive(), 0u);
  EXPECT_TRUE(arena_destroy_manual(a->ind()));
}

TEST_F(BinInfo, ThreadCacheCapacityFollowsRegionsPerSlab) {
  if (config::kLgPage != 12) GTEST_SKIP() << "literal 4 KiB-page geometry";
  // Small classes cache 2 x regions per slab, clamped to [20, 200] (5.3.0 defaults): 85
  // regions give 170 slots where the default 48-byte slab (256 regions) gives 200.
  EXPECT_EQ(g_tcache_geo.ncached_max[k48], 170u);
  EXPECT_EQ(g_tcache_geo.ncached_max[k14336], 20u);  // 1 region -> 2 -> the minimum
  EXPECT_EQ(g_tcache_geo.ncached_max[k8], 200u);
}

}  // namespace
}  // namespace je
