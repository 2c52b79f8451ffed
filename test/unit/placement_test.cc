// Unit tests of src/extent/placement.h: the placement value and its two presets, and that a
// page allocator built from a value follows every field of it (the coalescing bound, the
// small extent cache, the fit order, reuse before growth).
#include "extent/placement.h"

#include <gtest/gtest.h>

#include "arena/arena_options.h"
#include "pac_fixture.h"

namespace je {
namespace {

static_assert(Placement::ours() == Placement{});
static_assert(ArenaOptions{}.placement == Placement::ours(),
              "the arena layer's defaults are our preset");

TEST(Placement, TheJemallocPresetTurnsEveryFieldOff) {
  constexpr Placement j = Placement::jemalloc530();
  EXPECT_FALSE(j.bounded_coalesce);
  EXPECT_FALSE(j.best_fit);
  EXPECT_FALSE(j.reuse_before_grow);
  EXPECT_FALSE(j.borrow_dirty);
  EXPECT_EQ(j.extent_cache_bytes, 0u);
  constexpr Placement o = Placement::ours();
  EXPECT_TRUE(o.bounded_coalesce && o.best_fit && o.reuse_before_grow && o.borrow_dirty);
  EXPECT_GT(o.extent_cache_bytes, 0u);
}

Pac* make(const Placement& pl) {
  PacOptions o;
  o.dirty_decay_ms = -1;  // nothing purged behind the test's back
  o.muzzy_decay_ms = 0;
  o.placement = pl;
  return make_pac(o);
}

TEST(Placement, APacFollowsTheValueItIsBuiltFrom) {
  for (const Placement& pl : {Placement::ours(), Placement::jemalloc530()}) {
    Pac* pac = make(pl);
    EXPECT_EQ(pac->bounded_coalesce(), pl.bounded_coalesce);
    EXPECT_EQ(pac->reuse_before_grow(), pl.reuse_before_grow);
    EXPECT_EQ(pac->placement(), pl);
    // A freed 16 KiB extent stays in the small extent cache (ours) or reaches the dirty
    // ecache at once (5.3.0); either way it is dirty.
    Edata* e = pac->alloc(16 * kKiB, kPg, false);
    ASSERT_NE(e, nullptr);
    pac->dalloc(e);
    EXPECT_EQ(pac->ndirty(), 4u);
    EXPECT_EQ(core(pac).npages(ExtentState::kDirty), pl.extent_cache_bytes != 0 ? 0u : 4u);
    // The fit order reaches the ecaches' esets.
    EXPECT_EQ(dirty_ecache(pac).eset.best_fit(), pl.best_fit);
  }
}

}  // namespace
}  // namespace je
