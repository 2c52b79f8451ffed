// extent_hooks_test: user extent hooks given to arenas.create (and swapped in through
// arena.<i>.extent_hooks) are really used for that arena's extents, the way RocksDB and folly
// use them: copy the arena's current hooks, wrap `alloc`, call the original from the wrapper.
#include <algorithm>
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

namespace {

// Hooks that never split (the manual allows `split` to refuse by returning true): each alloc
// call's size is recorded.
extent_hooks_t* g_nosplit_orig = nullptr;
extent_hooks_t g_nosplit;
std::atomic<int> g_nosplit_splits{0};
constexpr int kMaxAllocs = 64;
std::atomic<int> g_nosplit_nallocs{0};
size_t g_nosplit_sizes[kMaxAllocs];

void* recording_alloc(extent_hooks_t*, void* new_addr, size_t size, size_t alignment, bool* zero,
                      bool* commit, unsigned arena_ind) {
  int i = g_nosplit_nallocs.fetch_add(1);
  if (i < kMaxAllocs) g_nosplit_sizes[i] = size;
  return g_nosplit_orig->alloc(g_nosplit_orig, new_addr, size, alignment, zero, commit, arena_ind);
}

bool refusing_split(extent_hooks_t*, void*, size_t, size_t, size_t, bool, unsigned) {
  g_nosplit_splits.fetch_add(1);
  return true;
}

// Allocates `size` bytes in `arena`; with `exact`, checks that the hooks served it with an
// alloc call of less than the 2 MiB a growth of the retained series asks for: the exact extent.
void expect_served(unsigned arena, size_t size, bool exact_alloc) {
  const int first = g_nosplit_nallocs.load();
  void* p = mallocx(size, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
  ASSERT_NOT_NULL(p);
  std::memset(p, 0x5a, size);
  unsigned owner = UINT_MAX;
  size_t len = sizeof(owner);
  EXPECT_EQ(mallctl("arenas.lookup", &owner, &len, &p, sizeof(p)), 0);
  EXPECT_EQ(owner, arena);
  const int last = std::min(g_nosplit_nallocs.load(), kMaxAllocs);
  bool exact = false;
  for (int i = first; i < last; i++) exact = exact || g_nosplit_sizes[i] < (size_t{2} << 20);
  if (exact_alloc) EXPECT_TRUE(exact);
  dallocx(p, MALLOCX_TCACHE_NONE);
}

}  // namespace

// jemalloc 5.3.0: when the hooks refuse to split the region grown for a request, the arena
// asks their `alloc` for exactly the extent needed (its integration/extent test: alloc of
// 2 MiB, split refused, then alloc of 36 KiB serves a 32 KiB request).
TEST(split_refusing_hooks_get_exact_allocs) {
  unsigned arena = 0;
  size_t len = sizeof(arena);
  ASSERT_EQ(mallctl("arenas.create", &arena, &len, nullptr, 0), 0);
  g_nosplit_orig = read_hooks(arena);
  ASSERT_NOT_NULL(g_nosplit_orig);
  g_nosplit = *g_nosplit_orig;
  g_nosplit.alloc = recording_alloc;
  g_nosplit.split = refusing_split;
  char name[64];
  std::snprintf(name, sizeof(name), "arena.%u.extent_hooks", arena);
  extent_hooks_t* hp = &g_nosplit;
  ASSERT_EQ(mallctl(name, nullptr, nullptr, &hp, sizeof(hp)), 0);

  size_t large0 = 0;
  len = sizeof(large0);
  ASSERT_EQ(mallctl("arenas.lextent.0.size", &large0, &len, nullptr, 0), 0);
  const int splits_before = g_nosplit_splits.load();
  expect_served(arena, large0 * 2, true);
  EXPECT_GT(g_nosplit_splits.load(), splits_before);  // it was asked, and refused
  expect_served(arena, 42, true);                     // a slab
  expect_served(arena, large0 * 5, true);
  // Purging with the hooks in place works too; what was purged may serve again (no split is
  // needed for an extent of the same size).
  std::snprintf(name, sizeof(name), "arena.%u.purge", arena);
  EXPECT_EQ(mallctl(name, nullptr, nullptr, nullptr, 0), 0);
  expect_served(arena, large0 * 2, false);
  expect_served(arena, large0 * 3, true);
}
