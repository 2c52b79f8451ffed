// allocx_test: jemalloc's non-standard allocation API -- mallocx, rallocx,
// xallocx, sallocx, dallocx, sdallocx, nallocx -- and their flags
// (MALLOCX_ALIGN/LG_ALIGN/ZERO/TCACHE/TCACHE_NONE/ARENA), as jemalloc 5.3.0's manual defines them.
#include "harness.h"

namespace {

constexpr size_t kLargeMax = (size_t)7 << 60;
constexpr size_t kHuge = (size_t)1 << 62;

bool aligned(const void* p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

void* (*volatile v_mallocx)(size_t, int) = mallocx;
void* (*volatile v_rallocx)(void*, size_t, int) = rallocx;

unsigned create_arena() {
  unsigned a = 0;
  size_t len = sizeof(a);
  if (mallctl("arenas.create", &a, &len, nullptr, 0) != 0) return UINT_MAX;
  return a;
}

using jt::lookup_arena;

}  // namespace

TEST(nallocx_spec_examples) {
  EXPECT_EQ(nallocx(16385, 0), 20480u);
  EXPECT_EQ(nallocx(5000, MALLOCX_ALIGN(4096)), 8192u);
  EXPECT_EQ(nallocx(1, 0), 8u);
  EXPECT_EQ(nallocx(0, 0), 8u);
  EXPECT_EQ(nallocx(9, 0), 16u);
  EXPECT_EQ(nallocx(14336, 0), 14336u);
  EXPECT_EQ(nallocx(14337, 0), 16384u);
  EXPECT_EQ(nallocx(20000, 0), 20480u);
  EXPECT_EQ(nallocx(24000, 0), 24576u);
  EXPECT_EQ(nallocx(kLargeMax, 0), kLargeMax);
  EXPECT_EQ(nallocx(1, MALLOCX_ALIGN(64)), 64u);
  EXPECT_EQ(nallocx(1, MALLOCX_LG_ALIGN(6)), 64u);
  EXPECT_EQ(nallocx(100, MALLOCX_ALIGN(256)), 256u);
  EXPECT_EQ(nallocx(1, MALLOCX_ALIGN(8192)), 16384u);   // > page: a large class
  EXPECT_EQ(nallocx(1, MALLOCX_ALIGN(32768)), 16384u);  // large: page-aligned extent
  // Flags that do not affect the size class are ignored.
  EXPECT_EQ(nallocx(100, MALLOCX_ZERO | MALLOCX_TCACHE_NONE), 112u);
}

TEST(nallocx_too_large_is_zero) {
  EXPECT_EQ(nallocx(SIZE_MAX, 0), 0u);
  EXPECT_EQ(nallocx(kLargeMax + 1, 0), 0u);
  EXPECT_EQ(nallocx((size_t)1 << 63, 0), 0u);
  EXPECT_EQ(nallocx((size_t)1 << 63, MALLOCX_ALIGN(4096)), 0u);
  EXPECT_EQ(nallocx(SIZE_MAX - 4096, MALLOCX_ALIGN(4096)), 0u);
  // A huge alignment alone does not make the size class fail (5.3.0 only
  // rejects a sum that overflows).
  EXPECT_EQ(nallocx(1, MALLOCX_ALIGN((size_t)1 << 40)), 16384u);
}

TEST(mallocx_basic_and_sallocx) {
  for (size_t n = 1; n < 100000; n = n * 3 / 2 + 1) {
    void* p = mallocx(n, 0);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(sallocx(p, 0), nallocx(n, 0));
    EXPECT_EQ(malloc_usable_size(p), sallocx(p, 0));
    std::memset(p, 0xab, n);
    dallocx(p, 0);
  }
}

TEST(mallocx_align) {
  for (int lg = 0; lg <= 30; lg++) {
    size_t a = (size_t)1 << lg;
    size_t n = lg >= 24 ? 1 : 100;
    void* p = mallocx(n, MALLOCX_ALIGN(a));
    ASSERT_NOT_NULL(p);
    if (!aligned(p, a)) FAIL_MSG("mallocx(%zu, ALIGN(%zu)) = %p", n, a, p);
    EXPECT_EQ(sallocx(p, 0), nallocx(n, MALLOCX_ALIGN(a)));
    dallocx(p, MALLOCX_ALIGN(a));
    p = mallocx(n, MALLOCX_LG_ALIGN(lg));
    ASSERT_NOT_NULL(p);
    EXPECT_TRUE(aligned(p, a));
    dallocx(p, 0);
  }
}

TEST(mallocx_zero) {
  static const size_t sizes[] = {8, 100, 3000, 14336, 16384, 40000, 300000};
  for (size_t n : sizes) {
    for (int i = 0; i < 4; i++) {  // dirty what the zeroed request may reuse
      void* d = mallocx(n, 0);
      ASSERT_NOT_NULL(d);
      std::memset(d, 0xee, sallocx(d, 0));
      dallocx(d, 0);
    }
    void* p = mallocx(n, MALLOCX_ZERO);
    ASSERT_NOT_NULL(p);
    size_t u = sallocx(p, 0);
    EXPECT_EQ(jt::first_nonzero(p, u), u);  // the whole usable size
    dallocx(p, 0);
    p = mallocx(n, MALLOCX_ZERO | MALLOCX_ALIGN(64));
    ASSERT_NOT_NULL(p);
    EXPECT_TRUE(aligned(p, 64));
    EXPECT_EQ(jt::first_nonzero(p, n), n);
    dallocx(p, 0);
  }
}

TEST(mallocx_failure_is_null) {
  EXPECT_NULL(v_mallocx(SIZE_MAX, 0));
  EXPECT_NULL(v_mallocx(kLargeMax + 1, 0));
  EXPECT_NULL(v_mallocx(kHuge, 0));
  EXPECT_NULL(v_mallocx(kHuge, MALLOCX_ZERO));
  EXPECT_NULL(v_mallocx((size_t)1 << 63, MALLOCX_ALIGN(4096)));
}

TEST(mallocx_tcache_none) {
  for (size_t n = 8; n <= 65536; n *= 2) {
    void* p = mallocx(n, MALLOCX_TCACHE_NONE);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(sallocx(p, 0), nallocx(n, 0));
    dallocx(p, MALLOCX_TCACHE_NONE);
    // Mixing: allocate bypassing the cache, free through it, and back.
    p = mallocx(n, MALLOCX_TCACHE_NONE);
    ASSERT_NOT_NULL(p);
    dallocx(p, 0);
    p = mallocx(n, 0);
    ASSERT_NOT_NULL(p);
    dallocx(p, MALLOCX_TCACHE_NONE);
  }
}

TEST(mallocx_explicit_tcache) {
  unsigned tc = 0;
  ASSERT_EQ(jt::ctl_get("tcache.create", &tc), 0);
  void* ptrs[64];
  for (int i = 0; i < 64; i++) {
    size_t n = 16 + (size_t)i * 40;
    ptrs[i] = mallocx(n, MALLOCX_TCACHE(tc));
    ASSERT_NOT_NULL(ptrs[i]);
    EXPECT_EQ(sallocx(ptrs[i], 0), nallocx(n, 0));
  }
  for (int i = 0; i < 64; i++) dallocx(ptrs[i], MALLOCX_TCACHE(tc));
  // A block cached in tc is handed out again by tc.
  void* p = mallocx(100, MALLOCX_TCACHE(tc));
  ASSERT_NOT_NULL(p);
  dallocx(p, MALLOCX_TCACHE(tc));
  void* q = mallocx(100, MALLOCX_TCACHE(tc));
  EXPECT_EQ(q, p);
  dallocx(q, MALLOCX_TCACHE(tc));
  EXPECT_EQ(mallctl("tcache.flush", nullptr, nullptr, &tc, sizeof(tc)), 0);
  EXPECT_EQ(mallctl("tcache.destroy", nullptr, nullptr, &tc, sizeof(tc)), 0);
}

TEST(mallocx_arena) {
  unsigned a = create_arena();
  ASSERT_NE(a, UINT_MAX);
  static const size_t sizes[] = {8, 100, 4096, 14336, 16384, 40000, 1 << 20, 9 << 20};
  for (size_t n : sizes) {
    // Bypassing the tcache, the block must come from arena a.
    void* p = mallocx(n, MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(lookup_arena(p), a);
    dallocx(p, MALLOCX_TCACHE_NONE);
    // Large sizes beyond tcache_max are never cached: arena a as well.
    if (n > 32768) {
      p = mallocx(n, MALLOCX_ARENA(a));
      ASSERT_NOT_NULL(p);
      EXPECT_EQ(lookup_arena(p), a);
      dallocx(p, 0);
    }
  }
  void* p =
      mallocx(100, MALLOCX_ARENA(a) | MALLOCX_ZERO | MALLOCX_ALIGN(128) | MALLOCX_TCACHE_NONE);
  ASSERT_NOT_NULL(p);
  EXPECT_TRUE(aligned(p, 128));
  EXPECT_EQ(jt::first_nonzero(p, 100), 100u);
  EXPECT_EQ(lookup_arena(p), a);
  dallocx(p, MALLOCX_TCACHE_NONE);
}

TEST(rallocx_grow_shrink_preserves) {
  static const size_t steps[] = {10,      200,   4000,  14336, 14337, 30000, 70000,
                                 1 << 20, 50000, 16384, 14000, 64,    10};
  const size_t nsteps = sizeof(steps) / sizeof(steps[0]);
  void* p = mallocx(steps[0], 0);
  ASSERT_NOT_NULL(p);
  jt::fill_pattern(p, steps[0], nullptr);
  for (size_t i = 1; i < nsteps; i++) {
    size_t cur = steps[i - 1], next = steps[i];
    void* q = rallocx(p, next, 0);
    ASSERT_NOT_NULL(q);
    size_t keep = cur < next ? cur : next;
    const unsigned char* b = static_cast<const unsigned char*>(q);
    for (size_t j = 0; j < keep; j++) {
      if (b[j] != jt::pattern_byte(nullptr, cur, j)) {
        FAIL_MSG("rallocx %zu -> %zu lost byte %zu", cur, next, j);
        break;
      }
    }
    EXPECT_EQ(sallocx(q, 0), nallocx(next, 0));
    jt::fill_pattern(q, next, nullptr);
    p = q;
  }
  dallocx(p, 0);
}

TEST(rallocx_zero_only_grown_part) {
  static const size_t pairs[][2] = {{100, 300},      {1000, 5000},   {4000, 20000},
                                    {20000, 100000}, {16384, 40960}, {64, 1 << 20}};
  for (const auto& pr : pairs) {
    size_t n0 = pr[0], n1 = pr[1];
    for (int i = 0; i < 4; i++) {  // dirty the memory the resize may reuse
      void* d = mallocx(n1, 0);
      ASSERT_NOT_NULL(d);
      std::memset(d, 0xcc, n1);
      dallocx(d, 0);
    }
    unsigned char* p = static_cast<unsigned char*>(mallocx(n0, 0));
    ASSERT_NOT_NULL(p);
    size_t u0 = sallocx(p, 0);
    std::memset(p, 0x11, u0);
    unsigned char* q = static_cast<unsigned char*>(rallocx(p, n1, MALLOCX_ZERO));
    ASSERT_NOT_NULL(q);
    size_t u1 = sallocx(q, 0);
    // The old contents stay (up to the old usable size) and everything
    // beyond it is zero.
    size_t j = 0;
    while (j < n0 && q[j] == 0x11) j++;
    if (j != n0) FAIL_MSG("rallocx(%zu -> %zu, ZERO) changed old byte %zu", n0, n1, j);
    EXPECT_EQ(jt::first_nonzero(q + u0, u1 - u0), u1 - u0);
    dallocx(q, 0);
  }
}

TEST(rallocx_align) {
  void* p = mallocx(100, 0);
  ASSERT_NOT_NULL(p);
  for (int lg = 4; lg <= 22; lg += 3) {
    size_t a = (size_t)1 << lg;
    p = rallocx(p, 100 + (size_t)lg, MALLOCX_ALIGN(a));
    ASSERT_NOT_NULL(p);
    EXPECT_TRUE(aligned(p, a));
    EXPECT_EQ(sallocx(p, 0), nallocx(100 + (size_t)lg, MALLOCX_ALIGN(a)));
  }
  dallocx(p, 0);
}

TEST(rallocx_failure_keeps_original) {
  void* p = mallocx(3000, 0);
  ASSERT_NOT_NULL(p);
  jt::fill_pattern(p, 3000, p);
  EXPECT_NULL(v_rallocx(p, SIZE_MAX, 0));
  EXPECT_NULL(v_rallocx(p, kLargeMax + 1, 0));
  EXPECT_NULL(v_rallocx(p, kHuge, 0));
  EXPECT_NULL(v_rallocx(p, (size_t)1 << 63, MALLOCX_ALIGN(4096)));
  EXPECT_EQ(jt::check_pattern(p, 3000, p), 3000u);
  EXPECT_EQ(sallocx(p, 0), nallocx(3000, 0));
  dallocx(p, 0);
}

TEST(rallocx_arena_moves_to_arena) {
  unsigned a = create_arena();
  ASSERT_NE(a, UINT_MAX);
  void* p = mallocx(1 << 20, 0);
  ASSERT_NOT_NULL(p);
  jt::fill_pattern(p, 1 << 20, nullptr);
  void* q = rallocx(p, 3 << 20, MALLOCX_ARENA(a));
  ASSERT_NOT_NULL(q);
  EXPECT_EQ(lookup_arena(q), a);
  EXPECT_EQ(jt::check_pattern(q, 1 << 20, nullptr), (size_t)(1 << 20));
  dallocx(q, 0);
}

// The manual's kind of example: a 20000-byte block (usable 20480) grows in
// place to 24576 when asked for 24000.  A manual arena without tcache keeps
// the pages after it free, so the growth is certain.
TEST(xallocx_spec_example) {
  unsigned a = create_arena();
  ASSERT_NE(a, UINT_MAX);
  int fl = MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE;
  void* p = mallocx(20000, fl);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(sallocx(p, 0), 20480u);
  jt::fill_pattern(p, 20000, p);
  EXPECT_EQ(xallocx(p, 24000, 0, fl), 24576u);
  EXPECT_EQ(sallocx(p, 0), 24576u);
  EXPECT_EQ(jt::check_pattern(p, 20000, p), 20000u);
  dallocx(p, fl);
}

TEST(xallocx_small_stays_in_class) {
  void* p = mallocx(100, 0);  // class 112
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(xallocx(p, 110, 0, 0), 112u);
  EXPECT_EQ(xallocx(p, 200, 0, 0), 112u);  // cannot grow: old size, < 200
  EXPECT_EQ(xallocx(p, 90, 0, 0), 112u);   // 96-class would need a move
  EXPECT_EQ(xallocx(p, 90, 30, 0), 112u);  // [96, 128] admits 112
  EXPECT_EQ(xallocx(p, 100, 1000, 0), 112u);
  EXPECT_EQ(xallocx(p, 8, 0, 0), 112u);
  EXPECT_EQ(sallocx(p, 0), 112u);
  dallocx(p, 0);
}

TEST(xallocx_large_in_place) {
  // A manual arena and no tcache: nothing else allocates next to p.
  unsigned a = create_arena();
  ASSERT_NE(a, UINT_MAX);
  int fl = MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE;
  unsigned char* p = static_cast<unsigned char*>(mallocx(65536, fl));
  ASSERT_NOT_NULL(p);
  jt::fill_pattern(p, 32768, p);
  // Shrinking a large block in place always works.
  EXPECT_EQ(xallocx(p, 32768, 0, fl), 32768u);
  EXPECT_EQ(sallocx(p, 0), 32768u);
  // The tail it released is still free and adjacent: growing back works.
  EXPECT_EQ(xallocx(p, 65536, 0, fl), 65536u);
  EXPECT_EQ(sallocx(p, 0), 65536u);
  // Large cannot become small in place.
  EXPECT_EQ(xallocx(p, 14000, 0, fl), 65536u);
  // Requests beyond the largest class leave the size unchanged.
  EXPECT_EQ(xallocx(p, SIZE_MAX, 0, fl), 65536u);
  // extra is clamped so size + extra cannot overflow.
  size_t r = xallocx(p, 40000, SIZE_MAX, fl);
  EXPECT_GE(r, 40960u);
  EXPECT_EQ(sallocx(p, 0), r);
  EXPECT_EQ(jt::check_pattern(p, 32768, p), 32768u);  // contents never move
  // A grown result never exceeds what size + extra asks for.
  r = xallocx(p, 40000, 100000, fl);
  EXPECT_GE(r, 40960u);
  EXPECT_LE(r, nallocx(140000, 0));
  EXPECT_EQ(sallocx(p, 0), r);
  EXPECT_EQ(jt::check_pattern(p, 32768, p), 32768u);
  dallocx(p, fl);
}

// xallocx returns the real size after the call, whichever way it went.
// 5.3.0 can grow the block yet return the old size (when size + extra does
// not fit but size does); see doc/compat.md#xallocx-result.
TEST_COMPAT(xallocx_result_matches_sallocx, "xallocx-result") {
  jt::Rng rng(11);
  for (int i = 0; i < 200; i++) {
    size_t n = 1 + rng.below(200000);
    void* p = mallocx(n, 0);
    ASSERT_NOT_NULL(p);
    size_t old = sallocx(p, 0);
    size_t want = 1 + rng.below(300000);
    size_t extra = rng.below(2) ? rng.below(50000) : 0;
    size_t r = xallocx(p, want, extra, 0);
    EXPECT_EQ(r, sallocx(p, 0));
    if (r < want) EXPECT_EQ(r, old);  // failed to reach want: unchanged
    EXPECT_LE(r, (nallocx(want + extra, 0) > old ? nallocx(want + extra, 0) : old));
    dallocx(p, 0);
  }
}

// The same property where 5.3.0 gets it right: no extra, or an extra that
// the pages after the block can hold.
TEST(xallocx_result_matches_sallocx_simple) {
  jt::Rng rng(12);
  for (int i = 0; i < 200; i++) {
    size_t n = 1 + rng.below(200000);
    void* p = mallocx(n, 0);
    ASSERT_NOT_NULL(p);
    size_t old = sallocx(p, 0);
    size_t want = 1 + rng.below(300000);
    size_t r = xallocx(p, want, 0, 0);
    EXPECT_EQ(r, sallocx(p, 0));
    if (r < want) EXPECT_EQ(r, old);
    dallocx(p, 0);
  }
}

TEST(sdallocx_any_size_in_range) {
  static const size_t sizes[] = {1, 8, 13, 100, 1000, 4097, 14336, 16385, 20000, 70000, 1 << 20};
  for (size_t n : sizes) {
    size_t u = nallocx(n, 0);
    size_t cands[] = {n, (n + u) / 2, u};
    for (size_t s : cands) {
      void* p = mallocx(n, 0);
      ASSERT_NOT_NULL(p);
      uint64_t d0 = 0, d1 = 0;
      jt::ctl_get("thread.deallocated", &d0);
      sdallocx(p, s, 0);
      jt::ctl_get("thread.deallocated", &d1);
      EXPECT_EQ(d1 - d0, u);
    }
  }
  // With alignment: the same alignment flag as at allocation.
  for (int lg = 4; lg <= 16; lg += 4) {
    int fl = MALLOCX_LG_ALIGN(lg);
    void* p = mallocx(100, fl);
    ASSERT_NOT_NULL(p);
    sdallocx(p, 100, fl);
    p = mallocx(100, fl);
    ASSERT_NOT_NULL(p);
    sdallocx(p, nallocx(100, fl), fl);
  }
  // The malloc family's blocks too.
  void* p = malloc(333);
  ASSERT_NOT_NULL(p);
  sdallocx(p, 333, 0);
  p = calloc(3, 111);
  ASSERT_NOT_NULL(p);
  sdallocx(p, 333, MALLOCX_TCACHE_NONE);
}

TEST(dallocx_flags) {
  unsigned a = create_arena();
  ASSERT_NE(a, UINT_MAX);
  void* p = mallocx(5000, MALLOCX_ARENA(a));
  ASSERT_NOT_NULL(p);
  dallocx(p, MALLOCX_ARENA(a));
  p = mallocx(5000, MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE);
  ASSERT_NOT_NULL(p);
  dallocx(p, MALLOCX_TCACHE_NONE);
  p = malloc(77);
  ASSERT_NOT_NULL(p);
  dallocx(p, 0);
}

TEST(sallocx_and_usable_agree_for_all_entry_points) {
  void* ps[6];
  ps[0] = malloc(1234);
  ps[1] = calloc(2, 617);
  ps[2] = realloc(nullptr, 1234);
  ps[3] = mallocx(1234, 0);
  ps[4] = aligned_alloc(64, 1234);
  ASSERT_EQ(posix_memalign(&ps[5], 64, 1234), 0);
  for (void* p : ps) {
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(sallocx(p, 0), malloc_usable_size(p));
    EXPECT_GE(sallocx(p, 0), 1234u);
  }
  for (void* p : ps) dallocx(p, 0);
}
