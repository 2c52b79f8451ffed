// Unit tests for src/support/prng.h: recurrences, range bounds and rough uniformity.
#include "support/prng.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

TEST(Prng, RecurrenceMatchesConstants) {
  uint64_t s = 0;
  EXPECT_EQ(je::prng_state_next(s), 1442695040888963407ULL);
  s = 1;
  EXPECT_EQ(je::prng_state_next(s), 6364136223846793005ULL + 1442695040888963407ULL);
  EXPECT_EQ(je::prng_state_next_u32(0), 12345u);
  EXPECT_EQ(je::prng_state_next_u32(1), 1103515245u + 12345u);
  // Usable in constant expressions.
  static_assert(je::prng_state_next(0) == je::kPrngAdd64);
}

TEST(Prng, LgRangeTakesTopBits) {
  for (unsigned lg = 1; lg <= 64; lg++) {
    uint64_t a = 42;
    uint64_t b = 42;
    uint64_t r = je::prng_lg_range_u64(&a, lg);
    uint64_t full = je::prng_state_next(b);
    EXPECT_EQ(a, full) << "state must advance by one step";
    EXPECT_EQ(r, full >> (64 - lg));
    if (lg < 64) {
      EXPECT_LT(r, uint64_t{1} << lg);
    }
  }
  for (unsigned lg = 1; lg <= 32; lg++) {
    uint32_t a = 7;
    uint32_t r = je::prng_lg_range_u32(&a, lg);
    EXPECT_EQ(r, je::prng_state_next_u32(7) >> (32 - lg));
  }
}

TEST(Prng, RangeBounds) {
  uint64_t s = 12345;
  const uint64_t ranges[] = {
      2, 3, 5, 7, 100, 1000, 4097, (uint64_t{1} << 32) + 1, (uint64_t{1} << 63) + 1, UINT64_MAX};
  for (uint64_t range : ranges) {
    for (int i = 0; i < 2000; i++) ASSERT_LT(je::prng_range_u64(&s, range), range);
  }
  uint32_t s32 = 99;
  for (uint32_t range : {2u, 3u, 10u, 65537u, UINT32_MAX}) {
    for (int i = 0; i < 2000; i++) ASSERT_LT(je::prng_range_u32(&s32, range), range);
  }
  uint64_t before = s;
  EXPECT_EQ(je::prng_range_u64(&s, 1), 0u);
  EXPECT_EQ(je::prng_range_u64(&s, 0), 0u);
  EXPECT_EQ(s, before);
  EXPECT_LT(je::prng_range_zu(&s, 17), 17u);
  EXPECT_LT(je::prng_lg_range_zu(&s, 5), 32u);
}

TEST(Prng, RangeHitsEveryValue) {
  uint64_t s = 1;
  bool seen[13] = {};
  for (int i = 0; i < 1000; i++) seen[je::prng_range_u64(&s, 13)] = true;
  for (bool b : seen) EXPECT_TRUE(b);
}

// Chi-square style sanity check: each of 16 buckets of lg_range(4) gets about 1/16 of draws.
TEST(Prng, LgRangeDistributionIsRoughlyUniform) {
  constexpr int kDraws = 160000;
  int buckets[16] = {};
  uint64_t s = 0xdeadbeef;
  for (int i = 0; i < kDraws; i++) buckets[je::prng_lg_range_u64(&s, 4)]++;
  double chi2 = 0;
  const double expected = kDraws / 16.0;
  for (int b : buckets) chi2 += (b - expected) * (b - expected) / expected;
  // 15 degrees of freedom: p = 0.001 at 37.7.
  EXPECT_LT(chi2, 37.7);

  // Single bits of the top bits are balanced.
  int ones = 0;
  for (int i = 0; i < 100000; i++) ones += static_cast<int>(je::prng_lg_range_u64(&s, 1));
  EXPECT_NEAR(ones, 50000, 1500);

  // Non-power-of-two range: mean close to (range - 1) / 2.
  double sum = 0;
  for (int i = 0; i < 100000; i++) sum += static_cast<double>(je::prng_range_u64(&s, 1000));
  EXPECT_NEAR(sum / 100000, 499.5, 5.0);
}

TEST(Prng, Deterministic) {
  uint64_t a = 5;
  uint64_t b = 5;
  for (int i = 0; i < 100; i++) EXPECT_EQ(je::prng_range_u64(&a, 977), je::prng_range_u64(&b, 977));
}

}  // namespace
