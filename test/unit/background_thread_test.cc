// background_thread_test.cc: the purging threads driven directly -- switching on and off,
// restarts, run counting, idle purging on a short decay, max_background_threads semantics,
// arena pauses, concurrent switching and the fork child state.
//
// The process-wide module state is shared by all tests; each test leaves the threads off.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "arena/arena.h"
#include "arena_fixture.h"
#include "arena/arenas.h"
#include "arena/background_thread.h"
#include "ctl/opt.h"
#include "extent/emap.h"
#include "support/nstime.h"
#include "thread/core_boot.h"

namespace je {
namespace {

using std::chrono::milliseconds;

constexpr size_t kLarge = 64 * 1024;

class BackgroundThread : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (core_booted()) return;
    ASSERT_GT(CoreConfig{}.arena.max_background_threads, kMaxBackgroundThreadsLimit);  // boot: 4
    ASSERT_TRUE(core_boot(CoreConfig{}));
  }
  void TearDown() override {
    EXPECT_TRUE(background_thread_set_enabled(false));
    EXPECT_FALSE(background_thread_enabled());
    EXPECT_EQ(background_thread_set_max(4), BackgroundThreadSetMax::kOk);
  }

  /// A manual arena with the given dirty decay; muzzy decay stays 0 (the 5.3.0 default).
  static Arena* arena_with_decay(int64_t dirty_ms) {
    unsigned ind = 0;
    EXPECT_TRUE(arena_create_manual(nullptr, &ind));
    Arena* a = arena_get(ind, false);
    EXPECT_NE(a, nullptr);
    if (a != nullptr) {
      EXPECT_TRUE(a->set_decay_ms(ExtentState::kDirty, dirty_ms, nstime_now_ns()));
    }
    return a;
  }

  /// Allocates and frees n large extents of `a`, leaving their pages dirty.
  static void make_dirty(Arena* a, int n) { je::make_dirty(a, n, kLarge); }

  /// Polls (without touching the allocator) until `a` has no dirty pages or `limit` passes.
  static bool wait_clean(Arena* a, milliseconds limit) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (a->ndirty() == 0) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return a->ndirty() == 0;
  }
};

TEST_F(BackgroundThread, BootNormalizesMax) {
  EXPECT_EQ(g_arena_opt.max_background_threads, kMaxBackgroundThreadsDefault);
  EXPECT_EQ(background_thread_max(), 4u);
  EXPECT_TRUE(background_thread_boot());  // idempotent
  EXPECT_FALSE(background_thread_enabled());
  BackgroundThreadStats st = background_thread_stats();
  EXPECT_EQ(st.num_threads, 0u);
  EXPECT_EQ(st.num_runs, 0u);
  EXPECT_EQ(st.run_interval_ns, 0u);
}

TEST_F(BackgroundThread, StartStopRestart) {
  for (int round = 0; round < 3; round++) {
    ASSERT_TRUE(background_thread_set_enabled(true));
    EXPECT_TRUE(background_thread_enabled());
    EXPECT_TRUE(background_thread_set_enabled(true));  // already on: no-op
    // Arena 0 exists, so at least thread 0 counts; never more than the maximum.
    BackgroundThreadStats st = background_thread_stats();
    EXPECT_GE(st.num_threads, 1u);
    EXPECT_LE(st.num_threads, background_thread_max());
    ASSERT_TRUE(background_thread_set_enabled(false));
    EXPECT_FALSE(background_thread_enabled());
    st = background_thread_stats();
    EXPECT_EQ(st.num_threads, 0u);
    EXPECT_EQ(st.num_runs, 0u);
  }
}

TEST_F(BackgroundThread, IdleProcessPurgesOnlyWithThreads) {
  // Without threads, nothing advances decay while the process is idle.
  Arena* a = arena_with_decay(100);
  ASSERT_NE(a, nullptr);
  make_dirty(a, 16);
  size_t dirty = a->ndirty();
  ASSERT_GT(dirty, 0u);
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(a->ndirty(), dirty);

  // Switched on, the owning thread purges everything within ~T, with no allocation activity.
  uint64_t purged_before = a->counter(PacCounter::dirty_purged);
  ASSERT_TRUE(background_thread_set_enabled(true));
  EXPECT_TRUE(wait_clean(a, milliseconds(2000))) << a->ndirty() << " pages left";
  EXPECT_GE(a->counter(PacCounter::dirty_purged) - purged_before, dirty);

  // Pages freed while the threads run (their owner asleep without a deadline) go too.
  make_dirty(a, 16);
  EXPECT_GT(a->ndirty(), 0u);
  EXPECT_TRUE(wait_clean(a, milliseconds(2000))) << a->ndirty() << " pages left";
}

TEST_F(BackgroundThread, RunsAreCounted) {
  Arena* a = arena_with_decay(200);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(background_thread_set_enabled(true));
  std::this_thread::sleep_for(milliseconds(50));
  uint64_t runs0 = background_thread_stats().num_runs;
  EXPECT_GE(runs0, 1u);  // every started thread with an arena ran once
  make_dirty(a, 8);
  // The owner wakes, schedules, and runs at least once more to purge.
  ASSERT_TRUE(wait_clean(a, milliseconds(2000)));
  std::this_thread::sleep_for(milliseconds(20));
  BackgroundThreadStats st = background_thread_stats();
  EXPECT_GT(st.num_runs, runs0);
  EXPECT_GT(st.run_interval_ns, 0u);
}

TEST_F(BackgroundThread, ApplicationTicksDoNotPurge) {
  // With the threads on, an application thread's decay call only advances the epochs.
  Arena* a = arena_with_decay(1);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(background_thread_set_enabled(true));
  background_thread_pause_arena(a->ind());  // keep the owner away, too
  make_dirty(a, 8);
  size_t dirty = a->ndirty();
  ASSERT_GT(dirty, 0u);
  std::this_thread::sleep_for(milliseconds(20));  // 1 ms decay: everything is due
  a->decay(/*is_background_thread=*/false, /*all=*/false);
  EXPECT_EQ(a->ndirty(), dirty);
  // Switched off, the same call purges. (Blocks of up to 16 pages -- 64 KiB without the
  // cache-oblivious pad -- wait in the small extent cache, and decay counts them when the
  // epoch they were freed in ends: here, when nothing ticked meanwhile, the first call's. Wait
  // out the decay time again.)
  ASSERT_TRUE(background_thread_set_enabled(false));
  std::this_thread::sleep_for(milliseconds(20));
  a->decay(false, false);
  EXPECT_EQ(a->ndirty(), 0u);
  background_thread_resume_arena(a->ind());
}

TEST_F(BackgroundThread, PauseKeepsThreadsAway) {
  Arena* a = arena_with_decay(50);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(background_thread_set_enabled(true));
  background_thread_pause_arena(a->ind());
  make_dirty(a, 8);
  size_t dirty = a->ndirty();
  std::this_thread::sleep_for(milliseconds(400));
  EXPECT_EQ(a->ndirty(), dirty);
  background_thread_resume_arena(a->ind());
  EXPECT_TRUE(wait_clean(a, milliseconds(2000)));
}

TEST_F(BackgroundThread, MaxSemantics) {
  EXPECT_EQ(background_thread_set_max(5), BackgroundThreadSetMax::kInvalid);  // above opt
  EXPECT_EQ(background_thread_set_max(2), BackgroundThreadSetMax::kOk);
  EXPECT_EQ(background_thread_max(), 2u);
  ASSERT_TRUE(background_thread_set_enabled(true));
  EXPECT_LE(background_thread_stats().num_threads, 2u);
  // A change while on restarts the threads with the new mapping.
  EXPECT_EQ(background_thread_set_max(3), BackgroundThreadSetMax::kOk);
  EXPECT_TRUE(background_thread_enabled());
  EXPECT_EQ(background_thread_max(), 3u);
  EXPECT_LE(background_thread_stats().num_threads, 3u);
  EXPECT_EQ(background_thread_set_max(0), BackgroundThreadSetMax::kInvalid);  // 5.3.0 crashes
  EXPECT_EQ(background_thread_max(), 3u);
  EXPECT_TRUE(background_thread_enabled());
  // Off, 0 is stored, and switching on then fails, leaving the feature off.
  ASSERT_TRUE(background_thread_set_enabled(false));
  EXPECT_EQ(background_thread_set_max(0), BackgroundThreadSetMax::kOk);
  EXPECT_EQ(background_thread_max(), 0u);
  EXPECT_FALSE(background_thread_set_enabled(true));
  EXPECT_FALSE(background_thread_enabled());
}

TEST_F(BackgroundThread, ManyArenasAreSpreadOverThreads) {
  // Enough manual arenas that every residue class has one: all four threads count.
  for (int i = 0; i < 4; i++) ASSERT_NE(arena_with_decay(10000), nullptr);
  ASSERT_TRUE(background_thread_set_enabled(true));
  EXPECT_EQ(background_thread_stats().num_threads, 4u);
  EXPECT_EQ(background_thread_set_max(1), BackgroundThreadSetMax::kOk);
  EXPECT_EQ(background_thread_stats().num_threads, 1u);
}

TEST_F(BackgroundThread, ConcurrentSwitching) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; t++) {
    ts.emplace_back([&stop, t] {
      unsigned i = 0;
      while (!stop.load()) {
        switch ((i++ + t) % 4) {
          case 0: background_thread_set_enabled(true); break;
          case 1: background_thread_set_enabled(false); break;
          case 2: background_thread_set_max(1 + (i % 4)); break;
          default: (void)background_thread_stats(); break;
        }
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(300));
  stop.store(true);
  for (auto& t : ts) t.join();
  ASSERT_TRUE(background_thread_set_enabled(true));
  EXPECT_LE(background_thread_stats().num_threads, background_thread_max());
  ASSERT_TRUE(background_thread_set_enabled(false));
  EXPECT_EQ(background_thread_stats().num_threads, 0u);
}

TEST_F(BackgroundThread, ForkChildHasThemOff) {
  ASSERT_TRUE(background_thread_set_enabled(true));
  background_thread_prefork0();
  background_thread_prefork1();
  pid_t pid = fork();
  if (pid == 0) {
    background_thread_postfork_child();
    int bad = 0;
    if (background_thread_enabled()) bad |= 1;
    if (background_thread_stats().num_threads != 0) bad |= 2;
    // The child may switch them on again, and off.
    if (!background_thread_set_enabled(true)) bad |= 4;
    if (!background_thread_set_enabled(false)) bad |= 8;
    _exit(bad);
  }
  background_thread_postfork_parent();
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(background_thread_enabled());  // the parent's threads are untouched
  EXPECT_GE(background_thread_stats().num_threads, 1u);
}

}  // namespace
}  // namespace je
