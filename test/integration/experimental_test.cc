// experimental_test: the experimental.* names jemalloc 5.3.0's own tests use --
// experimental.arenas_create_ext, experimental.batch_alloc and
// experimental.hooks.safety_check_abort -- with 5.3.0's argument layouts (an ABI: the structs
// below are declared here as 5.3.0 lays them out, they are in no public header), semantics and
// error codes. Passes on Debian's 5.3.0 too (run.sh runs it there).
#include <new>

#include "harness.h"

// The program carries experimental_infallible_new:true, so that a failed operator new goes to
// the safety-check abort, which the hook test below intercepts. Nothing else here uses new.
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "experimental_infallible_new:true";
}

namespace {

// 5.3.0's arena_config_t.
struct ArenaConfig {
  extent_hooks_t* extent_hooks;
  bool metadata_use_hooks;
};
// 5.3.0's batch_alloc_packet_t.
struct BatchAllocPacket {
  void** ptrs;
  size_t num;
  size_t size;
  int flags;
};

extent_hooks_t* g_orig = nullptr;
extent_hooks_t g_hooks;
std::atomic<int> g_allocs{0};

void* counting_alloc(extent_hooks_t*, void* new_addr, size_t size, size_t alignment, bool* zero,
                     bool* commit, unsigned arena_ind) {
  g_allocs.fetch_add(1);
  return g_orig->alloc(g_orig, new_addr, size, alignment, zero, commit, arena_ind);
}

void prepare_hooks() {
  size_t len = sizeof(g_orig);
  ASSERT_EQ(mallctl("arena.0.extent_hooks", &g_orig, &len, nullptr, 0), 0);
  g_hooks = *g_orig;
  g_hooks.alloc = counting_alloc;
}

// Creates an arena with the hooks above; checks whether creating it called them (metadata) and
// whether its first allocation did (data), and that the allocation is the arena's.
void create_ext(bool metadata_use_hooks) {
  prepare_hooks();
  ArenaConfig c{&g_hooks, metadata_use_hooks};
  unsigned arena = 0;
  size_t len = sizeof(arena);
  int before = g_allocs.load();
  ASSERT_EQ(mallctl("experimental.arenas_create_ext", &arena, &len, &c, sizeof(c)), 0);
  EXPECT_EQ(g_allocs.load() > before, metadata_use_hooks);
  char name[64];
  std::snprintf(name, sizeof(name), "arena.%u.extent_hooks", arena);
  extent_hooks_t* h = nullptr;
  len = sizeof(h);
  EXPECT_EQ(mallctl(name, &h, &len, nullptr, 0), 0);
  EXPECT_EQ(h, &g_hooks);
  before = g_allocs.load();
  void* p = mallocx(42, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
  ASSERT_NOT_NULL(p);
  EXPECT_GT(g_allocs.load(), before);
  unsigned owner = UINT_MAX;
  len = sizeof(owner);
  EXPECT_EQ(mallctl("arenas.lookup", &owner, &len, &p, sizeof(p)), 0);
  EXPECT_EQ(owner, arena);
  dallocx(p, MALLOCX_TCACHE_NONE);
  // The arena goes away with everything it mapped, metadata included, through the hooks.
  std::snprintf(name, sizeof(name), "arena.%u.destroy", arena);
  EXPECT_EQ(mallctl(name, nullptr, nullptr, nullptr, 0), 0);
}

}  // namespace

TEST(arenas_create_ext_metadata_through_hooks) { create_ext(true); }

TEST(arenas_create_ext_metadata_not_through_hooks) { create_ext(false); }

TEST(arenas_create_ext_errors) {
  prepare_hooks();
  ArenaConfig c{&g_hooks, false};
  unsigned arena = 0;
  // The index must be deliverable: otherwise EINVAL, *oldlenp 0, no arena.
  size_t len = sizeof(arena) + 1;
  EXPECT_EQ(mallctl("experimental.arenas_create_ext", &arena, &len, &c, sizeof(c)), EINVAL);
  EXPECT_EQ(len, 0u);
  // The configuration is written whole.
  len = sizeof(arena);
  EXPECT_EQ(mallctl("experimental.arenas_create_ext", &arena, &len, &c, sizeof(c) - 1), EINVAL);
  // Without a configuration: an arena with the default hooks.
  unsigned narenas = 0, after = 0;
  size_t ulen = sizeof(narenas);
  ASSERT_EQ(mallctl("arenas.narenas", &narenas, &ulen, nullptr, 0), 0);
  len = sizeof(arena);
  ASSERT_EQ(mallctl("experimental.arenas_create_ext", &arena, &len, nullptr, 0), 0);
  ASSERT_EQ(mallctl("arenas.narenas", &after, &ulen, nullptr, 0), 0);
  EXPECT_GE(arena, narenas - 1);
  EXPECT_GE(after, narenas);
}

TEST(batch_alloc_fills_like_mallocx) {
  constexpr size_t kNum = 50;
  void* ptrs[kNum] = {};
  for (int flags : {0, MALLOCX_ZERO, MALLOCX_ALIGN(256) | MALLOCX_ZERO, MALLOCX_TCACHE_NONE}) {
    for (size_t size : {size_t{1}, size_t{100}, size_t{4096}, size_t{20000}}) {
      BatchAllocPacket pk{ptrs, kNum, size, flags};
      size_t filled = 0;
      size_t len = sizeof(filled);
      ASSERT_EQ(mallctl("experimental.batch_alloc", &filled, &len, &pk, sizeof(pk)), 0);
      ASSERT_EQ(filled, kNum);
      for (size_t i = 0; i < kNum; i++) {
        ASSERT_NOT_NULL(ptrs[i]);
        EXPECT_EQ(sallocx(ptrs[i], 0), nallocx(size, flags));
        if (flags & MALLOCX_ZERO) {
          const auto* b = static_cast<const unsigned char*>(ptrs[i]);
          for (size_t k = 0; k < size; k++) {
            if (b[k] != 0) {
              FAIL_MSG("batch_alloc with MALLOCX_ZERO: byte %zu of block %zu is %u", k, i, b[k]);
              break;
            }
          }
        }
        // (5.3.0 serves large sizes the thread cache holds from it without the alignment: a
        // 20000-byte block with MALLOCX_ALIGN(256) may sit 64 bytes off. Ours aligns them all;
        // the check covers what both do.)
        if ((flags & MALLOCX_ALIGN(256)) && size <= 4096) {
          EXPECT_EQ(reinterpret_cast<uintptr_t>(ptrs[i]) % 256, 0u);
        }
        for (size_t j = 0; j < i; j++) EXPECT_NE(ptrs[i], ptrs[j]);
      }
      for (size_t i = 0; i < kNum; i++) std::memset(ptrs[i], 0xa5, size);
      for (size_t i = 0; i < kNum; i++) dallocx(ptrs[i], flags & MALLOCX_TCACHE_NONE);
    }
  }
}

TEST(batch_alloc_errors_and_limits) {
  void* ptrs[4] = {};
  BatchAllocPacket pk{ptrs, 4, 64, 0};
  size_t filled = 7;
  size_t len = sizeof(filled);
  // The count must be deliverable and the packet written whole.
  len = sizeof(filled) - 1;
  EXPECT_EQ(mallctl("experimental.batch_alloc", &filled, &len, &pk, sizeof(pk)), EINVAL);
  EXPECT_EQ(len, 0u);
  len = sizeof(filled);
  EXPECT_EQ(mallctl("experimental.batch_alloc", &filled, &len, &pk, sizeof(pk) - 1), EINVAL);
  EXPECT_EQ(mallctl("experimental.batch_alloc", &filled, &len, nullptr, 0), EINVAL);
  // Nothing asked, nothing filled; an impossible size fills nothing and is no error.
  pk.num = 0;
  ASSERT_EQ(mallctl("experimental.batch_alloc", &filled, &len, &pk, sizeof(pk)), 0);
  EXPECT_EQ(filled, 0u);
  pk.num = 4;
  pk.size = SIZE_MAX - 4096;
  filled = 7;
  ASSERT_EQ(mallctl("experimental.batch_alloc", &filled, &len, &pk, sizeof(pk)), 0);
  EXPECT_EQ(filled, 0u);
}

namespace {
std::atomic<int> g_abort_calls{0};
char g_abort_msg[256];
void fake_abort(const char* message) {
  std::snprintf(g_abort_msg, sizeof(g_abort_msg), "%s", message);
  g_abort_calls.fetch_add(1);
}
using AbortHook = void (*)(const char*);
}  // namespace

TEST(safety_check_abort_hook_intercepts_infallible_new) {
  AbortHook h = &fake_abort;
  // Write-only, and written whole.
  AbortHook old = nullptr;
  size_t len = sizeof(old);
  EXPECT_EQ(mallctl("experimental.hooks.safety_check_abort", &old, &len, &h, sizeof(h)), EPERM);
  EXPECT_EQ(mallctl("experimental.hooks.safety_check_abort", nullptr, nullptr, &h, 1), EINVAL);
  EXPECT_EQ(mallctl("experimental.hooks.safety_check_abort", nullptr, nullptr, nullptr, 0), 0);
  ASSERT_EQ(mallctl("experimental.hooks.safety_check_abort", nullptr, nullptr, &h, sizeof(h)), 0);
  bool infallible = false;
  len = sizeof(infallible);
  ASSERT_EQ(mallctl("opt.experimental_infallible_new", &infallible, &len, nullptr, 0), 0);
  if (!infallible) SKIP_TEST("opt.experimental_infallible_new is off");
  void* volatile p = reinterpret_cast<void*>(1);
  volatile size_t impossible = SIZE_MAX - 4096;  // volatile: no compile-time size warning
  try {
    p = ::operator new(impossible);  // cannot succeed
  } catch (...) {
    FAIL_MSG("operator new threw instead of calling the abort hook");
  }
  EXPECT_NULL(p);
  EXPECT_EQ(g_abort_calls.load(), 1);
  EXPECT_STREQ(g_abort_msg,
               "<jemalloc>: Allocation failed and opt.experimental_infallible_new is true. "
               "Aborting.\n");
  // NULL restores the abort (not exercised: it would end the program).
  h = nullptr;
  EXPECT_EQ(mallctl("experimental.hooks.safety_check_abort", nullptr, nullptr, &h, sizeof(h)), 0);
}
