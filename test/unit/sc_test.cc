// sc_test: the generated size-class table against the real 5.3.0 library's geometry.
//
// The golden files in test/unit/data/ were read off Debian's libjemalloc 5.3.0 through
// mallctl (`arenas.bin.<i>.*`, `arenas.lextent.<i>.size`); this test only compares.
#include "meta/sc.h"

#include <gtest/gtest.h>

#include "golden_data.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using je::golden::read_tsv;
using je::golden::Rows;

using je::sc::kSizeClasses;

// The tests that compare with the golden files hold for the default 4 KiB page only (the files
// were read off Debian's 5.3.0); a --with-lg-page build skips them and checks the rules below.
#define SKIP_UNLESS_4K_PAGE() \
  if (je::config::kLgPage != 12) GTEST_SKIP() << "5.3.0 golden data is for 4 KiB pages"

TEST(Sc, PublishedCounts) {
  SKIP_UNLESS_4K_PAGE();
  EXPECT_EQ(je::sc::kNTiny, 1u);
  EXPECT_EQ(je::sc::kNBins, 36u);
  EXPECT_EQ(je::sc::kNLExtents, 196u);
  EXPECT_EQ(je::sc::kNSizes, je::sc::kNBins + je::sc::kNLExtents);
  EXPECT_EQ(je::sc::kNPSizes, 199u);
  EXPECT_EQ(je::sc::kSlabMaxRegs, 512u);
  EXPECT_EQ(je::sc::kLargeMaxClass, 8070450532247928832ull);
}

TEST(Sc, BinsMatchGolden) {
  SKIP_UNLESS_4K_PAGE();
  const Rows rows = read_tsv("size-classes-5.3.0.tsv");
  ASSERT_EQ(rows.size(), je::sc::kNBins);
  for (unsigned i = 0; i < je::sc::kNBins; ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(rows[i].size(), 5u);
    EXPECT_EQ(rows[i][0], i);
    const je::sc::BinInfo& b = je::sc::kBinInfo[i];
    EXPECT_EQ(b.reg_size, rows[i][1]);
    EXPECT_EQ(b.nregs, rows[i][2]);
    EXPECT_EQ(b.slab_size, rows[i][3]);
    EXPECT_EQ(b.n_shards, rows[i][4]);
    EXPECT_EQ(kSizeClasses[i].size, rows[i][1]);
    EXPECT_TRUE(kSizeClasses[i].bin);
    EXPECT_EQ(size_t{kSizeClasses[i].pgs} * je::config::kPage, b.slab_size);
  }
}

TEST(Sc, LargeClassesMatchGolden) {
  SKIP_UNLESS_4K_PAGE();
  const Rows rows = read_tsv("large-classes-5.3.0.tsv");
  ASSERT_EQ(rows.size(), je::sc::kNLExtents);
  for (unsigned i = 0; i < je::sc::kNLExtents; ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(rows[i].size(), 2u);
    EXPECT_EQ(rows[i][0], i);
    const je::sc::SizeClass& c = kSizeClasses[je::sc::kNBins + i];
    EXPECT_EQ(c.size, rows[i][1]);
    EXPECT_FALSE(c.bin);
    EXPECT_TRUE(c.psz);
    EXPECT_EQ(c.pgs, 0u);
  }
}

TEST(Sc, PageSizeClassesAreSmallPageMultiplesThenLarge) {
  SKIP_UNLESS_4K_PAGE();
  const Rows large = read_tsv("large-classes-5.3.0.tsv");
  std::vector<uint64_t> expected = {4096, 8192, 12288};
  for (const auto& row : large) expected.push_back(row.at(1));
  std::vector<uint64_t> got;
  for (const auto& c : kSizeClasses) {
    if (c.psz) got.push_back(c.size);
  }
  EXPECT_EQ(got.size(), je::sc::kNPSizes);
  EXPECT_EQ(got, expected);
}

// Every class is 2^lg_base + ndelta * 2^lg_delta, and past the quantum-spaced first group the
// spacing is a quarter of the group base with ndelta 1..4.
TEST(Sc, GeneratorCoordinates) {
  for (unsigned i = 0; i < je::sc::kNSizes; ++i) {
    SCOPED_TRACE(i);
    const je::sc::SizeClass& c = kSizeClasses[i];
    EXPECT_EQ(c.size, (uint64_t{1} << c.lg_base) + (uint64_t{c.ndelta} << c.lg_delta));
    if (i < je::sc::kNTiny) {
      EXPECT_EQ(c.ndelta, 0u);
      EXPECT_LT(c.size, je::config::kQuantum);
    } else if (i < je::sc::kNTiny + je::sc::kNGroup) {
      EXPECT_EQ(c.lg_base, je::config::kLgQuantum);
      EXPECT_EQ(c.lg_delta, je::config::kLgQuantum);
      EXPECT_EQ(c.ndelta, i - je::sc::kNTiny);
    } else {
      EXPECT_EQ(c.lg_delta + je::sc::kLgNGroup, c.lg_base);
      EXPECT_EQ(c.ndelta, (i - je::sc::kNTiny) % je::sc::kNGroup + 1);
    }
    if (i > 0) {
      EXPECT_GT(c.size, kSizeClasses[i - 1].size);
    }
    EXPECT_EQ(c.psz, c.size % je::config::kPage == 0);
  }
  // The last group stops after three steps: 2^62 + 4 * 2^60 would be 2^63.
  EXPECT_EQ(kSizeClasses[je::sc::kNSizes - 1].lg_base, 62u);
  EXPECT_EQ(kSizeClasses[je::sc::kNSizes - 1].ndelta, 3u);
}

// Slabs are the LCM of page and region size: no tail slack, and no smaller page multiple fits.
TEST(Sc, SlabGeometryIsLcm) {
  for (const je::sc::BinInfo& b : je::sc::kBinInfo) {
    SCOPED_TRACE(b.reg_size);
    uint64_t a = je::config::kPage, r = b.reg_size;
    while (r != 0) {
      const uint64_t t = a % r;
      a = r;
      r = t;
    }
    const uint64_t lcm = je::config::kPage / a * b.reg_size;
    EXPECT_EQ(b.slab_size, lcm);
    EXPECT_EQ(uint64_t{b.nregs} * b.reg_size, b.slab_size);
    EXPECT_LE(b.slab_size, 7 * je::config::kPage);
  }
  // Quirks the benchmarks rely on: single-region slabs for 1, 2 and 3 pages.
  for (const je::sc::BinInfo& b : je::sc::kBinInfo) {
    if (b.reg_size % je::config::kPage == 0) {
      EXPECT_EQ(b.nregs, 1u) << b.reg_size;
    }
  }
  if (je::config::kLgPage == 12) {
    EXPECT_EQ(je::sc::kBinInfo[28].nregs, 1u);
    EXPECT_EQ(je::sc::kBinInfo[32].nregs, 1u);
    EXPECT_EQ(je::sc::kBinInfo[34].nregs, 1u);
  }
}

}  // namespace

// Any page (--with-lg-page): jemalloc's sc.h counts, written as functions of LG_PAGE. Small
// classes are those below 4 pages: the tiny class, the 4 quantum-spaced classes, then 4 per
// doubling from 128 bytes up to 4 pages, less the one that is 4 pages itself. The class sizes
// do not depend on the page, only where small ends and which are page multiples.
TEST(Sc, CountsFollowThePage) {
  using namespace je::sc;
  const unsigned lg_page = je::config::kLgPage;
  EXPECT_EQ(kNSizes, 232u);
  EXPECT_EQ(kNTiny, 1u);
  EXPECT_EQ(kNBins, kNTiny + kNGroup + kNGroup * (lg_page + kLgNGroup - 6) - 1);
  EXPECT_EQ(kSmallMaxClass, je::config::kPage * 7 / 2);
  EXPECT_EQ(kLargeMinClass, je::config::kPage * 4);
  EXPECT_EQ(kNPSizes, kNLExtents + 3);
  EXPECT_EQ(kSlabMaxRegs, je::config::kPage / 8);
  EXPECT_EQ(kLookupMaxClass, 4096u);
  EXPECT_EQ(kLargeMaxClass, 8070450532247928832ull);
  // The page-multiple classes start 1, 2, 3 pages, then every large class.
  std::vector<size_t> psz;
  for (unsigned i = 0; i < kNSizes; ++i) {
    if (kSizeClasses[i].psz) psz.push_back(kSizeClasses[i].size);
  }
  ASSERT_EQ(psz.size(), kNPSizes);
  EXPECT_EQ(psz[0], je::config::kPage);
  EXPECT_EQ(psz[1], 2 * je::config::kPage);
  EXPECT_EQ(psz[2], 3 * je::config::kPage);
  EXPECT_EQ(psz[3], kLargeMinClass);
}
