// dss_test: sbrk as a source of extent memory (the `dss` option, `arena.<i>.dss`), checked on
// ours and on jemalloc 5.3.0 alike.
//
//   * opt.dss reads "secondary" by default, and arena 0 starts with opt.dss;
//   * arena.<i>.dss: exact names only (EINVAL otherwise, prefixes too), the value read back is
//     the one in force after the write, arena.4096.dss is the precedence that arenas created
//     later take, an index without an arena fails;
//   * with "primary", a fresh arena's memory comes from sbrk: its blocks lie between the break
//     seen before and the break after; freed and purged, that memory is used again without the
//     break growing (sbrk memory is never unmapped);
//   * the application's own sbrk calls in between are tolerated: the allocator continues above
//     them and leaves the application's bytes alone;
//   * with "secondary" (the default) a fresh arena's memory comes from mmap.
#include <unistd.h>

#include "harness.h"

namespace {

const char* dss_of(const char* name) {
  const char* s = nullptr;
  size_t len = sizeof(s);
  if (mallctl(name, &s, &len, nullptr, 0) != 0) return "(error)";
  return s;
}

int dss_write(const char* name, const char* v, const char** old) {
  size_t len = sizeof(*old);
  return mallctl(name, old, old != nullptr ? &len : nullptr, &v, sizeof(v));
}

unsigned new_arena() {
  unsigned a = 0;
  size_t len = sizeof(a);
  if (mallctl("arenas.create", &a, &len, nullptr, 0) != 0) return ~0u;
  return a;
}

bool between(const void* p, const void* lo, const void* hi) {
  auto u = reinterpret_cast<uintptr_t>(p);
  return u >= reinterpret_cast<uintptr_t>(lo) && u < reinterpret_cast<uintptr_t>(hi);
}

bool conf_sets_dss() {
  const char* c = std::getenv("MALLOC_CONF");
  return c != nullptr && std::strstr(c, "dss") != nullptr;
}

}  // namespace

TEST(opt_dss_default_secondary) {
  if (conf_sets_dss()) {
    EXPECT_STREQ(dss_of("arena.0.dss"), dss_of("opt.dss"));
    return;
  }
  EXPECT_STREQ(dss_of("opt.dss"), "secondary");
  EXPECT_STREQ(dss_of("arena.0.dss"), "secondary");
  const char* v = "primary";
  EXPECT_EQ(mallctl("opt.dss", nullptr, nullptr, &v, sizeof(v)), EPERM);
}

TEST(arena_dss_names_and_errors) {
  char name[128];
  unsigned a = new_arena();
  ASSERT_NE(a, ~0u);
  jt::ctl_name(name, "arena.%u.dss", a);
  const char* old = nullptr;
  EXPECT_EQ(dss_write(name, "primary", &old), 0);
  EXPECT_STREQ(old, "primary");  // 5.3.0 reads back after writing
  EXPECT_STREQ(dss_of(name), "primary");
  EXPECT_EQ(dss_write(name, "disabled", &old), 0);
  EXPECT_STREQ(old, "disabled");
  EXPECT_EQ(dss_write(name, "secondary", nullptr), 0);
  EXPECT_STREQ(dss_of(name), "secondary");
  EXPECT_EQ(dss_write(name, "prim", nullptr), EINVAL);  // no prefixes here, unlike MALLOC_CONF
  EXPECT_EQ(dss_write(name, "bogus", nullptr), EINVAL);
  EXPECT_EQ(dss_write(name, "", nullptr), EINVAL);
  EXPECT_STREQ(dss_of(name), "secondary");
  jt::ctl_name(name, "stats.arenas.%u.dss", a);
  uint64_t epoch = 1;
  mallctl("epoch", nullptr, nullptr, &epoch, sizeof(epoch));
  EXPECT_STREQ(dss_of(name), "secondary");
  // An index past the arenas is not a name; a destroyed arena's index is EFAULT.
  EXPECT_NE(dss_write("arena.4000.dss", "disabled", nullptr), 0);
  jt::ctl_name(name, "arena.%u.destroy", a);
  ASSERT_EQ(mallctl(name, nullptr, nullptr, nullptr, 0), 0);
  jt::ctl_name(name, "arena.%u.dss", a);
  EXPECT_EQ(dss_write(name, "disabled", nullptr), EFAULT);
}

TEST(arena_4096_dss_is_the_default_for_new_arenas) {
  char name[128];
  const char* before = dss_of("arena.4096.dss");
  const char* old = nullptr;
  EXPECT_EQ(dss_write("arena.4096.dss", "disabled", &old), 0);
  EXPECT_STREQ(old, "disabled");
  unsigned a = new_arena();
  ASSERT_NE(a, ~0u);
  EXPECT_STREQ(dss_of(jt::ctl_name(name, "arena.%u.dss", a)), "disabled");
  EXPECT_STREQ(dss_of("arena.0.dss"), dss_of("opt.dss"));  // existing arenas keep theirs
  EXPECT_EQ(dss_write("arena.4096.dss", before, nullptr), 0);
  EXPECT_STREQ(dss_of("arena.4096.dss"), before);
}

TEST(dss_primary_serves_from_sbrk_and_reuses) {
  char name[128];
  unsigned a = new_arena();
  ASSERT_NE(a, ~0u);
  ASSERT_EQ(dss_write(jt::ctl_name(name, "arena.%u.dss", a), "primary", nullptr), 0);
  const int flags = MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE;
  void* brk0 = sbrk(0);
  const size_t big = size_t{1} << 20;
  void* p = mallocx(big, flags);
  ASSERT_NOT_NULL(p);
  void* brk1 = sbrk(0);
  EXPECT_TRUE(between(p, brk0, brk1));
  std::memset(p, 0xa5, big);
  void* s = mallocx(64, flags);  // small blocks too: their slab comes from the same source
  ASSERT_NOT_NULL(s);
  EXPECT_TRUE(between(s, brk0, sbrk(0)));
  dallocx(s, flags);
  dallocx(p, flags);
  // Purged (not unmapped: sbrk memory stays) and reused without growing the break.
  ASSERT_EQ(mallctl(jt::ctl_name(name, "arena.%u.purge", a), nullptr, nullptr, nullptr, 0), 0);
  void* brk2 = sbrk(0);
  void* q = mallocx(big, flags | MALLOCX_ZERO);
  ASSERT_NOT_NULL(q);
  EXPECT_TRUE(between(q, brk0, brk2));
  EXPECT_EQ(sbrk(0), brk2);
  EXPECT_EQ(static_cast<unsigned char*>(q)[0], 0u);
  EXPECT_EQ(static_cast<unsigned char*>(q)[big - 1], 0u);
  dallocx(q, flags);
}

TEST(dss_tolerates_application_sbrk) {
  char name[128];
  unsigned a = new_arena();
  ASSERT_NE(a, ~0u);
  ASSERT_EQ(dss_write(jt::ctl_name(name, "arena.%u.dss", a), "primary", nullptr), 0);
  const int flags = MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE;
  void* p = mallocx(size_t{1} << 20, flags);
  ASSERT_NOT_NULL(p);
  // The application moves the break itself, by an odd amount, and writes there.
  char* mine = static_cast<char*>(sbrk(12345));
  ASSERT_NE(mine, reinterpret_cast<char*>(-1));
  std::memset(mine, 0x5c, 12345);
  // Force growth: more than the arena has left.
  void* q = mallocx(size_t{8} << 20, flags);
  ASSERT_NOT_NULL(q);
  EXPECT_TRUE(between(q, mine + 12345, sbrk(0)));
  std::memset(q, 0x33, size_t{8} << 20);
  bool intact = true;
  for (size_t i = 0; i < 12345; i++) intact = intact && mine[i] == 0x5c;
  EXPECT_TRUE(intact);
  dallocx(q, flags);
  dallocx(p, flags);
}

TEST(dss_secondary_prefers_mmap) {
  char name[128];
  unsigned a = new_arena();
  ASSERT_NE(a, ~0u);
  ASSERT_EQ(dss_write(jt::ctl_name(name, "arena.%u.dss", a), "secondary", nullptr), 0);
  void* brk0 = sbrk(0);
  void* p = mallocx(size_t{1} << 20, MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE);
  ASSERT_NOT_NULL(p);
  EXPECT_FALSE(between(p, brk0, sbrk(0)));
  EXPECT_EQ(sbrk(0), brk0);
  dallocx(p, MALLOCX_TCACHE_NONE);
}
