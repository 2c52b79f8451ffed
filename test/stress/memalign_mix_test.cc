// memalign_mix_test: a smoke test of the aligned entry points mixed
// together -- posix_memalign, aligned_alloc, memalign, valloc and mallocx
// with MALLOCX_ALIGN -- with random alignments and sizes, frees in random
// order (free, dallocx, sdallocx with the alignment flag), on two threads.
#include "stress.h"

namespace {

std::atomic<long> g_bad{0};

struct Block {
  void* p;
  size_t n;
  size_t align;
  int how;
};

void complain(const char* what, const Block& b) {
  if (g_bad.fetch_add(1) < 5) {
    std::printf("  %s: %p size %zu align %zu via %d\n", what, b.p, b.n, b.align, b.how);
  }
}

Block alloc_one(jt::Rng& rng) {
  Block b{};
  // Mostly modest alignments, sometimes up to 2 MiB.
  int lg = rng.below(10) == 0 ? (int)(12 + rng.below(10)) : (int)(3 + rng.below(10));
  b.align = (size_t)1 << lg;
  b.n = rng.below(4) == 0 ? 1 + rng.below(100000) : 1 + rng.below(2000);
  b.how = (int)rng.below(5);
  switch (b.how) {
    case 0:
      if (posix_memalign(&b.p, b.align, b.n) != 0) b.p = nullptr;
      break;
    case 1: b.p = aligned_alloc(b.align, b.n); break;
    case 2: b.p = memalign(b.align, b.n); break;
    case 3:
      b.align = 4096;
      b.p = valloc(b.n);
      break;
    default: b.p = mallocx(b.n, MALLOCX_ALIGN(b.align)); break;
  }
  return b;
}

void free_one(const Block& b, jt::Rng& rng) {
  switch (rng.below(3)) {
    case 0: free(b.p); break;
    case 1: dallocx(b.p, 0); break;
    default: sdallocx(b.p, b.n, MALLOCX_ALIGN(b.align)); break;
  }
}

void* mix(void* arg) {
  jt::Rng rng((uintptr_t)arg);
  constexpr int kSlots = 400;
  Block slots[kSlots] = {};
  long ops = 30000L * stress::scale();
  for (long i = 0; i < ops; i++) {
    Block& s = slots[rng.below(kSlots)];
    if (s.p != nullptr) {
      if (stress::verify(s.p, s.n) != s.n) complain("corrupted", s);
      free_one(s, rng);
    }
    s = alloc_one(rng);
    if (s.p == nullptr) {
      complain("allocation failed", s);
      continue;
    }
    if (((uintptr_t)s.p & (s.align - 1)) != 0) complain("misaligned", s);
    if (malloc_usable_size(s.p) < s.n) complain("usable size too small", s);
    if (malloc_usable_size(s.p) != nallocx(s.n, MALLOCX_ALIGN(s.align))) {
      complain("usable size differs from nallocx", s);
    }
    stress::fill(s.p, s.n);
  }
  for (Block& s : slots) {
    if (s.p == nullptr) continue;
    if (stress::verify(s.p, s.n) != s.n) complain("corrupted", s);
    free_one(s, rng);
  }
  return nullptr;
}

}  // namespace

TEST(aligned_entry_points_mixed) {
  g_bad = 0;
  pthread_t a, b;
  ASSERT_EQ(pthread_create(&a, nullptr, mix, (void*)5), 0);
  ASSERT_EQ(pthread_create(&b, nullptr, mix, (void*)6), 0);
  pthread_join(a, nullptr);
  pthread_join(b, nullptr);
  EXPECT_EQ(g_bad.load(), 0);
}
