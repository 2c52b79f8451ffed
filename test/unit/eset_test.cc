// eset_test: fit order (first fit by age across bins; ours: best fit) and the reuse bound, on
// descriptors only (no memory is touched: the eset only reads addresses and sizes).
#include <gtest/gtest.h>

#include <vector>

#include "extent/eset.h"

namespace je {
namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * kKiB;
constexpr size_t kPg = 4096;

struct EsetTest : ::testing::Test {
  Eset eset;
  std::vector<Edata*> owned;
  ~EsetTest() override {
    for (Edata* e : owned) delete e;
  }
  Edata* add(uintptr_t addr, size_t size, uint64_t sn) {
    Edata* e = new Edata();
    e->init(1, reinterpret_cast<void*>(addr), size, false, sc::kNSizes, sn, ExtentState::kDirty,
            false, true, false);
    owned.push_back(e);
    eset.insert(e);
    return e;
  }
};

TEST_F(EsetTest, EmptyFitsNothing) {
  EXPECT_EQ(eset.fit(20 * kKiB, 4096, false, 6), nullptr);
  EXPECT_EQ(eset.npages(), 0u);
}

TEST_F(EsetTest, BinOfStripsThePad) {
  // With the pad (the default layout): a 16 KiB allocation's 20 KiB extent sits in the 20 KiB
  // bin; the 1.25 MiB bin holds [1028 KiB, 1284 KiB).
  EXPECT_EQ(sz::pind2sz(Eset::bin_of(20 * kKiB, kPg)), 20 * kKiB);
  EXPECT_EQ(sz::pind2sz(Eset::bin_of(1028 * kKiB, kPg)), 1280 * kKiB);
  EXPECT_EQ(sz::pind2sz(Eset::bin_of(1280 * kKiB, kPg)), 1280 * kKiB);
  EXPECT_EQ(sz::pind2sz(Eset::bin_of(1284 * kKiB - 4 * kKiB, kPg)), 1280 * kKiB);
  EXPECT_EQ(sz::pind2sz(Eset::bin_of(1284 * kKiB, kPg)), 1536 * kKiB);
  // Without it (--disable-cache-oblivious): the 1.25 MiB bin holds [1280 KiB, 1536 KiB).
  EXPECT_EQ(sz::pind2sz(Eset::bin_of(16 * kKiB, 0)), 16 * kKiB);
  EXPECT_EQ(sz::pind2sz(Eset::bin_of(1280 * kKiB - 4 * kKiB, 0)), 1024 * kKiB);
  EXPECT_EQ(sz::pind2sz(Eset::bin_of(1280 * kKiB, 0)), 1280 * kKiB);
  EXPECT_EQ(sz::pind2sz(Eset::bin_of(1536 * kKiB - 4 * kKiB, 0)), 1280 * kKiB);
  // An instance files extents with this build's pad.
  EXPECT_EQ(Eset::bin_of(1284 * kKiB), Eset::bin_of(1284 * kKiB, sz::kLargePad));
}

TEST_F(EsetTest, PrefersOldestAcrossBins) {
  Edata* young_exact = add(0x10000000, 20 * kKiB, 9);
  Edata* old_big = add(0x20000000, 100 * kKiB, 3);
  add(0x30000000, 40 * kKiB, 5);
  EXPECT_EQ(eset.fit(20 * kKiB, 4096, false, 6), old_big);
  // exact_only restricts to the request's bin
  EXPECT_EQ(eset.fit(20 * kKiB, 4096, true, 6), young_exact);
  EXPECT_EQ(eset.npages(), (20 + 100 + 40) * kKiB / 4096);
}

TEST_F(EsetTest, BestFitPrefersSmallestClassThenAge) {
  // Ours (opt.extent_best_fit): the same set, the 20 KiB class wins over the older 100 KiB
  // extent; within a class the older one; the reuse bound still applies.
  eset.set_best_fit(true);
  Edata* young_exact = add(0x10000000, 20 * kKiB, 9);
  Edata* old_big = add(0x20000000, 100 * kKiB, 3);
  Edata* old_mid = add(0x30000000, 40 * kKiB, 5);
  EXPECT_EQ(eset.fit(20 * kKiB, 4096, false, 6), young_exact);
  EXPECT_EQ(eset.fit(24 * kKiB, 4096, false, 6), old_mid);
  Edata* older_mid = add(0x40000000, 40 * kKiB, 4);
  EXPECT_EQ(eset.fit(24 * kKiB, 4096, false, 6), older_mid);
  EXPECT_EQ(eset.fit(48 * kKiB, 4096, false, 6), old_big);
  EXPECT_EQ(eset.fit(1 * kKiB * 4, 4096, false, 1), nullptr);  // 20 KiB > 4 KiB << 1
  EXPECT_EQ(eset.fit(1 * kKiB * 4, 4096, false, Eset::kUnboundedFit), young_exact);
}

TEST_F(EsetTest, BestFitOnlyUpTo64KiB) {
  // Above Eset::kBestFitMaxSize the search keeps 5.3.0's order even with best fit on: the
  // oldest extent of any fitting class, not the smallest class.
  eset.set_best_fit(true);
  Edata* young_fit = add(0x10000000, 80 * kKiB, 9);
  Edata* old_big = add(0x20000000, 1024 * kKiB, 3);
  EXPECT_EQ(eset.fit(80 * kKiB, 4096, false, 6), old_big);
  EXPECT_EQ(eset.fit(68 * kKiB, 4096, false, 6), old_big);
  // At the limit best fit still applies.
  Edata* small = add(0x30000000, 68 * kKiB, 7);  // 64 KiB + the pad: bin 64 KiB
  EXPECT_EQ(eset.fit(Eset::kBestFitMaxSize, 4096, false, 6), small);
  EXPECT_EQ(eset.fit(60 * kKiB, 4096, false, 6), small);
  (void)young_fit;
}

TEST_F(EsetTest, TiesBrokenByAddress) {
  add(0x50000000, 24 * kKiB, 4);
  Edata* low = add(0x40000000, 24 * kKiB, 4);
  EXPECT_EQ(eset.fit(24 * kKiB, 4096, false, 6), low);
}

TEST_F(EsetTest, NeverReturnsTooSmall) {
  add(0x10000000, 16 * kKiB, 1);
  EXPECT_EQ(eset.fit(20 * kKiB, 4096, false, 6), nullptr);
  Edata* ok = add(0x20000000, 24 * kKiB, 2);
  EXPECT_EQ(eset.fit(20 * kKiB, 4096, false, 6), ok);
}

TEST_F(EsetTest, ReuseBoundIs64x) {
  // A 20 KiB request may use extents up to the 1.25 MiB class (20 KiB << 6), not beyond.
  Edata* big = add(0x10000000, 1536 * kKiB, 1);
  EXPECT_EQ(eset.fit(20 * kKiB, 4096, false, 6), nullptr);
  EXPECT_EQ(eset.fit(20 * kKiB, 4096, false, Eset::kUnboundedFit), big);
  EXPECT_EQ(eset.fit(24 * kKiB, 4096, false, 6), big);  // 24 KiB << 6 = 1.5 MiB
  Edata* fits = add(0x20000000, 1280 * kKiB, 2);
  EXPECT_EQ(eset.fit(20 * kKiB, 4096, false, 6), fits);
  EXPECT_EQ(eset.fit(20 * kKiB, 4096, false, 0), nullptr);
}

TEST_F(EsetTest, RemoveUpdatesOrderAndCounters) {
  Edata* a = add(0x10000000, 32 * kKiB, 1);
  Edata* b = add(0x20000000, 32 * kKiB, 2);
  pszind_t bin = Eset::bin_of(32 * kKiB);
  EXPECT_EQ(eset.nextents(bin), 2u);
  EXPECT_EQ(eset.nbytes(bin), 64 * kKiB);
  EXPECT_EQ(eset.lru_first(), a);
  eset.remove(a);
  EXPECT_EQ(eset.fit(32 * kKiB, 4096, false, 6), b);
  EXPECT_EQ(eset.lru_first(), b);
  EXPECT_EQ(eset.nextents(bin), 1u);
  eset.remove(b);
  EXPECT_EQ(eset.fit(32 * kKiB, 4096, false, 6), nullptr);
  EXPECT_EQ(eset.npages(), 0u);
}

TEST_F(EsetTest, LruIsInsertionOrder) {
  Edata* x = add(0x30000000, 8 * kKiB, 7);
  Edata* y = add(0x10000000, 64 * kKiB, 1);
  EXPECT_EQ(eset.lru_first(), x);
  eset.remove(x);
  EXPECT_EQ(eset.lru_first(), y);
}

TEST_F(EsetTest, AlignedFitUsesInteriorRange) {
  // 64 KiB alignment: max_size = 20K + 60K = 80K. A 72 KiB extent at an address whose next
  // 64 KiB boundary leaves >= 20 KiB must be found by the second (alignment) pass.
  Edata* e = add(0x10000000 + 48 * kKiB, 72 * kKiB, 1);
  EXPECT_EQ(eset.fit(20 * kKiB, 64 * kKiB, false, 6), e);
  eset.remove(e);
  add(0x20000000 + 4 * kKiB, 72 * kKiB, 1);  // boundary at +60K leaves only 12 KiB
  EXPECT_EQ(eset.fit(20 * kKiB, 64 * kKiB, false, 6), nullptr);
}

// The search's reach, by brute force: the bins a bounded search for `size` looks in are those
// whose class c has (c >> lg) <= size (jemalloc's rule, applied to bin classes).
pszind_t brute_fit_limit(size_t size, unsigned lg) {
  pszind_t last = 0;
  for (pszind_t i = 0; i < Eset::kNBins; i++) {
    if (lg >= Eset::kUnboundedFit || (sz::pind2sz(i) >> lg) <= size) last = i;
  }
  return last;
}

// Request sizes worth checking: every page multiple up to 2 MiB, then each class and class +
// pad, one page either side, up to 64 GiB.
std::vector<size_t> probe_sizes() {
  std::vector<size_t> v;
  for (size_t s = kPg; s <= 2 * kMiB; s += kPg) v.push_back(s);
  for (pszind_t i = 0; i < sc::kNPSizes && sz::pind2sz(i) <= (size_t{64} << 30); i++) {
    for (size_t s :
         {sz::pind2sz(i) - kPg, sz::pind2sz(i), sz::pind2sz(i) + kPg, sz::pind2sz(i) + 2 * kPg}) {
      if (s > 2 * kMiB) v.push_back(s);
    }
  }
  return v;
}

TEST(EsetReach, FitLimitIsTheClassRule) {
  for (unsigned lg : {0u, 1u, 2u, 3u, 6u, 8u, 20u, 40u, Eset::kUnboundedFit}) {
    for (size_t s : probe_sizes()) {
      ASSERT_EQ(Eset::fit_limit(s, lg), brute_fit_limit(s, lg)) << "size " << s << " lg " << lg;
    }
  }
  EXPECT_EQ(Eset::fit_limit(sc::kLargeMaxClass, 6), Eset::kNBins - 1);
  EXPECT_EQ(Eset::fit_limit(SIZE_MAX - kPg + 1, 1), Eset::kNBins - 1);
}

// The coalescing bound is the largest extent the search for the freed size can find again:
// filed in a searched bin, while one page more would not be -- with and without the pad.
TEST(EsetReach, MaxFitExtentIsTheLargestReachable) {
  for (size_t pad : {size_t{0}, kPg}) {
    for (unsigned lg : {0u, 1u, 2u, 6u, 8u}) {
      for (size_t s : probe_sizes()) {
        size_t m = Eset::max_fit_extent(s, lg, pad);
        pszind_t last = Eset::fit_limit(s, lg);
        ASSERT_EQ(m % kPg, 0u);
        ASSERT_LE(Eset::bin_of(m, pad), last) << "pad " << pad << " size " << s << " lg " << lg;
        if (m < sc::kLargeMaxClass) {
          ASSERT_GT(Eset::bin_of(m + kPg, pad), last)
              << "pad " << pad << " size " << s << " lg " << lg;
        }
        // A freed extent of an allocation's own size (class + pad) always fits its own bound,
        // and with the pad the bound never exceeds size << lg (the stated ratio).
        if (lg >= 1 && sz::psz_quantize_floor(s, pad) == s) {
          ASSERT_GE(m, s);
        }
        if (pad != 0 && lg < 64 && s <= (sc::kLargeMaxClass >> lg)) {
          ASSERT_LE(m, s << lg);
        }
      }
    }
  }
}

TEST_F(EsetTest, ReachClosesTheHoleAt116KiB) {
  // 100,000-byte requests: usable 112 KiB, extent 116 KiB with the pad. 116 KiB << 6 = 7424 KiB
  // sits in the 8 MiB bin, which a 116 KiB search never reaches; the bound is the 7 MiB class
  // instead. Without the pad the extent is 112 KiB and 112 KiB << 6 = 7 MiB is reachable: the
  // bound is the last page of the 7 MiB bin.
  EXPECT_EQ(Eset::max_fit_extent(116 * kKiB, 6, kPg), 7 * kMiB);
  EXPECT_EQ(Eset::max_fit_extent(112 * kKiB, 6, 0), 8 * kMiB - kPg);
  // This build's layout: the first extent past the bound is not handed out, the bound is.
  const size_t s = 112 * kKiB + sz::kLargePad;
  const size_t bound = Eset::max_fit_extent(s, 6);
  Edata* too_big = add(0x10000000, bound + kPg, 1);
  EXPECT_EQ(eset.fit(s, kPg, false, 6), nullptr);
  Edata* ok = add(0x20000000, bound, 2);
  EXPECT_EQ(eset.fit(s, kPg, false, 6), ok);
  EXPECT_NE(too_big, ok);
}

TEST_F(EsetTest, HugeRequestsDoNotOverflow) {
  add(0x10000000, 8 * kMiB, 1);
  EXPECT_EQ(eset.fit(sc::kLargeMaxClass, 4096, false, 6), nullptr);
  EXPECT_EQ(eset.fit(4096, size_t{1} << 62, false, Eset::kUnboundedFit), nullptr);
}

}  // namespace
}  // namespace je
