// slab_test.cc: regions inside a slab, for every small class of the default geometry -- a
// fresh slab has every region free; regions are handed out lowest first at base + i * size and
// stay inside the slab; the bitmap and nfree agree at every step (nfree == nregs - popcount)
// and no bit past the last region is ever set; regind maps every byte of a region back to its
// index; freed regions are reused lowest first; full <-> empty transitions; and the batch
// allocator returns exactly what the single one would, across bitmap words.
#include <gtest/gtest.h>

#include <vector>

#include "arena/bin_info.h"
#include "arena/slab.h"
#include "slab_fixture.h"

namespace je {
namespace {

/// Checks the slab invariant and that bits past the last region are clear.
void expect_consistent(const Edata& s, szind_t binind) {
  const unsigned nregs = g_bin_geo[binind].nregs;
  EXPECT_EQ(s.nfree, nregs - bitmap_popcount(&s)) << "class " << binind;
  for (size_t i = nregs; i < kSlabMaxRegs; i++) {
    ASSERT_FALSE(slab::reg_in_use(&s, i)) << "class " << binind << ": bit " << i << " set";
  }
}

uintptr_t region_addr(const Edata& s, szind_t binind, size_t i) {
  return s.base_addr() + i * size_t{g_bin_geo[binind].reg_size};
}

class SlabTest : public ::testing::Test {
 protected:
  /// A fresh slab of `binind` (every region free) at slot `slot`.
  Edata fresh(szind_t binind, unsigned slot = 0) {
    Edata s;
    init_slab(&s, binind, slot, 1);
    return s;
  }
};

TEST_F(SlabTest, GeometryFitsEveryClass) {
  for (szind_t b = 0; b < sc::kNBins; b++) {
    const BinGeometry& g = g_bin_geo[b];
    EXPECT_GE(g.nregs, 1u) << "class " << b;
    EXPECT_LE(g.nregs, kSlabMaxRegs) << "class " << b;
    EXPECT_LE(size_t{g.nregs} * g.reg_size, g.slab_size) << "class " << b;
    EXPECT_EQ(g.slab_size % config::kPage, 0u) << "class " << b;
  }
}

TEST_F(SlabTest, FreshSlabHasEveryRegionFree) {
  for (szind_t b = 0; b < sc::kNBins; b++) {
    Edata s = fresh(b);
    // Stale bits from a previous use must be cleared by init.
    for (uint64_t& w : s.slab_bitmap) w = ~uint64_t{0};
    slab::init(&s, b);
    EXPECT_EQ(s.nfree, g_bin_geo[b].nregs) << "class " << b;
    for (size_t i = 0; i < g_bin_geo[b].nregs; i++) {
      ASSERT_FALSE(slab::reg_in_use(&s, i)) << "class " << b << " region " << i;
    }
    expect_consistent(s, b);
  }
}

TEST_F(SlabTest, RegionsGoLowestFirstUntilFull) {
  for (szind_t b = 0; b < sc::kNBins; b++) {
    Edata s = fresh(b, b);
    const unsigned nregs = g_bin_geo[b].nregs;
    for (unsigned i = 0; i < nregs; i++) {
      void* p = slab::reg_alloc(&s, b);
      ASSERT_EQ(addr_of(p), region_addr(s, b, i)) << "class " << b << " region " << i;
      ASSERT_TRUE(slab::reg_in_use(&s, i));
      ASSERT_EQ(s.nfree, nregs - i - 1);
    }
    EXPECT_LE(region_addr(s, b, nregs), s.past_addr()) << "class " << b << ": region overruns";
    EXPECT_EQ(s.nfree, 0u);
    expect_consistent(s, b);
  }
}

TEST_F(SlabTest, RegindMapsEveryByteOfARegionToItsIndex) {
  for (szind_t b = 0; b < sc::kNBins; b++) {
    Edata s = fresh(b, b);
    const size_t size = g_bin_geo[b].reg_size;
    for (size_t i = 0; i < g_bin_geo[b].nregs; i++) {
      const uintptr_t r = region_addr(s, b, i);
      for (size_t off : {size_t{0}, size_t{1}, size / 2, size - 1}) {
        ASSERT_EQ(slab::regind(&s, b, ptr_of(r + off)), i)
            << "class " << b << " region " << i << " offset " << off;
      }
    }
  }
}

TEST_F(SlabTest, FreedRegionsAreReusedLowestFirst) {
  const szind_t b = class_with_nregs(256);
  Edata s = fresh(b);
  std::vector<void*> p;
  for (unsigned i = 0; i < 256; i++) p.push_back(slab::reg_alloc(&s, b));
  for (size_t i : {200, 3, 64, 63}) {
    slab::reg_free(&s, slab::regind(&s, b, p[i]));
    EXPECT_FALSE(slab::reg_in_use(&s, i)) << "region " << i << " still marked in use";
  }
  EXPECT_EQ(s.nfree, 4u);
  expect_consistent(s, b);
  for (size_t i : {3, 63, 64, 200}) {
    EXPECT_EQ(slab::reg_alloc(&s, b), p[i]) << "expected region " << i;
  }
  EXPECT_EQ(s.nfree, 0u);
  expect_consistent(s, b);
}

TEST_F(SlabTest, FullSlabEmptiesCompletelyAndRefillsInOrder) {
  for (szind_t b : {class_with_nregs(512), class_with_nregs(4), class_with_nregs(1)}) {
    Edata s = fresh(b);
    const unsigned nregs = g_bin_geo[b].nregs;
    std::vector<void*> p;
    for (unsigned i = 0; i < nregs; i++) p.push_back(slab::reg_alloc(&s, b));
    // Free in a scrambled order.
    for (unsigned i = 0; i < nregs; i++) {
      const unsigned j = (i * 7 + 3) % nregs;  // a permutation: nregs is a power of two
      slab::reg_free(&s, slab::regind(&s, b, p[j]));
      ASSERT_EQ(s.nfree, i + 1);
    }
    EXPECT_EQ(s.nfree, nregs) << "class " << b;
    EXPECT_EQ(bitmap_popcount(&s), 0u) << "class " << b;
    EXPECT_EQ(slab::reg_alloc(&s, b), p[0]) << "class " << b;
    expect_consistent(s, b);
  }
}

TEST_F(SlabTest, BatchTakesWhatSingleAllocationWould) {
  for (szind_t b = 0; b < sc::kNBins; b++) {
    const unsigned nregs = g_bin_geo[b].nregs;
    Edata batch = fresh(b, b);
    // Some holes: take everything, give back every third region.
    std::vector<void*> all(nregs);
    ASSERT_EQ(slab::reg_alloc_batch(&batch, b, all.data(), nregs), nregs) << "class " << b;
    for (unsigned i = 0; i < nregs; i += 3) slab::reg_free(&batch, i);
    Edata single = batch;
    const unsigned holes = batch.nfree;
    const unsigned n = holes / 2 + 1;
    std::vector<void*> got(n);
    ASSERT_EQ(slab::reg_alloc_batch(&batch, b, got.data(), n), n) << "class " << b;
    for (unsigned i = 0; i < n; i++) {
      EXPECT_EQ(got[i], slab::reg_alloc(&single, b)) << "class " << b << " batch slot " << i;
    }
    EXPECT_EQ(batch.nfree, single.nfree);
    for (size_t w = 0; w < kSlabBitmapWords; w++) {
      EXPECT_EQ(batch.slab_bitmap[w], single.slab_bitmap[w]) << "class " << b << " word " << w;
    }
    expect_consistent(batch, b);
  }
}

TEST_F(SlabTest, BatchIsBoundedByTheFreeRegions) {
  const szind_t b = class_with_nregs(8);
  Edata s = fresh(b);
  void* out[16] = {};
  EXPECT_EQ(slab::reg_alloc_batch(&s, b, out, 0), 0u);
  EXPECT_EQ(s.nfree, 8u) << "an empty batch took regions";
  EXPECT_EQ(slab::reg_alloc_batch(&s, b, out, 3), 3u);
  EXPECT_EQ(slab::reg_alloc_batch(&s, b, out, 16), 5u) << "more than the free regions";
  EXPECT_EQ(out[4], ptr_of(region_addr(s, b, 7)));
  EXPECT_EQ(out[5], nullptr) << "wrote past what it returned";
  EXPECT_EQ(s.nfree, 0u);
  EXPECT_EQ(slab::reg_alloc_batch(&s, b, out, 4), 0u) << "a full slab gave regions";
  expect_consistent(s, b);
}

TEST_F(SlabTest, BatchCrossesBitmapWords) {
  const szind_t b = class_with_nregs(512);
  Edata s = fresh(b);
  for (int i = 0; i < 60; i++) slab::reg_alloc(&s, b);
  void* out[136];
  ASSERT_EQ(slab::reg_alloc_batch(&s, b, out, 136), 136u);
  for (unsigned i = 0; i < 136; i++) {
    ASSERT_EQ(out[i], ptr_of(region_addr(s, b, 60 + i))) << "batch slot " << i;
  }
  EXPECT_EQ(s.slab_bitmap[0], ~uint64_t{0});
  EXPECT_EQ(s.slab_bitmap[2], ~uint64_t{0});
  EXPECT_EQ(s.slab_bitmap[3], (uint64_t{1} << 4) - 1);  // regions 192..195
  expect_consistent(s, b);
}

}  // namespace
}  // namespace je
