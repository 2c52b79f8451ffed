// Unit tests for src/support/mutex: constant initialization, mutual exclusion, try_lock, the
// contention counters, the fork protocol and (in --enable-debug builds) the lock-rank witness.
#include "support/mutex.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "support/config.h"
#include "support/lock_rank.h"
#include "support/nstime.h"

namespace {

// Must compile: a Mutex is a constant-initialized global with no static constructor.
constinit je::Mutex g_mutex{je::LockRank::kLeaf, "test_global"};
uint64_t g_counter = 0;

TEST(Mutex, ConstinitGlobalAndAccessors) {
  EXPECT_EQ(g_mutex.rank(), je::LockRank::kLeaf);
  EXPECT_STREQ(g_mutex.name(), "test_global");
  static_assert(std::is_trivially_destructible_v<je::Mutex>);
  static_assert(!std::is_copy_constructible_v<je::Mutex>);
  static_assert(!std::is_copy_constructible_v<je::MutexGuard>);
  g_mutex.lock();
  g_mutex.assert_owner();
  g_mutex.unlock();
  g_mutex.assert_not_owner();
}

TEST(Mutex, TwoThreadsIncrement) {
  constexpr int kIters = 100000;
  g_counter = 0;
  auto body = [] {
    for (int i = 0; i < kIters; i++) {
      je::MutexGuard g(g_mutex);
      g_counter++;
    }
  };
  std::thread a(body);
  std::thread b(body);
  a.join();
  b.join();
  EXPECT_EQ(g_counter, 2u * kIters);
}

TEST(Mutex, TryLockSemantics) {
  je::Mutex m(je::LockRank::kLeaf, "try");
  EXPECT_TRUE(m.try_lock());
  // Held by this thread: another thread's try_lock fails.
  bool other = true;
  std::thread([&] { other = m.try_lock(); }).join();
  EXPECT_FALSE(other);
  m.unlock();
  std::thread([&] {
    other = m.try_lock();
    if (other) m.unlock();
  }).join();
  EXPECT_TRUE(other);
  {
    je::MutexGuard g(m);
    std::thread([&] { other = m.try_lock(); }).join();
    EXPECT_FALSE(other);
  }
  EXPECT_TRUE(m.try_lock());
  m.unlock();
}

TEST(Mutex, StatsCountOps) {
  if (!je::config::kStats) GTEST_SKIP() << "built with --disable-stats";
  je::Mutex m(je::LockRank::kLeaf, "stats");
  for (int i = 0; i < 10; i++) {
    m.lock();
    m.unlock();
  }
  EXPECT_TRUE(m.try_lock());
  je::MutexStats s = m.stats();
  m.unlock();
  EXPECT_EQ(s.num_ops, 11u);
  EXPECT_EQ(s.num_wait, 0u);
  EXPECT_EQ(s.num_spin_acq, 0u);
  EXPECT_EQ(s.num_owner_switch, 1u);  // the first acquisition
  EXPECT_EQ(s.total_wait_time_ns, 0u);
  // A failed try_lock is not an operation.
  m.lock();
  std::thread([&] { EXPECT_FALSE(m.try_lock()); }).join();
  m.unlock();
  EXPECT_EQ(m.stats().num_ops, 12u);
  // Another thread acquiring is an owner switch; coming back is another.
  std::thread([&] {
    m.lock();
    m.unlock();
  }).join();
  m.lock();
  s = m.stats();
  m.reset_stats();
  EXPECT_EQ(s.num_ops, 14u);
  EXPECT_EQ(s.num_owner_switch, 3u);
  EXPECT_EQ(m.stats().num_ops, 0u);
  m.unlock();
}

// Holds `m` for `hold_ns` while `nwaiters` threads try to lock it; returns m's stats after.
je::MutexStats contend(je::Mutex& m, int nwaiters, uint64_t hold_ns) {
  m.lock();
  std::atomic<int> started{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < nwaiters; i++) {
    waiters.emplace_back([&] {
      started++;
      m.lock();
      m.unlock();
    });
  }
  while (started.load() < nwaiters) std::this_thread::yield();
  uint64_t t0 = je::nstime_now_ns();
  while (je::nstime_now_ns() - t0 < hold_ns) std::this_thread::yield();
  m.unlock();
  for (auto& t : waiters) t.join();
  m.lock();
  je::MutexStats s = m.stats();
  m.unlock();
  return s;
}

TEST(Mutex, StatsCountContention) {
  if (!je::config::kStats) GTEST_SKIP() << "built with --disable-stats";
  // Spin 0: a waiter that finds the mutex held blocks at once. A waiter descheduled for the
  // whole hold time takes the fast path instead, so retry a few times on a loaded machine.
  je::mutex_set_max_spin(0);
  bool saw_wait = false;
  for (int attempt = 0; attempt < 5 && !saw_wait; attempt++) {
    je::Mutex m(je::LockRank::kLeaf, "contended");
    je::MutexStats s = contend(m, 3, 20 * je::kNsPerMs);
    EXPECT_EQ(s.num_ops, 5u);
    EXPECT_LE(s.num_wait + s.num_spin_acq, 3u);
    EXPECT_LE(s.max_num_thds, 3u);
    EXPECT_GE(s.total_wait_time_ns, s.max_wait_time_ns);
    EXPECT_GE(s.num_owner_switch, 2u);
    if (s.num_wait > 0) {
      saw_wait = true;
      EXPECT_GE(s.max_num_thds, 1u);
      EXPECT_GT(s.max_wait_time_ns, 0u);
    } else {
      EXPECT_EQ(s.total_wait_time_ns, 0u);
      EXPECT_EQ(s.max_num_thds, 0u);
    }
  }
  je::mutex_set_max_spin(600);
  EXPECT_EQ(je::mutex_max_spin(), 600);
  EXPECT_TRUE(saw_wait);
}

TEST(Mutex, SpinAcquisitionCounted) {
  if (!je::config::kStats) GTEST_SKIP() << "built with --disable-stats";
  // Effectively unbounded spinning: a waiter never blocks, so it acquires while spinning
  // (or on the fast path if it was descheduled for the whole hold; retry for that case).
  je::mutex_set_max_spin(INT64_MAX);
  bool saw_spin = false;
  for (int attempt = 0; attempt < 5 && !saw_spin; attempt++) {
    je::Mutex m(je::LockRank::kLeaf, "spin");
    je::MutexStats s = contend(m, 1, 2 * je::kNsPerMs);
    EXPECT_EQ(s.num_wait, 0u);
    EXPECT_EQ(s.num_ops, 3u);
    saw_spin = s.num_spin_acq == 1;
  }
  je::mutex_set_max_spin(600);
  EXPECT_TRUE(saw_spin);
}

TEST(Mutex, StatsMerge) {
  je::MutexStats a{10, 2, 3, 4, 100, 60, 2};
  je::MutexStats b{1, 1, 1, 1, 50, 70, 5};
  je::mutex_stats_merge(&a, b);
  EXPECT_EQ(a.num_ops, 11u);
  EXPECT_EQ(a.num_wait, 3u);
  EXPECT_EQ(a.num_spin_acq, 4u);
  EXPECT_EQ(a.num_owner_switch, 5u);
  EXPECT_EQ(a.total_wait_time_ns, 150u);
  EXPECT_EQ(a.max_wait_time_ns, 70u);
  EXPECT_EQ(a.max_num_thds, 5u);
}

TEST(Mutex, ForkProtocol) {
  je::Mutex a(je::LockRank::kArenas, "fork_a");
  je::Mutex b(je::LockRank::kBin, "fork_b1");
  je::Mutex c(je::LockRank::kBin, "fork_b2");  // same rank: allowed under prefork
  // A second thread keeps using the mutexes around the fork.
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load()) {
      je::MutexGuard g(b);
    }
  });
  a.prefork();
  b.prefork();
  c.prefork();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: one thread; re-initialize and use everything.
    a.postfork_child();
    b.postfork_child();
    c.postfork_child();
    int rc = 0;
    for (je::Mutex* m : {&a, &b, &c}) {
      m->lock();
      m->assert_owner();
      m->unlock();
      if (!m->try_lock()) rc = 1;
      m->unlock();
    }
    if (je::config::kStats && b.stats().num_ops != 2) rc = 2;
    {
      je::MutexGuard ga(a);
      je::MutexGuard gb(b);  // increasing rank
    }
    _exit(rc);
  }
  c.postfork_parent();
  b.postfork_parent();
  a.postfork_parent();
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  stop = true;
  busy.join();
  // Parent's mutexes still work.
  a.lock();
  b.lock();
  b.unlock();
  a.unlock();
}

TEST(Mutex, NestedRanksInIncreasingOrder) {
  je::Mutex outer(je::LockRank::kDecay, "decay");
  je::Mutex mid(je::LockRank::kEcache, "ecache");
  je::Mutex inner(je::LockRank::kBase, "base");
  outer.lock();
  mid.lock();
  inner.lock();
  inner.unlock();
  // Released out of order, then re-acquire an inner rank: fine.
  outer.unlock();
  inner.lock();
  inner.unlock();
  mid.unlock();
  // After everything is released, any rank may be taken again.
  inner.lock();
  inner.unlock();
  outer.lock();
  outer.unlock();
}

TEST(LockRank, NamesAndOrder) {
  EXPECT_STREQ(je::lock_rank_name(je::LockRank::kInit), "init");
  EXPECT_STREQ(je::lock_rank_name(je::LockRank::kEcache), "ecache");
  EXPECT_STREQ(je::lock_rank_name(je::LockRank::kLeaf), "leaf");
  EXPECT_STREQ(je::lock_rank_name(static_cast<je::LockRank>(200)), "?");
  EXPECT_EQ(je::kNumLockRanks, 20u);
  EXPECT_STREQ(je::lock_rank_name(je::LockRank::kProfRecentDump), "prof_recent_dump");
  EXPECT_STREQ(je::lock_rank_name(je::LockRank::kProfDump), "prof_dump");
  EXPECT_STREQ(je::lock_rank_name(je::LockRank::kProf), "prof");
  static_assert(je::LockRank::kCtl < je::LockRank::kProfRecentDump &&
                je::LockRank::kProfRecentDump < je::LockRank::kProfDump &&
                je::LockRank::kProfDump < je::LockRank::kProf &&
                je::LockRank::kProf < je::LockRank::kBase);
  static_assert(je::LockRank::kDecay < je::LockRank::kEcache);
  static_assert(je::LockRank::kExtentGrow < je::LockRank::kEcache);
  static_assert(je::LockRank::kEcache < je::LockRank::kEdataCache);
  static_assert(je::LockRank::kEdataCache < je::LockRank::kRtree);
  static_assert(je::LockRank::kRtree < je::LockRank::kBase);
  for (unsigned r = 0; r < je::kNumLockRanks; r++) {
    EXPECT_STRNE(je::lock_rank_name(static_cast<je::LockRank>(r)), "?") << r;
  }
}

// ---- witness: effective only in debug builds ----

class MutexDeathTest : public testing::Test {
 protected:
  void SetUp() override {
    if (!je::config::kDebug) GTEST_SKIP() << "witness checks need --enable-debug";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_F(MutexDeathTest, RankReversalAborts) {
  je::Mutex outer(je::LockRank::kEcache, "ecache_x");
  je::Mutex inner(je::LockRank::kBase, "base_x");
  EXPECT_DEATH(
      {
        inner.lock();
        outer.lock();
      },
      "<jemalloc>: lock order reversal: acquiring \"ecache_x\" \\(rank ecache\\) while holding "
      "\"base_x\" \\(rank base\\)");
}

TEST_F(MutexDeathTest, EqualRankAborts) {
  je::Mutex a(je::LockRank::kBin, "bin_a");
  je::Mutex b(je::LockRank::kBin, "bin_b");
  EXPECT_DEATH(
      {
        a.lock();
        b.lock();
      },
      "lock order reversal");
  EXPECT_DEATH(
      {
        a.lock();
        (void)b.try_lock();
      },
      "lock order reversal");
}

TEST_F(MutexDeathTest, UnlockNotHeldAborts) {
  je::Mutex m(je::LockRank::kLeaf, "leaf_x");
  EXPECT_DEATH(m.unlock(), "unlock of mutex \"leaf_x\"");
}

TEST_F(MutexDeathTest, RecursiveLockAborts) {
  je::Mutex m(je::LockRank::kLeaf, "leaf_r");
  EXPECT_DEATH(
      {
        m.lock();
        m.lock();
      },
      "recursive lock");
}

TEST_F(MutexDeathTest, AssertOwnerAborts) {
  je::Mutex m(je::LockRank::kLeaf, "leaf_o");
  EXPECT_DEATH(m.assert_owner(), "not owned");
  EXPECT_DEATH(
      {
        m.lock();
        m.assert_not_owner();
      },
      "unexpectedly owned");
  // Held by another thread: not the owner here.
  std::atomic<bool> locked{false};
  std::atomic<bool> release{false};
  std::thread t([&] {
    m.lock();
    locked = true;
    while (!release.load()) std::this_thread::yield();
    m.unlock();
  });
  while (!locked.load()) std::this_thread::yield();
  m.assert_not_owner();
  release = true;
  t.join();
}

TEST_F(MutexDeathTest, ForkUnderHeldHigherRankAborts) {
  je::Mutex held(je::LockRank::kBin, "bin_h");
  je::Mutex forked(je::LockRank::kArenas, "arenas_f");
  EXPECT_DEATH(
      {
        held.lock();
        forked.prefork();
      },
      "lock order reversal");
}

}  // namespace
