// Unit tests for src/support/bitmap.h: set/get/unset and find-first-set from every index,
// including word boundaries and a size that is not a multiple of 64.
#include "support/bitmap.h"

#include <gtest/gtest.h>

#include <bitset>
#include <cstddef>
#include <random>

namespace {

// Reference: linear scan.
template <size_t N>
size_t ref_ffs(const std::bitset<N>& b, size_t from) {
  for (size_t i = from; i < N; i++) {
    if (b[i]) return i;
  }
  return N;
}

template <size_t N>
void check_all_ffs(const je::FixedBitmap<N>& bm, const std::bitset<N>& ref) {
  for (size_t from = 0; from <= N + 1; from++) {
    ASSERT_EQ(bm.ffs(from), ref_ffs(ref, from)) << "N=" << N << " from=" << from;
  }
  for (size_t i = 0; i < N; i++) ASSERT_EQ(bm.get(i), ref[i]) << i;
  ASSERT_EQ(bm.empty(), ref.none());
}

TEST(FixedBitmap, EmptyAndConstinit) {
  constinit static je::FixedBitmap<200> bm;
  EXPECT_TRUE(bm.empty());
  for (size_t from = 0; from <= 201; from++) EXPECT_EQ(bm.ffs(from), 200u);
  static_assert(je::FixedBitmap<200>::kWords == 4);
  static_assert(je::FixedBitmap<64>::kWords == 1);
  static_assert(je::FixedBitmap<65>::kWords == 2);
}

TEST(FixedBitmap, SingleBitEveryPosition) {
  for (size_t bit = 0; bit < 200; bit++) {
    je::FixedBitmap<200> bm;
    std::bitset<200> ref;
    bm.set(bit);
    ref.set(bit);
    check_all_ffs(bm, ref);
    if (HasFatalFailure()) return;
    bm.unset(bit);
    EXPECT_TRUE(bm.empty());
  }
}

TEST(FixedBitmap, WordBoundaries) {
  je::FixedBitmap<200> bm;
  std::bitset<200> ref;
  for (size_t b : {0u, 63u, 64u, 127u, 128u, 191u, 192u, 199u}) {
    bm.set(b);
    ref.set(b);
  }
  check_all_ffs(bm, ref);
  EXPECT_EQ(bm.ffs(1), 63u);
  EXPECT_EQ(bm.ffs(64), 64u);
  EXPECT_EQ(bm.ffs(65), 127u);
  EXPECT_EQ(bm.ffs(193), 199u);
  bm.unset(199);
  EXPECT_EQ(bm.ffs(193), 200u);
  // Re-setting a set bit and unsetting an unset bit are idempotent.
  bm.set(64);
  bm.unset(65);
  EXPECT_EQ(bm.ffs(64), 64u);
  EXPECT_EQ(bm.ffs(65), 127u);
}

template <size_t N>
void random_fill(unsigned seed) {
  std::mt19937 rng(seed);
  for (int round = 0; round < 20; round++) {
    je::FixedBitmap<N> bm;
    std::bitset<N> ref;
    unsigned density = rng() % 16;  // sparse to dense
    for (size_t i = 0; i < N; i++) {
      if (rng() % 16 < density) {
        bm.set(i);
        ref.set(i);
      }
    }
    check_all_ffs(bm, ref);
    if (testing::Test::HasFatalFailure()) return;
    // Clear a few and re-check.
    for (int k = 0; k < 10; k++) {
      size_t i = rng() % N;
      bm.unset(i);
      ref.reset(i);
    }
    check_all_ffs(bm, ref);
    if (testing::Test::HasFatalFailure()) return;
  }
}

TEST(FixedBitmap, RandomSizes) {
  random_fill<1>(1);
  random_fill<63>(2);
  random_fill<64>(3);
  random_fill<65>(4);
  random_fill<128>(5);
  random_fill<200>(6);
  random_fill<257>(7);
}

TEST(FixedBitmap, FullBitmap) {
  je::FixedBitmap<130> bm;
  for (size_t i = 0; i < 130; i++) bm.set(i);
  for (size_t from = 0; from < 130; from++) EXPECT_EQ(bm.ffs(from), from);
  EXPECT_EQ(bm.ffs(130), 130u);
  EXPECT_FALSE(bm.empty());
}

}  // namespace
