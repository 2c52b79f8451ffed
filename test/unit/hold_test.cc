// Unit tests of src/extent/hold: the memory-return policy on its own -- one arena's hold (the
// dip below the recent peak, its slack, the half-window rotation, the oversize arena's immediate
// hold), the oversize-keep and background-sleep rules, growth purging's arithmetic, the
// process-wide budget's share, and the two ReturnPolicy presets. Times are explicit fake
// nanoseconds; no page allocator is involved.
#include "extent/hold.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "arena/arena_options.h"

namespace {

using je::Hold;
using je::ReturnPolicy;

constexpr uint64_t kT0 = 1'000'000'000'000ULL;  // an arbitrary "boot + 1000 s"
constexpr int64_t kMs = 10'000;                 // a 10 s window: half windows of 5 s
constexpr uint64_t kHalf = 5'000'000'000ULL;

// A hold as a new arena's, at kT0 (Hold is not copyable: its counters are atomics).
struct Fresh : Hold {
  explicit Fresh(bool on, int64_t immediate_ms = 0) {
    init(Config{.on = on, .shares_budget = false, .immediate_ms = immediate_ms}, kT0);
  }
};

TEST(Hold, KeepsTheDipBelowThePeakAndASlackWhileBusy) {
  Fresh h(true);
  h.grown(1000);
  h.shrunk(600);
  EXPECT_EQ(h.active(), 400u);
  // Peak 1000 plus 1/64 of it (busy), minus the 400 still active.
  EXPECT_EQ(h.held(), 1000u + (1000u >> je::kLgHoldSlack) - 400u);
  EXPECT_EQ(h.estimate(kMs), h.held());
  EXPECT_EQ(h.estimate(-1), 0u) << "decay off: nothing scheduled, nothing to hold";
  EXPECT_EQ(h.estimate(0), 0u) << "decay 0 without the immediate hold";
}

TEST(Hold, ThePeakAgesOutAndTheSlackGoesAfterFourQuietHalves) {
  Fresh h(true);
  h.grown(1000);
  h.shrunk(600);
  const size_t at_peak = h.held();
  // One half window: the peak moves to the previous half and still counts.
  EXPECT_EQ(h.rotate_locked(kT0 + kHalf, kMs), at_peak);
  // Another, with no extent activity: the old peak is gone; the slack of the new one stays
  // (the arena was busy within the last four half windows).
  EXPECT_EQ(h.rotate_locked(kT0 + 2 * kHalf, kMs), 400u >> je::kLgHoldSlack);
  // Four quiet half windows at once: nothing beyond active.
  EXPECT_EQ(h.rotate_locked(kT0 + 6 * kHalf, kMs), 0u);
  EXPECT_EQ(h.ns_until_rotation_locked(kT0 + 6 * kHalf + 1'000'000'000, kMs), 4'000'000'000u);
  // Activity again: slack is back, and a new peak is held.
  h.grown(100);
  h.shrunk(100);
  EXPECT_EQ(h.held(), 500u + (500u >> je::kLgHoldSlack) - 400u);
}

TEST(Hold, OffItCountsActivePagesAndHoldsNothing) {
  Fresh h(false, /*immediate_ms=*/1000);
  h.grown(1000);
  h.shrunk(600);
  EXPECT_EQ(h.active(), 400u);
  EXPECT_EQ(h.rotate_locked(kT0 + kHalf, kMs), 0u);
  EXPECT_EQ(h.estimate(kMs), 0u);
  EXPECT_FALSE(h.immediate(0)) << "the immediate hold needs the hold";
  EXPECT_FALSE(h.keeps_oversize(1, 0, kMs));
  EXPECT_EQ(h.ns_not_before_locked(kT0, kMs, 10, 0, 1, SIZE_MAX), 0u);
}

TEST(Hold, ImmediateHoldKeepsTheLevelAFreeStartedFrom) {
  Fresh h(true, /*immediate_ms=*/1000);
  EXPECT_TRUE(h.immediate(0));
  EXPECT_FALSE(h.immediate(10));
  EXPECT_EQ(h.window_ms(0), 1000);
  EXPECT_EQ(h.window_ms(-1), 0);
  EXPECT_EQ(h.window_ms(7), 7);
  h.grown(100);
  h.shrunk(100);
  // A decay step long after the last one: the peak is stale, but the block was freed from
  // its peak this very moment, so that level is held.
  EXPECT_EQ(h.rotate_locked(kT0 + 10'000'000'000ULL, 1000), 100u + (100u >> je::kLgHoldSlack));
  // Without the immediate hold the same stale step holds nothing.
  Fresh g(true);
  g.grown(100);
  g.shrunk(100);
  EXPECT_EQ(g.rotate_locked(kT0 + 10'000'000'000ULL, 1000), 0u);
}

TEST(Hold, OversizeFreesStayWhenTheHoldCoversThem) {
  Fresh h(true);
  h.grown(1000);
  h.shrunk(600);
  const size_t held = h.held();
  EXPECT_TRUE(h.keeps_oversize(500, held - 500, kMs));
  EXPECT_FALSE(h.keeps_oversize(500, held - 499, kMs));
  EXPECT_FALSE(h.keeps_oversize(500, 0, 0)) << "decay 0: the immediate hold's own path";
  EXPECT_FALSE(h.keeps_oversize(500, 0, -1)) << "decay -1 keeps everything anyway";
}

TEST(Hold, ABackgroundThreadSleepsUntilTheRotationWhenTheHoldLeavesTooLittle) {
  Fresh h(true);
  h.grown(1000);
  h.shrunk(600);
  const size_t held = h.held();
  const uint64_t now = kT0 + 1'000'000'000;
  EXPECT_EQ(h.ns_not_before_locked(now, kMs, held + 64, 0, 64, SIZE_MAX), 0u);
  EXPECT_EQ(h.ns_not_before_locked(now, kMs, held + 63, 0, 64, SIZE_MAX), kHalf - 1'000'000'000);
  EXPECT_EQ(h.ns_not_before_locked(now, kMs, held + 63, 0, 64, /*cap=*/0), 0u)
      << "capped to nothing, the hold keeps nothing and constrains nothing";
  // Decay's own floor above the hold counts as the floor.
  EXPECT_EQ(h.ns_not_before_locked(now, kMs, held + 100, held + 50, 64, SIZE_MAX),
            kHalf - 1'000'000'000);
  EXPECT_EQ(h.floor_locked(now, kMs, 0, SIZE_MAX), held);
  EXPECT_EQ(h.floor_locked(now, kMs, held + 1, SIZE_MAX), held + 1);
  EXPECT_EQ(h.floor_locked(now, kMs, 3, 10), 10u);
}

TEST(GrowthPurge, PurgesWhatWasGrownAboveAReserve) {
  using je::growth_purge_pages;
  constexpr size_t kKeep = je::kGrowPurgeMinKeepPages;
  constexpr size_t kMin = je::kGrowPurgeMinPages;
  EXPECT_EQ(growth_purge_pages(100, kKeep + 1000, 0, false), 100u);
  EXPECT_EQ(growth_purge_pages(5000, kKeep + 1000, 0, false), 1000u);
  EXPECT_EQ(growth_purge_pages(100, kKeep + kMin, 0, false), 0u) << "too little above the reserve";
  // The reserve grows with active memory (1/32 of it).
  EXPECT_EQ(growth_purge_pages(100, 2000, 32 * 2000, false), 0u);
  // The immediate hold keeps no reserve.
  EXPECT_EQ(growth_purge_pages(100, kMin + 4, 0, true), kMin + 4);
  EXPECT_EQ(growth_purge_pages(100, kMin, 0, true), 0u);
}

TEST(HoldBudget, AnArenaGetsItsShareOfTheProcessWideDip) {
  namespace hb = je::hold_budget;
  constexpr size_t kG = hb::kGranulePages;
  const uint64_t now = kT0;
  hb::publish(0, 10 * kG);       // the process peaks at 10 granules ...
  hb::publish(10 * kG, 2 * kG);  // ... and comes down to 2
  ASSERT_EQ(hb::active_pages(), 2 * kG);
  ASSERT_EQ(hb::peak_pages(now, 1000), 10 * kG);
  const size_t level = 10 * kG + ((10 * kG) >> je::kLgHoldSlack);
  const size_t dip = level - 2 * kG + 2 * kG;  // plus a granule per holder (two)
  EXPECT_EQ(hb::share(300, dip, 2, now, 1000), SIZE_MAX) << "the holds fit the dip";
  EXPECT_EQ(hb::share(300, 2 * dip, 2, now, 1000), 150u) << "twice the dip: half of each";
  hb::publish(2 * kG, 0);
}

TEST(Kept, TheLimitIsAnEighthOfTheMemoryUnlessConfigured) {
  using je::kept::limit_for;
  constexpr size_t kGiB = size_t{1} << 30;
  EXPECT_EQ(limit_for(0, 24 * kGiB), 3 * kGiB);
  EXPECT_EQ(limit_for(0, 2 * kGiB), kGiB / 4);
  EXPECT_EQ(limit_for(16 << 20, 24 * kGiB), size_t{16} << 20) << "opt.kept_max_bytes wins";
  EXPECT_EQ(limit_for(0, 0), SIZE_MAX) << "memory unknown: no bound";
}

TEST(Kept, CachesFillHalfTheLimitAndTheHoldsGetTheRest) {
  namespace kept = je::kept;
  const size_t saved = kept::limit();
  const size_t base = kept::cache_bytes();  // what the test process's own caches publish
  kept::set_limit(base + (size_t{64} << 20));
  const size_t half = (base + (size_t{64} << 20)) / 2;
  EXPECT_EQ(kept::cache_room(), base < half ? half - base : 0);
  // A thread cache's grown bins publish exactly; an extent cache in 64 KiB granules.
  kept::cache_publish(0, 1000, 0);
  EXPECT_EQ(kept::cache_bytes(), base + 1000);
  kept::cache_publish(0, (size_t{1} << kept::kLgGranule) - 1, kept::kLgGranule);
  EXPECT_EQ(kept::cache_bytes(), base + 1000) << "below one granule: not yet published";
  kept::cache_publish((size_t{1} << kept::kLgGranule) - 1, size_t{3} << kept::kLgGranule,
                      kept::kLgGranule);
  EXPECT_EQ(kept::cache_bytes(), base + 1000 + (size_t{3} << kept::kLgGranule));
  // The holds' room is what the caches leave of the limit, in pages.
  EXPECT_EQ(kept::hold_room_pages(),
            ((size_t{64} << 20) - 1000 - (size_t{3} << kept::kLgGranule)) >> je::config::kLgPage);
  // Caches at half the limit have no more room.
  kept::cache_publish(0, half, 0);
  EXPECT_EQ(kept::cache_room(), 0u);
  kept::cache_publish(half, 0, 0);
  kept::cache_publish(size_t{3} << kept::kLgGranule, 0, kept::kLgGranule);
  kept::cache_publish(1000, 0, 0);
  EXPECT_EQ(kept::cache_bytes(), base);
  kept::set_limit(saved);
}

TEST(Kept, TheHoldsShareIsCappedByTheirRoom) {
  namespace hb = je::hold_budget;
  namespace kept = je::kept;
  constexpr size_t kG = hb::kGranulePages;
  const size_t saved = kept::limit();
  const uint64_t now = kT0 + 100'000'000'000;
  hb::peak_pages(now, 1000);  // the windows start over now, after the earlier tests' peaks
  hb::publish(0, 100 * kG);
  hb::publish(100 * kG, 0);  // a dip of 100 granules
  ASSERT_EQ(hb::peak_pages(now, 1000), 100 * kG);
  EXPECT_EQ(hb::share(100 * kG, 100 * kG, 1, now, 1000), SIZE_MAX) << "unbounded: the whole dip";
  // A limit of 10 granules' pages (plus what the caches keep): the hold gets 10 granules.
  kept::set_limit(kept::cache_bytes() + ((10 * kG) << je::config::kLgPage));
  EXPECT_EQ(hb::share(100 * kG, 100 * kG, 1, now, 1000), 10 * kG);
  EXPECT_EQ(hb::share(50 * kG, 100 * kG, 2, now, 1000), 5 * kG) << "two holders: half each";
  kept::set_limit(saved);
}

TEST(ReturnPolicyPresets, OursIsTheDefaultAndJemallocTurnsEverythingOff) {
  static_assert(ReturnPolicy::ours() == ReturnPolicy{});
  static_assert(je::ArenaOptions{}.policy == ReturnPolicy::ours(),
                "the arena layer's defaults are our preset");
  constexpr ReturnPolicy j = ReturnPolicy::jemalloc530();
  EXPECT_FALSE(j.hold_peak);
  EXPECT_FALSE(j.oversize_hold);
  EXPECT_FALSE(j.idle_arena_decay);
  EXPECT_FALSE(j.purge_on_grow);
  EXPECT_FALSE(ReturnPolicy::ours().purge_on_grow) << "purge_on_grow is opt-in";
  EXPECT_TRUE(ReturnPolicy::ours().hold_peak);
}

}  // namespace
