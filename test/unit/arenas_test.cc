// arenas_test.cc: the registry's thread bookkeeping and what a cache teardown decays --
// arena_decay_after_cache_teardown purges a deserted arena entirely (decay times notwithstanding)
// and leaves one that still has a thread, or background threads, to its schedule; an internal
// hold keeps a manual arena from being destroyed.
//
// The arenas here are manual ones with decay -1, so nothing but the forced path can purge them
// and every expectation is exact. The library boots with opt.idle_return off (5.3.0's teardown).
#include <gtest/gtest.h>

#include <vector>

#include "arena/arena.h"
#include "arena_fixture.h"
#include "arena/arenas.h"
#include "arena/background_thread.h"
#include "extent/emap.h"
#include "support/nstime.h"
#include "thread/core_boot.h"

namespace je {
namespace {

constexpr size_t kLarge = 64 * 1024;

class ArenasTeardown : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // 5.3.0's teardown purge; with opt.idle_return (on by default) a deserted arena is left to
    // that thread's schedule instead (test/stress/idle_return_test).
    CoreConfig cfg;
    cfg.arena.policy.idle_return = false;
    ASSERT_TRUE(core_boot(cfg));
  }

  /// A manual arena that never purges on a schedule (dirty and muzzy decay -1).
  static Arena* arena_never_decaying() {
    unsigned ind = 0;
    EXPECT_TRUE(arena_create_manual(nullptr, &ind));
    Arena* a = arena_get(ind, false);
    EXPECT_NE(a, nullptr);
    if (a == nullptr) return nullptr;
    uint64_t now = nstime_now_ns();
    EXPECT_TRUE(a->set_decay_ms(ExtentState::kDirty, -1, now));
    EXPECT_TRUE(a->set_decay_ms(ExtentState::kMuzzy, -1, now));
    return a;
  }

  /// Allocates and frees n large extents of `a`, leaving their pages dirty.
  static void make_dirty(Arena* a, int n) {
    je::make_dirty(a, n, kLarge);
    ASSERT_GT(a->ndirty(), 0u);
  }
};

TEST_F(ArenasTeardown, DesertedArenaIsPurgedEntirely) {
  Arena* a = arena_never_decaying();
  ASSERT_NE(a, nullptr);
  make_dirty(a, 8);
  uint64_t npurge = a->counter(PacCounter::dirty_npurge);
  arena_decay_after_cache_teardown(a);
  EXPECT_EQ(a->ndirty(), 0u);
  EXPECT_EQ(a->nmuzzy(), 0u);
  EXPECT_GT(a->counter(PacCounter::dirty_npurge), npurge);
}

TEST_F(ArenasTeardown, ArenaWithAThreadKeepsItsSchedule) {
  Arena* a = arena_never_decaying();
  ASSERT_NE(a, nullptr);
  arena_bind(a);
  make_dirty(a, 8);
  size_t dirty = a->ndirty();
  arena_decay_after_cache_teardown(a);
  EXPECT_EQ(a->ndirty(), dirty);  // a normal step: decay -1 purges nothing
  // The thread leaves: the next teardown finds the arena deserted.
  arena_unbind(a);
  arena_decay_after_cache_teardown(a);
  EXPECT_EQ(a->ndirty(), 0u);
}

TEST_F(ArenasTeardown, BackgroundThreadsKeepTheSchedule) {
  Arena* a = arena_never_decaying();
  ASSERT_NE(a, nullptr);
  make_dirty(a, 8);
  size_t dirty = a->ndirty();
  ASSERT_TRUE(background_thread_set_enabled(true));
  arena_decay_after_cache_teardown(a);
  EXPECT_EQ(a->ndirty(), dirty);
  EXPECT_TRUE(background_thread_set_enabled(false));
}

TEST_F(ArenasTeardown, NoCacheArenaDecaysOnlyArenaZero) {
  Arena* a = arena_never_decaying();
  ASSERT_NE(a, nullptr);
  make_dirty(a, 4);
  size_t dirty = a->ndirty();
  arena_decay_after_cache_teardown(nullptr);
  EXPECT_EQ(a->ndirty(), dirty);
}

TEST_F(ArenasTeardown, HeldArenaIsNotDestroyed) {
  Arena* a = arena_never_decaying();
  ASSERT_NE(a, nullptr);
  unsigned ind = a->ind();
  arena_hold(a);
  EXPECT_FALSE(arena_destroy_manual(ind));
  EXPECT_EQ(arena_get(ind, false), a);
  arena_unhold(a);
  EXPECT_TRUE(arena_destroy_manual(ind));
  EXPECT_EQ(arena_get(ind, false), nullptr);
}

}  // namespace
}  // namespace je
