// extent_hooks_test: user extent hooks given to arenas.create (and swapped in through
// arena.<i>.extent_hooks) are really used for that arena's extents, the way RocksDB and folly
// use them: copy the arena's current hooks, wrap `alloc`, call the original from the wrapper.
#include <atomic>

#include "harness.h"

namespace {

extent_hooks_t* g_orig = nullptr;
std::atomic<int> g_allocs{0};
std::atomic<unsigned> g_last_arena{UINT_MAX};

void* counting_alloc(extent_hooks_t*, void* new_addr, size_t size, size_t alignment, bool* zero,
                     bool* commit, unsigned arena_ind) {
  g_allocs.fetch_add(1);
  g_last_arena.store(arena_ind);
  // The original hook ignores its first argument's identity only by convention: pass its own.
  return g_orig->alloc(g_orig, new_addr, size, alignment, zero, commit, arena_ind);
}

extent_hooks_t g_hooks;

extent_hooks_t* read_hooks(unsigned arena) {
  char name[64];
  std::snprintf(name, sizeof(name), "arena.%u.extent_hooks", arena);
  extent_hooks_t* h = nullptr;
  size_t len = sizeof(h);
  if (mallctl(name, &h, &len, nullptr, 0) != 0) return nullptr;
  return h;
}

}  // namespace

TEST(arenas_create_with_hooks_uses_them) {
  g_orig = read_hooks(0);
  ASSERT_TRUE(g_orig != nullptr);
  g_hooks = *g_orig;
  g_hooks.alloc = counting_alloc;
  extent_hooks_t* hp = &g_hooks;
  unsigned arena = 0;
  size_t len = sizeof(arena);
  ASSERT_EQ(mallctl("arenas.create", &arena, &len, &hp, sizeof(hp)), 0);
  EXPECT_EQ(read_hooks(arena), &g_hooks);
  int before = g_allocs.load();
  // Large and small allocations in the arena both need extents from the hooks.
  void* big = mallocx(size_t{8} << 20, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
  ASSERT_TRUE(big != nullptr);
  std::memset(big, 1, size_t{8} << 20);
  EXPECT_GT(g_allocs.load(), before);
  EXPECT_EQ(g_last_arena.load(), arena);
  void* small = mallocx(64, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
  ASSERT_TRUE(small != nullptr);
  unsigned owner = UINT_MAX;
  len = sizeof(owner);
  EXPECT_EQ(mallctl("arenas.lookup", &owner, &len, &small, sizeof(small)), 0);
  EXPECT_EQ(owner, arena);
  dallocx(small, MALLOCX_TCACHE_NONE);
  dallocx(big, MALLOCX_TCACHE_NONE);
  // Other arenas keep the default hooks.
  EXPECT_EQ(read_hooks(0), g_orig);
}

TEST(extent_hooks_can_be_swapped_at_run_time) {
  unsigned arena = 0;
  size_t len = sizeof(arena);
  ASSERT_EQ(mallctl("arenas.create", &arena, &len, nullptr, 0), 0);
  g_orig = read_hooks(arena);
  ASSERT_TRUE(g_orig != nullptr);
  g_hooks = *g_orig;
  g_hooks.alloc = counting_alloc;
  char name[64];
  std::snprintf(name, sizeof(name), "arena.%u.extent_hooks", arena);
  extent_hooks_t* hp = &g_hooks;
  extent_hooks_t* old = nullptr;
  len = sizeof(old);
  ASSERT_EQ(mallctl(name, &old, &len, &hp, sizeof(hp)), 0);
  EXPECT_EQ(old, g_orig);
  int before = g_allocs.load();
  // Bigger than anything the arena has retained so far: it must map new memory via the hook.
  void* p = mallocx(size_t{64} << 20, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
  ASSERT_TRUE(p != nullptr);
  EXPECT_GT(g_allocs.load(), before);
  dallocx(p, MALLOCX_TCACHE_NONE);
}
