// sz_test: size <-> class conversions against references built from the golden class list.
//
// The reference answers come from the 5.3.0 golden files (test/unit/data/) and a plain
// binary search over them, never from the code under test.
#include "meta/sz.h"

#include <gtest/gtest.h>

#include "golden_data.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

using je::config::kPage;
using je::sz::kLargePad;
namespace sc = je::sc;
namespace sz = je::sz;

constexpr size_t kSizeMax = std::numeric_limits<size_t>::max();

// Column `col` of a golden table.
std::vector<size_t> read_column(const char* name, unsigned col) {
  std::vector<size_t> out;
  for (const std::vector<uint64_t>& row : je::golden::read_tsv(name)) {
    EXPECT_GT(row.size(), col);
    if (row.size() > col) out.push_back(row[col]);
  }
  return out;
}

// Every class size (36 bins + 196 large) and the page-multiple subset, from the golden files.
struct Golden {
  std::vector<size_t> classes;
  std::vector<size_t> psz;
  Golden() {
    classes = read_column("size-classes-5.3.0.tsv", 1);
    const std::vector<size_t> large = read_column("large-classes-5.3.0.tsv", 1);
    classes.insert(classes.end(), large.begin(), large.end());
    psz = {4096, 8192, 12288};
    psz.insert(psz.end(), large.begin(), large.end());
  }
};

const Golden& golden() {
  static const Golden g;
  return g;
}

// Reference: index of the smallest element >= x in a sorted list (list size if none).
size_t ceil_index(const std::vector<size_t>& sorted, size_t x) {
  return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), x) - sorted.begin());
}

// The golden files and the literal examples are 5.3.0's 4 KiB-page geometry; a --with-lg-page
// build skips those tests (sc_test's CountsFollowThePage checks the rules for any page).
#define SKIP_UNLESS_4K_PAGE() \
  if (je::config::kLgPage != 12) GTEST_SKIP() << "5.3.0 golden data is for 4 KiB pages"

TEST(Sz, GoldenFilesLoaded) {
  SKIP_UNLESS_4K_PAGE();
  ASSERT_EQ(golden().classes.size(), sc::kNSizes);
  ASSERT_EQ(golden().psz.size(), sc::kNPSizes);
}

TEST(Sz, Index2SizeMatchesGolden) {
  SKIP_UNLESS_4K_PAGE();
  const auto& g = golden().classes;
  ASSERT_EQ(g.size(), sc::kNSizes);
  for (je::szind_t i = 0; i < sc::kNSizes; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(sz::index2size(i), g[i]);
    EXPECT_EQ(sz::size2index(g[i]), i);  // round trip
    EXPECT_EQ(sz::s2u(g[i]), g[i]);
  }
  // Large class i is index kNBins + i (arenas.lextent.<i>.size).
  EXPECT_EQ(sz::index2size(sc::kNBins), sc::kLargeMinClass);
  EXPECT_EQ(sz::index2size(sc::kNBins + 24), size_t{1} << 20);
  EXPECT_EQ(sz::index2size(sc::kNBins + 104), size_t{1} << 40);
  EXPECT_EQ(sz::index2size(sc::kNSizes - 1), sc::kLargeMaxClass);
}

TEST(Sz, PageSizeClassesMatchGolden) {
  SKIP_UNLESS_4K_PAGE();
  const auto& g = golden().psz;
  ASSERT_EQ(g.size(), sc::kNPSizes);
  for (je::pszind_t p = 0; p < sc::kNPSizes; ++p) {
    SCOPED_TRACE(p);
    EXPECT_EQ(sz::pind2sz(p), g[p]);
    EXPECT_EQ(sz::psz2ind(g[p]), p);
    EXPECT_EQ(sz::psz2u(g[p]), g[p]);
  }
  EXPECT_EQ(sz::pind2sz(sc::kNPSizes), sc::kLargeMaxClass + kPage);
  // Extent index j = 3 + large class i (stats.arenas.<i>.extents.<j>).
  EXPECT_EQ(sz::psz2ind(sc::kLargeMinClass), 3u);
  EXPECT_EQ(sz::psz2ind(sc::kLargeMaxClass), sc::kNPSizes - 1);
}

// Every request size up to 20000 (covers the byte table, the arithmetic path and the
// small/large border) maps to the smallest class >= it.
TEST(Sz, EverySmallRequestMapsToSmallestClass) {
  const auto& g = golden().classes;
  for (size_t size = 0; size <= 20000; ++size) {
    const size_t want = ceil_index(g, size);
    ASSERT_EQ(sz::size2index(size), want) << size;
    ASSERT_EQ(sz::s2u(size), g[want]) << size;
  }
  EXPECT_EQ(sz::s2u(0), 8u);
  EXPECT_EQ(sz::s2u(4096), 4096u);
  EXPECT_EQ(sz::s2u(4097), 5120u);
  EXPECT_EQ(sz::s2u(14337), 16384u);
}

// Around every class boundary, all the way up, including the step past the largest class.
TEST(Sz, ClassBoundariesUpToOverflow) {
  const auto& g = golden().classes;
  for (size_t i = 0; i < g.size(); ++i) {
    const size_t c = g[i];
    // For classes below a page, c - kPage wraps around and probes the overflow answer too.
    for (size_t probe : {c - 1, c, c + 1, c + kPage, c - kPage, c / 2 + 1, c + c / 8}) {
      if (probe > sc::kLargeMaxClass) {
        EXPECT_EQ(sz::size2index(probe), sc::kNSizes) << probe;
        EXPECT_EQ(sz::s2u(probe), 0u) << probe;
        continue;
      }
      const size_t want = ceil_index(g, probe);
      ASSERT_LT(want, g.size());
      EXPECT_EQ(sz::size2index(probe), want) << probe;
      EXPECT_EQ(sz::s2u(probe), g[want]) << probe;
    }
  }
  for (size_t big : {sc::kLargeMaxClass + 1, sc::kLargeMaxClass + kPage, size_t{1} << 63,
                     kSizeMax - kPage, kSizeMax - 1, kSizeMax}) {
    EXPECT_EQ(sz::size2index(big), sc::kNSizes) << big;
    EXPECT_EQ(sz::s2u(big), 0u) << big;
    EXPECT_EQ(sz::psz2ind(big), sc::kNPSizes) << big;
    EXPECT_EQ(sz::psz2u(big), sc::kLargeMaxClass + kPage) << big;
  }
}

// The byte table and the arithmetic agree wherever both apply (above 64 bytes).
TEST(Sz, LookupAndArithmeticAgree) {
  for (size_t size = 65; size <= sc::kLookupMaxClass; ++size) {
    ASSERT_EQ(sz::detail::size2index_compute(size), sz::size2index(size)) << size;
    ASSERT_EQ(sz::detail::s2u_compute(size), sz::s2u(size)) << size;
  }
}

TEST(Sz, PageSizeClassesAroundBoundaries) {
  SKIP_UNLESS_4K_PAGE();
  const auto& g = golden().psz;
  for (size_t p = 0; p < g.size(); ++p) {
    const size_t c = g[p];
    for (size_t probe : {c - kPage + 1, c - 1, c, c + 1, c + kPage - 1, c + kPage}) {
      if (probe == 0) continue;
      const size_t want = ceil_index(g, probe);
      EXPECT_EQ(sz::psz2ind(probe), want) << probe;
      EXPECT_EQ(sz::psz2u(probe), want < g.size() ? g[want] : sc::kLargeMaxClass + kPage) << probe;
    }
  }
  for (size_t psz = 1; psz <= 64 * kPage; psz += 511) {
    const size_t want = ceil_index(g, psz);
    EXPECT_EQ(sz::psz2ind(psz), want) << psz;
    EXPECT_EQ(sz::psz2u(psz), g[want]) << psz;
  }
}

TEST(Sz, Sa2uExamples) {
  SKIP_UNLESS_4K_PAGE();
  EXPECT_EQ(sz::sa2u(5000, 4096), 8192u);
  EXPECT_EQ(sz::sa2u(1, 64), 64u);
  EXPECT_EQ(sz::sa2u(16385, 1), 20480u);
  EXPECT_EQ(sz::sa2u(1, 1), 8u);
  EXPECT_EQ(sz::sa2u(0, 1), 8u);  // upstream: size 0 is s2u(0); callers bump it to 1
  EXPECT_EQ(sz::sa2u(8, 16), 16u);
  EXPECT_EQ(sz::sa2u(100, 128), 128u);
  EXPECT_EQ(sz::sa2u(129, 128), 256u);
  EXPECT_EQ(sz::sa2u(3000, 2048), 4096u);
  EXPECT_EQ(sz::sa2u(4096, 4096), 4096u);
  EXPECT_EQ(sz::sa2u(8193, 4096), 12288u);
  // Small size but no small class of the alignment fits: large.
  EXPECT_EQ(sz::sa2u(12289, 4096), sc::kLargeMinClass);
  EXPECT_EQ(sz::sa2u(sc::kSmallMaxClass, 4096), sc::kLargeMinClass);
  EXPECT_EQ(sz::sa2u(sc::kSmallMaxClass, 1), sc::kSmallMaxClass);
  // Alignment above a page always takes a large class.
  EXPECT_EQ(sz::sa2u(1, 8192), sc::kLargeMinClass);
  EXPECT_EQ(sz::sa2u(100, size_t{1} << 30), sc::kLargeMinClass);
  EXPECT_EQ(sz::sa2u(20000, 8192), 20480u);
  EXPECT_EQ(sz::sa2u(sc::kLargeMinClass, 1), sc::kLargeMinClass);
  EXPECT_EQ(sz::sa2u(sc::kLargeMinClass + 1, 65536), 20480u);
}

TEST(Sz, Sa2uEdges) {
  // Largest class with the largest representable alignment still fits in size_t.
  EXPECT_EQ(sz::sa2u(sc::kLargeMaxClass, size_t{1} << 62), sc::kLargeMaxClass);
  EXPECT_EQ(sz::sa2u(sc::kLargeMaxClass, 1), sc::kLargeMaxClass);
  // Too big a size or an alignment beyond the largest class: impossible.
  EXPECT_EQ(sz::sa2u(sc::kLargeMaxClass + 1, 1), 0u);
  EXPECT_EQ(sz::sa2u(kSizeMax, 8), 0u);
  EXPECT_EQ(sz::sa2u(kSizeMax, 4096), 0u);
  EXPECT_EQ(sz::sa2u(1, size_t{1} << 63), 0u);
  EXPECT_EQ(sz::sa2u(sc::kLargeMaxClass, size_t{1} << 63), 0u);
}

// Property sweep: the result is a class >= size, aligned when small, and the smallest such.
TEST(Sz, Sa2uProperties) {
  const auto& g = golden().classes;
  const size_t sizes[] = {
      1,     7,     8,     9,     15,    16,    17,    33,     63,      64,       65,    100,
      127,   128,   129,   250,   500,   1000,  1024,  1025,   2000,    2049,     3000,  3585,
      4095,  4096,  4097,  5000,  6145,  7000,  8191,  8192,   8193,    10000,    12288, 12289,
      14000, 14336, 14337, 16383, 16384, 16385, 30000, 100000, 1000000, 123456789};
  for (size_t size : sizes) {
    for (unsigned lg = 0; lg <= 24; ++lg) {
      const size_t align = size_t{1} << lg;
      const size_t u = sz::sa2u(size, align);
      SCOPED_TRACE(testing::Message() << "size " << size << " align " << align);
      ASSERT_GE(u, size);
      const size_t idx = ceil_index(g, u);
      ASSERT_LT(idx, g.size());
      EXPECT_EQ(g[idx], u);  // a class
      if (u < sc::kLargeMinClass) {
        EXPECT_LE(align, kPage);
        EXPECT_EQ(u % align, 0u);
        // No smaller class in [size, u) is a multiple of the alignment.
        for (size_t j = ceil_index(g, size); g[j] < u; ++j) EXPECT_NE(g[j] % align, 0u);
      } else {
        EXPECT_EQ(u, std::max(sc::kLargeMinClass, sz::s2u(size)));
      }
    }
  }
}

// Reference for the quantize tests: every "psz class + pad" extent size, sorted.
std::vector<size_t> padded_psz(size_t pad) {
  std::vector<size_t> out;
  for (size_t c : golden().psz) out.push_back(c + pad);
  return out;
}

// With the cache-oblivious pad of one page (the default build's layout; the functions take the
// pad as a parameter, so this runs in a --disable-cache-oblivious build too).
TEST(Sz, QuantizeExamples) {
  SKIP_UNLESS_4K_PAGE();
  EXPECT_EQ(sz::psz_quantize_floor(4096, kPage), 4096u);
  EXPECT_EQ(sz::psz_quantize_floor(8192, kPage), 8192u);
  EXPECT_EQ(sz::psz_quantize_floor(12288, kPage), 12288u);
  EXPECT_EQ(sz::psz_quantize_floor(16384, kPage), 16384u);
  EXPECT_EQ(sz::psz_quantize_floor(20480, kPage), 20480u);
  EXPECT_EQ(sz::psz_quantize_floor(1052672, kPage), 1052672u);  // 1 MiB + pad
  // Everything from 1 MiB + pad up to (not including) 1.25 MiB + pad files under 1 MiB + pad,
  // whose psz index is that of the 1.25 MiB class once the pad is left in.
  const je::pszind_t p125 = sz::psz2ind(1280 * 1024);
  EXPECT_EQ(sz::pind2sz(p125), 1280u * 1024);
  for (size_t s = 1028 * 1024; s <= 1280 * 1024; s += kPage) {
    EXPECT_EQ(sz::psz_quantize_floor(s, kPage), 1028u * 1024) << s;
    EXPECT_EQ(sz::psz2ind(sz::psz_quantize_floor(s, kPage)), p125) << s;
  }
  EXPECT_EQ(sz::psz_quantize_ceil(1032 * 1024, kPage), 1284u * 1024);
  EXPECT_EQ(sz::psz_quantize_ceil(1284 * 1024, kPage), 1284u * 1024);
}

// floor is the largest class+pad <= size, ceil the smallest >= size, for page-aligned sizes;
// with the pad of either layout (one page, or none in a --disable-cache-oblivious build).
void check_quantize_invariants(size_t pad_bytes) {
  SCOPED_TRACE(pad_bytes);
  const std::vector<size_t> pad = padded_psz(pad_bytes);
  auto check = [&pad, pad_bytes](size_t size) {
    SCOPED_TRACE(size);
    const size_t f = sz::psz_quantize_floor(size, pad_bytes);
    const size_t c = sz::psz_quantize_ceil(size, pad_bytes);
    EXPECT_LE(f, size);
    EXPECT_GE(c, size);
    const bool exact = std::binary_search(pad.begin(), pad.end(), size);
    if (size < pad.front()) {
      // One page with the pad: nothing smaller to file it under.
      EXPECT_EQ(f, size);
      EXPECT_EQ(c, size);
      return;
    }
    EXPECT_TRUE(std::binary_search(pad.begin(), pad.end(), f)) << f;
    EXPECT_TRUE(std::binary_search(pad.begin(), pad.end(), c)) << c;
    EXPECT_EQ(f == size, exact);
    EXPECT_EQ(c == size, exact);
    const size_t fi = ceil_index(pad, size + 1) - 1;  // largest <= size
    EXPECT_EQ(f, pad[fi]);
    if (!exact) {
      EXPECT_EQ(c, pad[fi + 1]);
    }
  };
  for (size_t size = kPage; size <= 8 * 1024 * 1024; size += kPage) check(size);
  for (size_t v : pad) {
    if (v >= sc::kLargeMaxClass) continue;  // the top class (+ pad) has no successor to test
    for (size_t s : {v - kPage, v, v + kPage}) check(s);
  }
}

TEST(Sz, QuantizeInvariants) {
  SKIP_UNLESS_4K_PAGE();
  check_quantize_invariants(kPage);
  check_quantize_invariants(0);
  EXPECT_EQ(sz::kLargePad, je::config::kCacheOblivious ? kPage : 0u);
}

}  // namespace
