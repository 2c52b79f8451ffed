// arena_fixture.h: helpers for the unit tests that drive whole arenas (arena_test, arenas_test,
// background_thread_test, tcache_test). Header-only; the test program boots the core first.
// Page counts and large-class counters are read through the stats snapshot (ctl), the view
// that stays public while the arena's page allocator and counters are private members.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "arena/arena.h"
#include "arena/arenas.h"
#include "ctl/ctl.h"
#include "extent/emap.h"

namespace je {

/// Allocates and frees n large blocks of `size` bytes in `a`, leaving their pages dirty there.
inline void make_dirty(Arena* a, int n, size_t size) {
  std::vector<void*> v;
  for (int i = 0; i < n; i++) {
    void* p = a->malloc_large(size, 64, false);
    ASSERT_NE(p, nullptr);
    v.push_back(p);
  }
  for (void* p : v) a->dalloc_large(g_emap.lookup(p));
}

/// A new manual arena with the given dirty and muzzy decay times (the defaults for arenas
/// created later are left as they were). nullptr (with a test failure) if it cannot be made.
inline Arena* manual_arena_with_decay(int64_t dirty_ms, int64_t muzzy_ms) {
  int64_t dirty = arenas_dirty_decay_ms_default();
  int64_t muzzy = arenas_muzzy_decay_ms_default();
  EXPECT_TRUE(arenas_set_dirty_decay_ms_default(dirty_ms));
  EXPECT_TRUE(arenas_set_muzzy_decay_ms_default(muzzy_ms));
  unsigned ind = 0;
  bool made = arena_create_manual(nullptr, &ind);
  EXPECT_TRUE(made);
  arenas_set_dirty_decay_ms_default(dirty);
  arenas_set_muzzy_decay_ms_default(muzzy);
  return made ? arena_get(ind, false) : nullptr;
}

/// A new manual arena that never decays (dirty and muzzy -1): nothing purges it but explicit
/// calls, so page counts are exact.
inline Arena* manual_arena_without_decay() { return manual_arena_with_decay(-1, -1); }

/// `stats.arenas.<ind>.<leaf>` from a fresh snapshot (an epoch write first).
template <class T>
T arena_stat(unsigned ind, const std::string& leaf) {
  uint64_t epoch = 1;
  EXPECT_EQ(ctl_byname("epoch", nullptr, nullptr, &epoch, sizeof(epoch)), 0);
  std::string name = "stats.arenas." + std::to_string(ind) + "." + leaf;
  T v{};
  size_t len = sizeof(v);
  EXPECT_EQ(ctl_byname(name.c_str(), &v, &len, nullptr, 0), 0) << name;
  return v;
}

/// Active, dirty and muzzy pages of arena `ind`.
struct ArenaPages {
  size_t active;
  size_t dirty;
  size_t muzzy;
};
inline ArenaPages arena_pages(unsigned ind) {
  return {arena_stat<size_t>(ind, "pactive"), arena_stat<size_t>(ind, "pdirty"),
          arena_stat<size_t>(ind, "pmuzzy")};
}

/// A copy of the counters of bin `binind`, shard `shard`, taken under the bin lock.
inline BinStats bin_stats(Arena* a, szind_t binind, unsigned shard = 0) {
  Bin& b = a->bin(binind, shard);
  MutexGuard g(b.mtx);
  return b.stats;
}

}  // namespace je
