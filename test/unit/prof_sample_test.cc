// Unit tests for src/prof/prof_sample (the geometric sampling distance) and
// src/prof/prof_backtrace (stack capture): the logarithm against libm, the mean and spread of
// the gaps against the geometric law for several rates, lg_sample 0, and a backtrace that
// starts at its caller and sees known functions.
#include "prof/prof_sample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "prof/prof_backtrace.h"
#include "support/reentrancy.h"

namespace {

TEST(ProfSample, LnMatchesLibm) {
  for (double x : {1e-300, 1e-20, 1e-6, 0.001, 0.1, 0.25, 0.5, 0.75, 0.999999, 1.0, 1.5, 2.0}) {
    EXPECT_NEAR(je::prof_ln(x), std::log(x), 1e-12 * (1 + std::fabs(std::log(x)))) << x;
  }
  EXPECT_NEAR(je::prof_ln(4.9e-324), std::log(4.9e-324), 1e-9);  // subnormal
}

TEST(ProfSample, LgZeroSamplesEveryAllocation) {
  uint64_t s = 42;
  for (int i = 0; i < 1000; i++) EXPECT_EQ(je::prof_sample_gap(&s, 0), 1u);
}

// Mean within 2% and variance within 5% of the geometric law's (mean 1/p, variance (1-p)/p^2)
// over 200,000 draws, for rates from 2 bytes to 512 KiB.
TEST(ProfSample, GapsAreGeometricWithTheRightMean) {
  for (size_t lg : {1u, 4u, 12u, 19u}) {
    uint64_t s = 0x9e3779b97f4a7c15ULL + lg;
    const int n = 200000;
    double sum = 0, sum2 = 0;
    uint64_t min = UINT64_MAX;
    for (int i = 0; i < n; i++) {
      const uint64_t g = je::prof_sample_gap(&s, lg);
      min = g < min ? g : min;
      sum += static_cast<double>(g);
      sum2 += static_cast<double>(g) * static_cast<double>(g);
    }
    const double p = 1.0 / static_cast<double>(uint64_t{1} << lg);
    const double mean = sum / n;
    const double var = sum2 / n - mean * mean;
    EXPECT_GE(min, 1u);
    EXPECT_NEAR(mean / (1 / p), 1.0, 0.02) << "lg " << lg << " mean " << mean;
    EXPECT_NEAR(var / ((1 - p) / (p * p)), 1.0, 0.05) << "lg " << lg << " variance " << var;
  }
}

TEST(ProfSample, HugeRatesStayFinite) {
  uint64_t s = 7;
  for (size_t lg : {40u, 53u, 62u, 63u}) {
    const uint64_t g = je::prof_sample_gap(&s, lg);
    EXPECT_GE(g, 1u);
    EXPECT_LE(g, uint64_t{1} << 62);
  }
}

// ---- backtraces ----------------------------------------------------------------------------

__attribute__((noinline)) unsigned capture_here(je::ProfBt* bt) {
  unsigned n = je::prof_backtrace(bt, 0);
  asm volatile("" ::: "memory");  // keep this a real call (no tail call)
  return n;
}

__attribute__((noinline)) unsigned outer_caller(je::ProfBt* bt) {
  unsigned n = capture_here(bt);
  asm volatile("" ::: "memory");
  return n;
}

// Whether the return address `pc` lies inside the (small, noinline) function at `fn`: the
// call it returns from is one byte earlier, and none of these functions exceeds 256 bytes.
template <class F>
bool inside(uintptr_t pc, F* fn) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(fn);
  return pc - 1 >= a && pc - 1 < a + 256;
}

struct Local {
  __attribute__((noinline)) static unsigned skip_one(je::ProfBt* b) {
    unsigned n = je::prof_backtrace(b, 1);
    asm volatile("" ::: "memory");
    return n;
  }
  __attribute__((noinline)) static unsigned via_skip_one(je::ProfBt* b) {
    unsigned n = skip_one(b);
    asm volatile("" ::: "memory");
    return n;
  }
};

TEST(ProfBacktrace, StartsAtTheCallerAndSeesItsCallers) {
  ASSERT_TRUE(je::prof_backtrace_boot());
  je::ProfBt bt;
  ASSERT_GE(outer_caller(&bt), 2u);
  // Frame 0 is inside capture_here (the capture function itself is dropped), frame 1 inside
  // outer_caller.
  EXPECT_TRUE(inside(bt.vec[0], &capture_here));
  EXPECT_TRUE(inside(bt.vec[1], &outer_caller));
  // Skipping one frame starts at the caller of the function that captures.
  je::ProfBt bt2;
  ASSERT_GE(Local::via_skip_one(&bt2), 1u);
  EXPECT_TRUE(inside(bt2.vec[0], &Local::via_skip_one));
}

TEST(ProfBacktrace, MarksItselfReentrantWhileCapturing) {
  EXPECT_FALSE(je::in_reentrant_call());
  je::ProfBt bt;
  je::prof_backtrace(&bt, 0);
  EXPECT_FALSE(je::in_reentrant_call());  // the guard is released
}

// Deep recursion: the capture stops at kProfBtMax frames.
unsigned g_hook_max_len = 0;

__attribute__((noinline)) unsigned deep(int n, je::ProfBt* bt) {
  if (n == 0) return je::prof_backtrace(bt, 0);
  unsigned r = deep(n - 1, bt);
  asm volatile("" ::: "memory");
  return r;
}

TEST(ProfBacktrace, StopsAtTheMaximumDepth) {
  je::ProfBt bt;
  EXPECT_EQ(deep(200, &bt), je::kProfBtMax);
}

// opt.prof_bt_max (jemalloc 5.3.1): captures keep that many frames, at most kProfBtMax; 0 is
// clipped to 1 (the parser never passes it). Through a client's hook too: it is offered that
// capacity, and more frames than that are cut.
void hook_fills_200(void** vec, unsigned* len, unsigned max_len) {
  g_hook_max_len = max_len;
  for (unsigned i = 0; i < 200 && i < je::kProfBtMax; i++) vec[i] = reinterpret_cast<void*>(i + 1);
  *len = 200 < je::kProfBtMax ? 200 : je::kProfBtMax;
}

TEST(ProfBacktrace, KeepsOptProfBtMaxFrames) {
  je::ProfBt bt;
  je::prof_backtrace_set_depth(5);
  EXPECT_EQ(deep(50, &bt), 5u);
  je::prof_backtrace_set_depth(0);
  EXPECT_EQ(deep(50, &bt), 1u);
  je::prof_backtrace_set_depth(1000);
  EXPECT_EQ(je::g_prof_bt_depth, je::kProfBtMax);
  EXPECT_EQ(deep(200, &bt), je::kProfBtMax);
  je::prof_backtrace_set_depth(7);
  const je::ProfBacktraceHook old = je::prof_backtrace_hook_get();
  je::prof_backtrace_hook_set(&hook_fills_200);
  EXPECT_EQ(je::prof_backtrace(&bt, 0), 7u);
  EXPECT_EQ(g_hook_max_len, 7u);
  je::prof_backtrace_hook_set(old == nullptr ? &je::prof_backtrace_default_hook : old);
  je::prof_backtrace_set_depth(je::kProfBtMax);
}

}  // namespace
