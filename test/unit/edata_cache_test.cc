// edata_cache_test.cc: the recycled-descriptor cache -- an empty cache carves fresh, distinct,
// aligned descriptors from its Base; put descriptors are reused before any new one is
// carved, without touching the Base again; available() counts exactly what can be reused (the
// stats.arenas.<i>.extent_avail value); concurrent get/put neither loses nor duplicates a
// descriptor; and the cache's mutex counters (mutexes.extent_avail) count acquisitions and owner
// switches, reset to a fresh state, and survive the fork hooks.
//
// Each test has its own Base (its own metadata blocks), destroyed at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>
#include <vector>

#include "extent/edata_cache.h"
#include "meta/base.h"
#include "os/pages.h"
#include "support/config.h"

namespace je {
namespace {

class EdataCacheTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(pages::boot()); }
  void SetUp() override {
    static unsigned next_ind = 300;
    base = Base::create(next_ind++, MetadataThp::kDisabled);
    ASSERT_NE(base, nullptr);
    cache.init(base);
  }
  void TearDown() override {
    if (base != nullptr) base->destroy();
  }

  /// n fresh descriptors, checked non-null.
  std::vector<Edata*> take(size_t n) {
    std::vector<Edata*> v;
    for (size_t i = 0; i < n; i++) {
      Edata* e = cache.get();
      EXPECT_NE(e, nullptr) << "get() #" << i;
      v.push_back(e);
    }
    return v;
  }

  Base* base = nullptr;
  EdataCache cache;
};

TEST_F(EdataCacheTest, EmptyCacheCarvesDistinctAlignedDescriptorsFromItsBase) {
  EXPECT_EQ(cache.available(), 0u);
  const size_t before = base->stats().allocated;
  std::vector<Edata*> v = take(16);
  std::set<Edata*> distinct(v.begin(), v.end());
  EXPECT_EQ(distinct.size(), v.size()) << "one descriptor handed out twice";
  for (Edata* e : v) {
    EXPECT_EQ(addr_of(e) % alignof(Edata), 0u);
    // Freshly carved: a default descriptor (no extent, no size class).
    EXPECT_EQ(e->size, 0u);
    EXPECT_EQ(e->szind, sc::kNSizes);
  }
  // Descriptors must not overlap.
  std::sort(v.begin(), v.end());
  for (size_t i = 1; i < v.size(); i++) {
    EXPECT_GE(addr_of(v[i]) - addr_of(v[i - 1]), sizeof(Edata)) << "descriptors overlap";
  }
  EXPECT_GE(base->stats().allocated - before, 16 * sizeof(Edata))
      << "descriptors did not come from the cache's Base";
  EXPECT_EQ(cache.available(), 0u) << "fresh descriptors counted as available";
}

TEST_F(EdataCacheTest, PutDescriptorsAreReusedBeforeNewOnes) {
  std::vector<Edata*> v = take(3);
  for (Edata* e : v) cache.put(e);
  EXPECT_EQ(cache.available(), 3u);
  const size_t allocated = base->stats().allocated;
  std::set<Edata*> back;
  for (int i = 0; i < 3; i++) back.insert(cache.get());
  EXPECT_EQ(back, std::set<Edata*>(v.begin(), v.end())) << "not the descriptors that were put";
  EXPECT_EQ(cache.available(), 0u);
  EXPECT_EQ(base->stats().allocated, allocated) << "reuse allocated new metadata";
  // One put back is the next one out, again without new metadata.
  cache.put(v[1]);
  EXPECT_EQ(cache.get(), v[1]);
  EXPECT_EQ(base->stats().allocated, allocated);
  // Drained: the next one is new.
  Edata* fresh = cache.get();
  EXPECT_EQ(back.count(fresh), 0u) << "a descriptor in use was handed out again";
  EXPECT_GT(base->stats().allocated, allocated);
}

TEST_F(EdataCacheTest, AvailableCountsPutsMinusReuses) {
  std::vector<Edata*> v = take(40);
  for (size_t i = 0; i < v.size(); i++) {
    cache.put(v[i]);
    EXPECT_EQ(cache.available(), i + 1);
  }
  for (size_t i = v.size(); i > 0; i--) {
    ASSERT_NE(cache.get(), nullptr);
    EXPECT_EQ(cache.available(), i - 1);
  }
}

TEST_F(EdataCacheTest, ConcurrentGetPutLosesAndDuplicatesNothing) {
  constexpr unsigned kThreads = 4;
  constexpr unsigned kRounds = 2000;
  constexpr unsigned kHeld = 8;          // descriptors each thread holds at once
  constexpr unsigned kKept = kHeld / 2;  // ... and still holds at the end of each round
  std::vector<std::vector<Edata*>> last(kThreads);
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < kThreads; t++) {
    ts.emplace_back([&, t] {
      std::vector<Edata*> held;
      for (unsigned r = 0; r < kRounds; r++) {
        while (held.size() < kHeld) {
          Edata* e = cache.get();
          if (e == nullptr) return;
          // Tag it: a descriptor held by two threads at once would be overwritten.
          e->sn = t;
          held.push_back(e);
        }
        for (Edata* e : held) {
          if (e->sn != t) return;  // seen by the check below as a short list
        }
        while (held.size() > kKept) {
          cache.put(held.back());
          held.pop_back();
        }
      }
      last[t] = held;
    });
  }
  for (std::thread& t : ts) t.join();
  std::set<Edata*> all;
  for (unsigned t = 0; t < kThreads; t++) {
    EXPECT_EQ(last[t].size(), kKept) << "thread " << t << " saw a descriptor it held change";
    all.insert(last[t].begin(), last[t].end());
  }
  EXPECT_EQ(all.size(), size_t{kThreads} * kKept) << "two threads hold the same descriptor";
  // Everything else is in the cache: draining it yields distinct descriptors none of which is
  // held, as many as available() said.
  const size_t avail = cache.available();
  for (size_t i = 0; i < avail; i++) {
    Edata* e = cache.get();
    EXPECT_TRUE(all.insert(e).second) << "the cache returned a held or repeated descriptor";
  }
  EXPECT_EQ(cache.available(), 0u);
}

TEST_F(EdataCacheTest, MutexStatsCountEveryAcquisition) {
  if constexpr (!config::kStats) {
    cache.get();
    MutexStats s = cache.mutex_stats();
    EXPECT_EQ(s.num_ops, 0u) << "stats disabled, yet counted";
    return;
  }
  cache.reset_mutex_stats();
  std::vector<Edata*> v = take(5);     // 5 acquisitions (empty cache: carved from base)
  for (Edata* e : v) cache.put(e);     // 5
  cache.get();                         // 1
  MutexStats s = cache.mutex_stats();  // the snapshot's own acquisition: 1
  EXPECT_EQ(s.num_ops, 12u);
  EXPECT_EQ(s.num_owner_switch, 1u) << "one thread only: just the first acquisition switches";
  EXPECT_EQ(s.num_wait, 0u);

  // Another thread taking the mutex is an owner switch, and so is this thread taking it back.
  std::thread([&] { cache.put(cache.get()); }).join();
  s = cache.mutex_stats();
  EXPECT_EQ(s.num_ops, 15u);
  EXPECT_EQ(s.num_owner_switch, 3u);
}

TEST_F(EdataCacheTest, ResetMutexStatsStartsCountingAfresh) {
  if constexpr (!config::kStats) GTEST_SKIP() << "built without stats";
  take(3);
  cache.reset_mutex_stats();
  MutexStats s = cache.mutex_stats();
  EXPECT_EQ(s.num_ops, 1u) << "only the snapshot itself after a reset";
  EXPECT_EQ(s.num_owner_switch, 1u) << "the owner is forgotten too";
  EXPECT_EQ(s.total_wait_time_ns, 0u);
  EXPECT_EQ(s.max_wait_time_ns, 0u);
}

TEST_F(EdataCacheTest, UsableAfterForkHooks) {
  std::vector<Edata*> v = take(2);
  cache.put(v[0]);
  cache.prefork();
  cache.postfork_parent();
  EXPECT_EQ(cache.get(), v[0]);
  cache.put(v[1]);
  cache.prefork();
  cache.postfork_child();
  EXPECT_EQ(cache.available(), 1u) << "the child lost the cached descriptors";
  EXPECT_EQ(cache.get(), v[1]);
  if constexpr (config::kStats) {
    // The child's mutex starts with clean counters (then counts the snapshot).
    EXPECT_EQ(cache.mutex_stats().num_ops, 2u);
  }
}

}  // namespace
}  // namespace je
