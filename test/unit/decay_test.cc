// Unit tests of src/extent/decay: the smootherstep table, epoch advance, the limit curve, and
// the background-thread sleep computation. All times are explicit fake nanoseconds.
#include "extent/decay.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

namespace {

using je::Decay;

constexpr unsigned kN = Decay::kNSteps;
constexpr uint64_t kOne = uint64_t{1} << Decay::kFixedPointBits;
constexpr uint64_t kT0 = 1'000'000'000'000ULL;  // an arbitrary "boot + 1000 s"

// Must be constant-initializable (globals of the allocator are constinit).
constinit Decay g_constinit_decay;

long double smootherstep(long double x) { return x * x * x * (x * (x * 6 - 15) + 10); }

// Advances exactly one epoch: the deadline lies in [epoch + interval, epoch + 2 * interval).
bool step(Decay& d, size_t current) {
  const uint64_t epoch = d.epoch_ns();
  const bool advanced = d.maybe_advance_epoch(d.deadline_ns(), current);
  EXPECT_EQ(d.epoch_ns(), epoch + d.interval_ns());
  return advanced;
}

size_t purgeable(const Decay& d, size_t current) {
  return current > d.npages_limit() ? current - d.npages_limit() : 0;
}

TEST(Decay, ConstinitDefaultIsDisabled) {
  EXPECT_EQ(g_constinit_decay.ms(), -1);
  EXPECT_TRUE(g_constinit_decay.disabled());
  EXPECT_FALSE(g_constinit_decay.immediately());
  EXPECT_FALSE(g_constinit_decay.purging);
}

TEST(Decay, SmoothstepTable) {
  EXPECT_EQ(Decay::kSmoothstep[kN - 1], kOne);
  EXPECT_EQ(Decay::smoothstep(kN - 1), kOne);
  const long double half = static_cast<long double>(kOne) * 0.5L;
  EXPECT_LE(std::fabs(static_cast<long double>(Decay::kSmoothstep[99]) - half) / half, 1e-6L);
  for (unsigned i = 0; i < kN; i++) {
    if (i > 0) {
      EXPECT_GT(Decay::kSmoothstep[i], Decay::kSmoothstep[i - 1]) << i;
    }
    const long double exact = smootherstep(static_cast<long double>(i + 1) / kN) * kOne;
    EXPECT_LE(std::fabs(static_cast<long double>(Decay::kSmoothstep[i]) - exact), 1.0L) << i;
  }
  EXPECT_GT(Decay::kSmoothstep[0], 0u);
}

TEST(Decay, MsValid) {
  EXPECT_FALSE(Decay::ms_valid(INT64_MIN));
  EXPECT_FALSE(Decay::ms_valid(-2));
  EXPECT_TRUE(Decay::ms_valid(-1));
  EXPECT_TRUE(Decay::ms_valid(0));
  EXPECT_TRUE(Decay::ms_valid(1));
  EXPECT_TRUE(Decay::ms_valid(10'000));
  EXPECT_TRUE(Decay::ms_valid(Decay::kMaxMs));
  EXPECT_FALSE(Decay::ms_valid(Decay::kMaxMs + 1));
  EXPECT_FALSE(Decay::ms_valid(INT64_MAX));
  // The whole window fits in uint64_t nanoseconds.
  EXPECT_LE(static_cast<unsigned __int128>(Decay::kMaxMs) * 1'000'000, UINT64_MAX);
}

TEST(Decay, InitModes) {
  Decay d;
  d.init(kT0, 10'000);
  EXPECT_EQ(d.ms(), 10'000);
  EXPECT_FALSE(d.immediately());
  EXPECT_FALSE(d.disabled());
  EXPECT_EQ(d.interval_ns(), 10'000ULL * 1'000'000 / kN);
  EXPECT_EQ(d.epoch_ns(), kT0);
  EXPECT_GE(d.deadline_ns(), kT0 + d.interval_ns());
  EXPECT_LT(d.deadline_ns(), kT0 + 2 * d.interval_ns());
  EXPECT_EQ(d.npages_limit(), 0u);

  d.init(kT0, 0);
  EXPECT_TRUE(d.immediately());
  EXPECT_FALSE(d.disabled());
  EXPECT_EQ(d.npages_limit(), 0u);
  EXPECT_TRUE(d.maybe_advance_epoch(kT0, 1000));  // every check purges everything
  EXPECT_EQ(d.npages_limit(), 0u);
  EXPECT_EQ(d.ns_until_purge(1000, 1024), 0u);
  EXPECT_EQ(d.ns_until_purge(0, 1024), UINT64_MAX);

  d.init(kT0, -1);
  EXPECT_TRUE(d.disabled());
  EXPECT_FALSE(d.immediately());
  EXPECT_EQ(d.npages_limit(), SIZE_MAX);
  EXPECT_FALSE(d.maybe_advance_epoch(kT0 + 1'000'000'000'000ULL, 1000));
  EXPECT_EQ(d.npages_limit(), SIZE_MAX);
  EXPECT_EQ(d.ns_until_purge(1000, 1), UINT64_MAX);
}

TEST(Decay, NoAdvanceBeforeDeadline) {
  Decay d;
  d.init(kT0, 1000);
  const uint64_t deadline = d.deadline_ns();
  EXPECT_FALSE(d.maybe_advance_epoch(kT0, 5));
  EXPECT_FALSE(d.maybe_advance_epoch(kT0 + d.interval_ns() - 1, 5));
  EXPECT_FALSE(d.maybe_advance_epoch(deadline - 1, 5));
  EXPECT_EQ(d.epoch_ns(), kT0);
  EXPECT_EQ(d.deadline_ns(), deadline);
  EXPECT_EQ(d.npages_limit(), 0u);
  EXPECT_TRUE(d.maybe_advance_epoch(deadline, 5));
  EXPECT_EQ(d.epoch_ns(), kT0 + d.interval_ns());  // the grid, not the jittered time
  EXPECT_EQ(d.npages_limit(), 5u);
  EXPECT_GE(d.deadline_ns(), d.epoch_ns() + d.interval_ns());
  EXPECT_LT(d.deadline_ns(), d.epoch_ns() + 2 * d.interval_ns());
}

TEST(Decay, DeadlinesAreJitteredWithinOneInterval) {
  Decay d;
  d.init(kT0, 10'000);
  const uint64_t interval = d.interval_ns();
  uint64_t min_jitter = UINT64_MAX, max_jitter = 0;
  for (int i = 0; i < 1000; i++) {
    const uint64_t jitter = d.deadline_ns() - d.epoch_ns() - interval;
    ASSERT_LT(jitter, interval);
    min_jitter = std::min(min_jitter, jitter);
    max_jitter = std::max(max_jitter, jitter);
    step(d, 0);
  }
  // Spread over most of the interval.
  EXPECT_LT(min_jitter, interval / 10);
  EXPECT_GT(max_jitter, interval - interval / 10);
}

// A burst of N pages in epoch 0, never purged: the limit after k epochs is N * (1 - s(k/T))
// up to the one-epoch uncertainty of when in epoch 0 the pages arrived.
TEST(Decay, BurstLimitFollowsSmootherstep) {
  constexpr size_t kPages = 1'000'000;
  Decay d;
  d.init(kT0, 10'000);
  for (unsigned k = 1; k <= kN + 1; k++) {
    ASSERT_TRUE(step(d, kPages));
    const long double lo = kPages * (1 - smootherstep(static_cast<long double>(k) / kN));
    const long double hi = kPages * (1 - smootherstep(static_cast<long double>(k - 1) / kN));
    EXPECT_GE(static_cast<long double>(d.npages_limit()), lo - 1) << k;
    EXPECT_LE(static_cast<long double>(d.npages_limit()), hi + 1) << k;
  }
  EXPECT_EQ(d.npages_limit(), 0u);
  // Reached no later than T + 2 intervals after the burst.
  EXPECT_LE(d.epoch_ns(), kT0 + 10'000ULL * 1'000'000 + 2 * d.interval_ns());
}

// Once pages are recorded, advancing in jumps gives the same limits as single steps.
TEST(Decay, JumpsMatchSteps) {
  constexpr size_t kPages = 123'457;
  Decay a, b;
  a.init(kT0, 5000);
  b.init(kT0, 5000);
  step(a, kPages);
  step(b, kPages);
  for (unsigned k = 0; k < 30; k++) {
    for (int i = 0; i < 7; i++) step(a, kPages);
    ASSERT_TRUE(b.maybe_advance_epoch(b.epoch_ns() + 7 * b.interval_ns() + 1, kPages));
    ASSERT_EQ(a.epoch_ns(), b.epoch_ns());
    EXPECT_EQ(a.npages_limit(), b.npages_limit()) << k;
  }
}

// A burst purged to the limit at every epoch: the cumulative purge is N * s(t/T), the purge
// rate starts near zero, peaks mid-window and ends near zero.
TEST(Decay, PurgedCurveIsSmootherstep) {
  constexpr size_t kPages = 1'000'000;
  Decay d;
  d.init(kT0, 20'000);
  size_t current = kPages;
  size_t max_rate = 0;
  unsigned max_rate_epoch = 0;
  std::vector<size_t> rates;
  for (unsigned k = 1; k <= kN + 1; k++) {
    ASSERT_TRUE(step(d, current));
    ASSERT_LE(d.npages_limit(), current);
    const size_t purged_now = current - d.npages_limit();
    current = d.npages_limit();  // the caller purges down to the limit
    rates.push_back(purged_now);
    if (purged_now > max_rate) {
      max_rate = purged_now;
      max_rate_epoch = k;
    }
    const long double total = kPages - current;
    const long double expect = kPages * smootherstep(static_cast<long double>(k - 1) / kN);
    // Truncation of the limit (< 1 page) plus the table's rounding (N / 2^25 pages).
    EXPECT_LE(std::fabs(total - expect), 1.1L) << k;
  }
  EXPECT_EQ(current, 0u);
  EXPECT_LE(rates[1], 2u);                 // s'(0) = 0
  EXPECT_LE(rates[rates.size() - 1], 2u);  // s'(1) = 0
  EXPECT_GE(max_rate_epoch, 95u);
  EXPECT_LE(max_rate_epoch, 107u);
  // s'(1/2) = 15/8: the peak epoch purges ~N * 1.875 / 200.
  EXPECT_NEAR(static_cast<double>(max_rate), kPages * 1.875 / kN, kPages * 0.001);
}

TEST(Decay, LargeJumpClearsBacklog) {
  constexpr size_t kPages = 100'000'000;
  for (uint64_t jump : {uint64_t{199}, uint64_t{200}, uint64_t{250}, uint64_t{1'000'000}}) {
    Decay d;
    d.init(kT0, 1000);
    step(d, kPages);
    EXPECT_EQ(d.npages_limit(), kPages);
    ASSERT_TRUE(d.maybe_advance_epoch(d.epoch_ns() + jump * d.interval_ns(), kPages));
    if (jump < kN) {
      // The burst survives in the oldest slot with the smallest weight.
      EXPECT_EQ(d.npages_limit(), (kPages * Decay::kSmoothstep[kN - 1 - jump]) >> 24);
      EXPECT_GT(d.npages_limit(), 0u);
    } else {
      EXPECT_EQ(d.npages_limit(), 0u) << jump;
    }
  }
  // Pages that appeared during a long gap count as new.
  Decay d;
  d.init(kT0, 1000);
  step(d, 1000);
  ASSERT_TRUE(d.maybe_advance_epoch(d.epoch_ns() + 300 * d.interval_ns(), 1500));
  EXPECT_EQ(d.npages_limit(), 500u);
}

TEST(Decay, TimeGoingBackwardsIsIgnored) {
  Decay d;
  d.init(kT0, 1000);
  step(d, 1'000'000);
  step(d, 3'000'000);
  const uint64_t epoch = d.epoch_ns(), deadline = d.deadline_ns();
  const size_t limit = d.npages_limit();
  EXPECT_FALSE(d.maybe_advance_epoch(epoch - 1, 9'000'000));
  EXPECT_FALSE(d.maybe_advance_epoch(kT0 - 1, 9'000'000));
  EXPECT_FALSE(d.maybe_advance_epoch(0, 9'000'000));
  EXPECT_EQ(d.epoch_ns(), epoch);
  EXPECT_EQ(d.deadline_ns(), deadline);
  EXPECT_EQ(d.npages_limit(), limit);
  // Forward progress resumes normally and the ignored calls recorded nothing.
  ASSERT_TRUE(step(d, 3'000'000));
  EXPECT_LT(d.npages_limit(), limit);
}

TEST(Decay, InitRestartsFromScratch) {
  Decay d;
  d.init(kT0, 1000);
  for (int i = 0; i < 50; i++) step(d, 1000 + 100 * i);
  EXPECT_GT(d.npages_limit(), 0u);
  const uint64_t now = d.epoch_ns() + 12345;
  d.purging = true;
  d.init(now, 4000);
  EXPECT_TRUE(d.purging);  // untouched
  d.purging = false;
  EXPECT_EQ(d.ms(), 4000);
  EXPECT_EQ(d.interval_ns(), 4000ULL * 5000);
  EXPECT_EQ(d.epoch_ns(), now);
  EXPECT_GE(d.deadline_ns(), now + d.interval_ns());
  EXPECT_LT(d.deadline_ns(), now + 2 * d.interval_ns());
  EXPECT_EQ(d.npages_limit(), 0u);  // everything current is purgeable right away
  // nunpurged was reset: all current pages count as new at the next epoch, and the old backlog
  // no longer contributes.
  ASSERT_TRUE(step(d, 777));
  EXPECT_EQ(d.npages_limit(), 777u);
}

TEST(Decay, MaxMsDoesNotOverflow) {
  Decay d;
  const uint64_t now = UINT64_MAX / 2;
  d.init(now, Decay::kMaxMs);
  EXPECT_EQ(d.interval_ns(), static_cast<uint64_t>(Decay::kMaxMs) * 5000);
  EXPECT_GE(d.deadline_ns(), now);
  EXPECT_FALSE(d.maybe_advance_epoch(now + 1, 10));
  ASSERT_TRUE(d.maybe_advance_epoch(d.deadline_ns(), 10));
  EXPECT_EQ(d.npages_limit(), 10u);
  const uint64_t ns = d.ns_until_purge(10, 5);
  EXPECT_NE(ns, UINT64_MAX);
  EXPECT_GT(ns, d.interval_ns());

  // Near the end of time the deadline saturates instead of wrapping.
  Decay late;
  late.init(UINT64_MAX - 5, Decay::kMaxMs);
  EXPECT_EQ(late.deadline_ns(), UINT64_MAX);
  EXPECT_FALSE(late.maybe_advance_epoch(UINT64_MAX - 1, 10));
}

// ns_until_purge against the simulation. Objects are driven by a script of single-epoch steps
// (each at the object's own deadline), so twins built from the same script agree on the grid
// whatever their jitter.
struct Script {
  int64_t ms;
  std::vector<size_t> currents;  // current_npages passed at each step
};

void replay(Decay& d, const Script& s) {
  d.init(kT0, s.ms);
  for (size_t c : s.currents) step(d, c);
}

uint64_t rng_next(uint64_t* x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

TEST(Decay, NsUntilPurgeMatchesSimulation) {
  uint64_t rng = 0x9e3779b97f4a7c15ULL;
  int checked_steps = 0, checked_jumps = 0, checked_now = 0, checked_first = 0;
  for (int iter = 0; iter < 300; iter++) {
    Script s{static_cast<int64_t>(1 + rng_next(&rng) % 20'000), {}};
    // Random history: bursts, quiet epochs, sometimes purge to the limit, sometimes reuse.
    auto a = std::make_unique<Decay>();
    a->init(kT0, s.ms);
    size_t current = 0;
    const unsigned nsteps = static_cast<unsigned>(rng_next(&rng) % 400);
    for (unsigned i = 0; i < nsteps; i++) {
      const uint64_t r = rng_next(&rng);
      if (r % 5 == 0) current += rng_next(&rng) % 5000;
      s.currents.push_back(current);
      step(*a, current);
      if (r % 3 == 0) current = std::min(current, a->npages_limit());
      if (r % 11 == 0) current -= current / 4;
    }
    const bool with_pending = rng_next(&rng) % 3 == 0;
    if (with_pending) current += 1 + rng_next(&rng) % 3000;
    const uint64_t threshold = rng_next(&rng) % 2 ? 1024 : rng_next(&rng) % 10'000;
    const uint64_t ns = a->ns_until_purge(current, threshold);
    if (current == 0) {
      EXPECT_EQ(ns, UINT64_MAX);
      continue;
    }
    ASSERT_NE(ns, UINT64_MAX);
    const uint64_t want = std::min<uint64_t>(std::max<uint64_t>(threshold, 1), current);
    if (ns == 0) {
      EXPECT_GE(purgeable(*a, current), want);
      checked_now++;
      continue;
    }
    EXPECT_LT(purgeable(*a, current), want);
    // Number of epochs k the answer corresponds to.
    unsigned k;
    if (ns == a->deadline_ns() - a->epoch_ns()) {
      k = 1;
      checked_first++;
    } else {
      ASSERT_EQ(ns % a->interval_ns(), 0u);
      k = static_cast<unsigned>(ns / a->interval_ns());
      ASSERT_GE(k, 2u);
    }
    ASSERT_LE(k, kN + 1);

    // Stepping: k - 1 epochs are not enough, k are.
    auto b = std::make_unique<Decay>();
    replay(*b, s);
    ASSERT_EQ(b->npages_limit(), a->npages_limit());
    for (unsigned i = 1; i < k; i++) {
      step(*b, current);
      EXPECT_LT(purgeable(*b, current), want) << "iter " << iter << " step " << i;
    }
    step(*b, current);
    EXPECT_GE(purgeable(*b, current), want) << "iter " << iter;
    checked_steps++;

    // With nothing unrecorded, a caller sleeping exactly `ns` and advancing once gets the same.
    if (!with_pending) {
      const uint64_t wake = a->epoch_ns() + ns;
      ASSERT_TRUE(a->maybe_advance_epoch(wake, current));
      EXPECT_EQ(a->npages_limit(), b->npages_limit()) << "iter " << iter;
      checked_jumps++;
    }
  }
  // The random scenarios exercised every branch.
  EXPECT_GT(checked_steps, 50);
  EXPECT_GT(checked_jumps, 20);
  EXPECT_GT(checked_now, 5);
  EXPECT_GT(checked_first, 0);
}

TEST(Decay, NsUntilPurgeSimpleCases) {
  Decay d;
  d.init(kT0, 10'000);
  EXPECT_EQ(d.ns_until_purge(0, 1024), UINT64_MAX);
  // Fresh init: limit 0, so existing pages are purgeable at once.
  EXPECT_EQ(d.ns_until_purge(10, 1024), 0u);
  step(d, 100'000);
  EXPECT_EQ(d.npages_limit(), 100'000u);
  // A fresh burst: nothing is purgeable until the curve has moved enough.
  const uint64_t t1 = d.ns_until_purge(100'000, 1);
  const uint64_t t1024 = d.ns_until_purge(100'000, 1024);
  const uint64_t tall = d.ns_until_purge(100'000, 100'000);
  EXPECT_GT(t1, 0u);
  EXPECT_LE(t1, t1024);
  EXPECT_LT(t1024, tall);
  // The last pages go once the oldest weights round them down to nothing (~T).
  EXPECT_GE(tall, uint64_t{kN - 2} * d.interval_ns());
  EXPECT_LE(tall, uint64_t{kN + 1} * d.interval_ns());
  // A threshold above the page count asks for "all of them", not "never".
  EXPECT_EQ(d.ns_until_purge(100'000, 1'000'000), tall);
  // 1024 of 100000 pages (1.024 %) leave once s(t/T) >= 0.01024.
  unsigned k = 1;
  while (smootherstep(static_cast<long double>(k - 1) / kN) * 100'000 < 1024 - 1) k++;
  EXPECT_NEAR(static_cast<double>(t1024) / d.interval_ns(), k, 1.0);

  // Mid-window, purged to the limit: the very next epoch frees ~N * 1.875 / 200 pages, due at
  // the jittered deadline (not at one interval, which would wake the caller too early).
  for (int i = 0; i < 100; i++) step(d, 100'000);
  const size_t current = d.npages_limit();
  EXPECT_EQ(d.ns_until_purge(current, 500), d.deadline_ns() - d.epoch_ns());
  EXPECT_EQ(d.ns_until_purge(current, 1200), 2 * d.interval_ns());
}

}  // namespace
