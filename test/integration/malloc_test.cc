// malloc_test: the standard C allocation functions as jemalloc 5.3.0 defines
// them (jemalloc 5.3.0's manual): malloc, calloc, realloc, free,
// posix_memalign, aligned_alloc, memalign, valloc, malloc_usable_size; and what jemalloc
// 5.3.1 added to them, which 5.3.0 does not have (doc/compat.md#jemalloc-531-api): pvalloc,
// free_sized, free_aligned_sized.
#include "harness.h"

// 5.3.1's additions: weak, so that the program loads under 5.3.0 (where those tests skip).
#pragma weak free_sized
#pragma weak free_aligned_sized

namespace {

constexpr size_t kHuge = (size_t)1 << 62;      // a valid size class no mmap can satisfy
constexpr size_t kLargeMax = (size_t)7 << 60;  // SC_LARGE_MAXCLASS
constexpr size_t kPage = 4096;

bool aligned(const void* p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

// Calls through volatile function pointers so that the compiler neither
// folds calls with impossible sizes nor warns about them.
void* (*volatile v_malloc)(size_t) = malloc;
void* (*volatile v_calloc)(size_t, size_t) = calloc;
void* (*volatile v_realloc)(void*, size_t) = realloc;
void* (*volatile v_aligned_alloc)(size_t, size_t) = aligned_alloc;
void* (*volatile v_memalign)(size_t, size_t) = memalign;
void* (*volatile v_valloc)(size_t) = valloc;

}  // namespace

TEST(malloc_zero_is_unique_and_usable_8) {
  void* a = malloc(0);
  void* b = malloc(0);
  ASSERT_NOT_NULL(a);
  ASSERT_NOT_NULL(b);
  EXPECT_NE(a, b);
  EXPECT_EQ(malloc_usable_size(a), 8u);
  EXPECT_EQ(malloc_usable_size(b), 8u);
  std::memset(a, 0xa5, 8);
  free(a);
  free(b);
}

TEST(malloc_alignment_and_usable) {
  static const size_t sizes[] = {1,     7,     8,     9,      15,      16,     17,
                                 100,   1000,  4096,  4097,   14336,   14337,  16384,
                                 16385, 32768, 65536, 100000, 1 << 20, 5 << 20};
  for (size_t n : sizes) {
    void* p = malloc(n);
    ASSERT_NOT_NULL(p);
    // 16-byte quantum: every allocation of >= 16 bytes is 16-aligned; 8-byte
    // requests come from the 8-byte class.
    EXPECT_TRUE(aligned(p, n >= 16 ? 16 : 8));
    size_t u = malloc_usable_size(p);
    EXPECT_GE(u, n);
    EXPECT_EQ(u, nallocx(n, 0));
    std::memset(p, 0x5a, u);  // the whole usable size is writable
    free(p);
  }
}

TEST(malloc_failure_sets_enomem) {
  errno = 0;
  EXPECT_NULL(v_malloc(SIZE_MAX));
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_NULL(v_malloc(kLargeMax + 1));
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_NULL(v_malloc(kHuge));
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_NULL(v_malloc((size_t)PTRDIFF_MAX));
  EXPECT_EQ(errno, ENOMEM);
}

TEST(free_null_is_noop) {
  errno = 1234;
  free(nullptr);
  EXPECT_EQ(errno, 1234);
}

// Dirties a few blocks of n bytes, so that a calloc reusing them must really clear them.
static void dirty_blocks(size_t n) {
  for (int i = 0; i < 8; i++) {
    void* d = malloc(n);
    ASSERT_NOT_NULL(d);
    std::memset(d, 0xff, n);
    free(d);
  }
}

TEST(calloc_zeroes) {
  static const size_t sizes[] = {8, 48, 512, 4096, 10000, 20000, 100000, 1 << 21};
  for (size_t n : sizes) {
    dirty_blocks(n);
    unsigned char* p = static_cast<unsigned char*>(calloc(1, n));
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(jt::first_nonzero(p, n), n);
    free(p);
    p = static_cast<unsigned char*>(calloc(n / 8, 8));
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(jt::first_nonzero(p, n), n);
    EXPECT_GE(malloc_usable_size(p), n);
    free(p);
  }
}

// 5.3.0 clears the whole usable size of a small calloc, not only nmemb * size: a program that
// sizes its buffer with malloc_usable_size() sees zeros up to the end.
TEST(calloc_zeroes_usable_tail) {
  static const size_t sizes[] = {1, 141, 150, 1000, 3000};
  for (size_t n : sizes) {
    const size_t usable = nallocx(n, 0);
    dirty_blocks(usable);
    unsigned char* p = static_cast<unsigned char*>(calloc(1, n));
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(malloc_usable_size(p), usable);
    EXPECT_EQ(jt::first_nonzero(p, usable), usable);
    free(p);
  }
}

TEST(calloc_zero_sizes) {
  void* a = calloc(0, 10);
  void* b = calloc(10, 0);
  void* c = calloc(0, 0);
  EXPECT_NOT_NULL(a);
  EXPECT_NOT_NULL(b);
  EXPECT_NOT_NULL(c);
  EXPECT_NE(a, b);
  free(a);
  free(b);
  free(c);
}

TEST(calloc_overflow_enomem) {
  errno = 0;
  EXPECT_NULL(v_calloc(SIZE_MAX / 2 + 2, 2));
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_NULL(v_calloc((size_t)1 << 32, (size_t)1 << 32));
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_NULL(v_calloc(1, SIZE_MAX));
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_NULL(v_calloc(kHuge, 1));
  EXPECT_EQ(errno, ENOMEM);
}

TEST(realloc_null_is_malloc) {
  void* p = realloc(nullptr, 100);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(malloc_usable_size(p), nallocx(100, 0));
  free(p);
  // realloc(NULL, 0) is malloc(0): a minimal allocation.
  p = realloc(nullptr, 0);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(malloc_usable_size(p), 8u);
  free(p);
}

// Grow and shrink across the small/large boundary (14336 / 16384) and the
// tcache boundary (32 KiB), checking the preserved prefix each time.
TEST(realloc_preserves_contents) {
  static const size_t steps[] = {1,      24,    100,   4000,  4096,   14336,   14337,
                                 16384,  20000, 32768, 32769, 100000, 1 << 20, 3 << 20,
                                 100000, 16385, 14000, 4096,  100,    8,       1};
  const size_t nsteps = sizeof(steps) / sizeof(steps[0]);
  unsigned char* p = static_cast<unsigned char*>(malloc(steps[0]));
  ASSERT_NOT_NULL(p);
  jt::fill_pattern(p, steps[0], nullptr);
  size_t cur = steps[0];
  for (size_t i = 1; i < nsteps; i++) {
    size_t next = steps[i];
    unsigned char* q = static_cast<unsigned char*>(realloc(p, next));
    ASSERT_NOT_NULL(q);
    size_t keep = cur < next ? cur : next;
    // The pattern is keyed on the size it was written with.
    size_t bad = 0;
    for (; bad < keep; bad++) {
      if (q[bad] != jt::pattern_byte(nullptr, cur, bad)) break;
    }
    if (bad != keep) {
      FAIL_MSG("realloc %zu -> %zu lost byte %zu", cur, next, bad);
    }
    EXPECT_GE(malloc_usable_size(q), next);
    EXPECT_EQ(malloc_usable_size(q), nallocx(next, 0));
    jt::fill_pattern(q, next, nullptr);
    p = q;
    cur = next;
  }
  free(p);
}

TEST(realloc_same_class_stays_in_place) {
  void* p = malloc(100);  // class 112
  ASSERT_NOT_NULL(p);
  void* q = realloc(p, 110);
  EXPECT_EQ(q, p);
  void* r = realloc(q, 97);
  EXPECT_EQ(r, p);
  free(r);
}

TEST(realloc_zero_frees_returns_null) {
  char zr[32];
  if (jt::conf_value("zero_realloc", zr, sizeof(zr)) && std::strcmp(zr, "free") != 0) {
    SKIP_TEST("MALLOC_CONF sets zero_realloc:%s", zr);
  }
  const char* mode = nullptr;
  ASSERT_EQ(jt::ctl_get("opt.zero_realloc", &mode), 0);
  ASSERT_STREQ(mode, "free");
  uint64_t before = 0;
  jt::refresh_stats();
  EXPECT_EQ(jt::ctl_get("stats.zero_reallocs", &before), 0);
  uint64_t freed0 = 0, freed1 = 0;
  ASSERT_EQ(jt::ctl_get("thread.deallocated", &freed0), 0);
  void* p = malloc(1000);
  ASSERT_NOT_NULL(p);
  errno = 4321;
  void* q = v_realloc(p, 0);
  EXPECT_NULL(q);
  EXPECT_EQ(errno, 4321);  // errno untouched
  ASSERT_EQ(jt::ctl_get("thread.deallocated", &freed1), 0);
  EXPECT_EQ(freed1 - freed0, nallocx(1000, 0));  // p was freed
  uint64_t after = 0;
  jt::refresh_stats();
  EXPECT_EQ(jt::ctl_get("stats.zero_reallocs", &after), 0);
  EXPECT_EQ(after, before + 1);
}

TEST(realloc_failure_keeps_block) {
  unsigned char* p = static_cast<unsigned char*>(malloc(5000));
  ASSERT_NOT_NULL(p);
  jt::fill_pattern(p, 5000, p);
  // A valid size class the kernel cannot map: NULL + ENOMEM.
  errno = 0;
  EXPECT_NULL(v_realloc(p, kHuge));
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(jt::check_pattern(p, 5000, p), 5000u);
  EXPECT_EQ(malloc_usable_size(p), nallocx(5000, 0));
  // Beyond the largest size class: NULL, block intact.  (5.3.0 does not set
  // errno on this path; nothing is required of it here.)
  EXPECT_NULL(v_realloc(p, SIZE_MAX));
  EXPECT_NULL(v_realloc(p, kLargeMax + 1));
  EXPECT_EQ(jt::check_pattern(p, 5000, p), 5000u);
  // Still a live, usable block.
  unsigned char* q = static_cast<unsigned char*>(realloc(p, 6000));
  ASSERT_NOT_NULL(q);
  EXPECT_EQ(jt::check_pattern(q, 5000, p), 5000u);
  free(q);
}

TEST(posix_memalign_errors) {
  void* p = reinterpret_cast<void*>(0x1234);
  EXPECT_EQ(posix_memalign(&p, 0, 10), EINVAL);
  EXPECT_EQ(posix_memalign(&p, 3, 10), EINVAL);
  EXPECT_EQ(posix_memalign(&p, 4, 10), EINVAL);   // < sizeof(void *)
  EXPECT_EQ(posix_memalign(&p, 24, 10), EINVAL);  // not a power of two
  EXPECT_EQ(posix_memalign(&p, 4097, 10), EINVAL);
  EXPECT_EQ(p, reinterpret_cast<void*>(0x1234));  // untouched on error
  EXPECT_EQ(posix_memalign(&p, 8, SIZE_MAX), ENOMEM);
  EXPECT_EQ(posix_memalign(&p, 64, kHuge), ENOMEM);
  EXPECT_EQ(posix_memalign(&p, (size_t)1 << 63, 1), ENOMEM);
  EXPECT_EQ(p, reinterpret_cast<void*>(0x1234));
}

TEST(posix_memalign_honours_alignment) {
  for (int lg = 3; lg <= 30; lg++) {
    size_t a = (size_t)1 << lg;
    static const size_t sizes[] = {1, 8, 100, 4096, 20000};
    for (size_t n : sizes) {
      if (lg >= 24 && n != 1) continue;  // keep the address-space use small
      void* p = nullptr;
      ASSERT_EQ(posix_memalign(&p, a, n), 0);
      ASSERT_NOT_NULL(p);
      if (!aligned(p, a)) FAIL_MSG("posix_memalign(%zu, %zu) = %p", a, n, p);
      EXPECT_GE(malloc_usable_size(p), n);
      EXPECT_EQ(malloc_usable_size(p), nallocx(n, MALLOCX_ALIGN(a)));
      std::memset(p, 1, n);
      free(p);
    }
  }
  void* p = nullptr;
  ASSERT_EQ(posix_memalign(&p, 8, 0), 0);  // size 0: a minimal allocation
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(malloc_usable_size(p), 8u);
  free(p);
}

TEST(aligned_alloc_behaviour) {
  // Invalid alignment: NULL with errno EINVAL.
  static const size_t bad[] = {0, 3, 24, 100, 4095};
  for (size_t a : bad) {
    errno = 0;
    EXPECT_NULL(v_aligned_alloc(a, 10));
    EXPECT_EQ(errno, EINVAL);
  }
  // Alignments below sizeof(void *) are valid here (unlike posix_memalign),
  // and the size need not be a multiple of the alignment.
  static const size_t good[] = {1, 2, 4, 8, 16, 64, 4096, (size_t)1 << 21};
  for (size_t a : good) {
    void* p = v_aligned_alloc(a, 10);
    ASSERT_NOT_NULL(p);
    EXPECT_TRUE(aligned(p, a));
    EXPECT_EQ(malloc_usable_size(p), nallocx(10, MALLOCX_ALIGN(a)));
    free(p);
  }
  errno = 0;
  EXPECT_NULL(v_aligned_alloc(8, SIZE_MAX));
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_NULL(v_aligned_alloc((size_t)1 << 63, 1));
  EXPECT_EQ(errno, ENOMEM);
}

TEST(memalign_behaviour) {
  for (int lg = 0; lg <= 22; lg++) {
    size_t a = (size_t)1 << lg;
    void* p = v_memalign(a, 33);
    ASSERT_NOT_NULL(p);
    EXPECT_TRUE(aligned(p, a));
    EXPECT_GE(malloc_usable_size(p), 33u);
    free(p);
  }
  // Invalid alignments and impossible sizes fail with NULL.
  EXPECT_NULL(v_memalign(0, 10));
  EXPECT_NULL(v_memalign(3, 10));
  EXPECT_NULL(v_memalign(48, 10));
  EXPECT_NULL(v_memalign(8, SIZE_MAX));
  errno = 0;
  EXPECT_NULL(v_memalign(64, kHuge));
  EXPECT_EQ(errno, ENOMEM);
}

TEST(valloc_is_page_aligned) {
  static const size_t sizes[] = {1, 100, 4096, 4097, 20000, 1 << 20};
  for (size_t n : sizes) {
    void* p = v_valloc(n);
    ASSERT_NOT_NULL(p);
    EXPECT_TRUE(aligned(p, kPage));
    EXPECT_EQ(malloc_usable_size(p), nallocx(n, MALLOCX_ALIGN(kPage)));
    std::memset(p, 7, n);
    free(p);
  }
  void* p = v_valloc(1);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(malloc_usable_size(p), 4096u);
  free(p);
  EXPECT_NULL(v_valloc(SIZE_MAX));
  errno = 0;
  EXPECT_NULL(v_valloc(kHuge));
  EXPECT_EQ(errno, ENOMEM);
}

TEST(malloc_usable_size_basics) {
  EXPECT_EQ(malloc_usable_size(nullptr), 0u);
  for (size_t n = 1; n <= 40000; n += 97) {
    void* p = malloc(n);
    ASSERT_NOT_NULL(p);
    size_t u = malloc_usable_size(p);
    EXPECT_GE(u, n);
    EXPECT_EQ(u, nallocx(n, 0));
    EXPECT_EQ(u, sallocx(p, 0));
    free(p);
  }
}

TEST(many_small_blocks_distinct) {
  // 20000 live blocks of mixed small sizes: distinct, non-overlapping
  // contents survive until freed.
  constexpr int kN = 20000;
  static unsigned char* blocks[kN];
  static size_t sizes[kN];
  jt::Rng rng(7);
  for (int i = 0; i < kN; i++) {
    sizes[i] = 1 + rng.below(600);
    blocks[i] = static_cast<unsigned char*>(malloc(sizes[i]));
    ASSERT_NOT_NULL(blocks[i]);
    std::memset(blocks[i], (unsigned char)i, sizes[i]);
  }
  int bad = 0;
  for (int i = 0; i < kN; i++) {
    for (size_t j = 0; j < sizes[i]; j++) {
      if (blocks[i][j] != (unsigned char)i) {
        bad++;
        break;
      }
    }
    free(blocks[i]);
  }
  EXPECT_EQ(bad, 0);
}

// ---------------------------------------------------------------------------
// jemalloc 5.3.1's additions.

namespace {

uint64_t thread_deallocated() {
  uint64_t v = 0;
  size_t len = sizeof(v);
  mallctl("thread.deallocated", &v, &len, nullptr, 0);
  return v;
}

}  // namespace

TEST_COMPAT(pvalloc_rounds_to_whole_pages, "jemalloc-531-api") {
  // glibc's semantics: valloc of the size rounded up to a page multiple; 0 is one page. The
  // block is ours: sallocx knows it, and free releases it.
  void* (*volatile v_pvalloc)(size_t) = pvalloc;
  static const struct {
    size_t n, usable;
  } cases[] = {{0, kPage},
               {1, kPage},
               {kPage, kPage},
               {kPage + 1, 2 * kPage},
               {3 * kPage - 1, 3 * kPage},
               {100000, 114688}};  // 102400: class 112 KiB
  for (const auto& c : cases) {
    void* p = v_pvalloc(c.n);
    ASSERT_NOT_NULL(p);
    EXPECT_TRUE(aligned(p, kPage));
    EXPECT_EQ(malloc_usable_size(p), c.usable);
    EXPECT_EQ(sallocx(p, 0), c.usable);
    std::memset(p, 0x5a, c.usable);
    uint64_t before = thread_deallocated();
    free(p);
    EXPECT_EQ(thread_deallocated() - before, c.usable);
  }
  errno = 0;
  EXPECT_NULL(v_pvalloc(SIZE_MAX));
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_NULL(v_pvalloc(SIZE_MAX - kPage + 2));  // overflows when rounded up
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_NULL(v_pvalloc(kHuge));
  EXPECT_EQ(errno, ENOMEM);
}

TEST_COMPAT(free_sized_frees, "jemalloc-531-api") {
  ASSERT_TRUE(free_sized != nullptr);
  // Small, large within the thread cache, large beyond it: each block is released (the thread's
  // deallocated counter grows by its usable size).
  for (size_t n : {size_t{1}, size_t{100}, size_t{14336}, size_t{20000}, size_t{1} << 20}) {
    void* p = malloc(n);
    ASSERT_NOT_NULL(p);
    uint64_t before = thread_deallocated();
    free_sized(p, n);
    EXPECT_EQ(thread_deallocated() - before, nallocx(n, 0));
  }
  free_sized(nullptr, 16);  // ignored, as free(NULL)
}

TEST_COMPAT(free_aligned_sized_frees, "jemalloc-531-api") {
  ASSERT_TRUE(free_aligned_sized != nullptr);
  for (size_t a : {size_t{16}, size_t{64}, kPage, size_t{1} << 16}) {
    for (size_t n : {size_t{1}, size_t{3000}, size_t{70000}}) {
      void* p = aligned_alloc(a, n);
      ASSERT_NOT_NULL(p);
      EXPECT_TRUE(aligned(p, a));
      size_t u = malloc_usable_size(p);
      uint64_t before = thread_deallocated();
      free_aligned_sized(p, a, n);
      EXPECT_EQ(thread_deallocated() - before, u);
    }
  }
  free_aligned_sized(nullptr, 64, 16);
}
