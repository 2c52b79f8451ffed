// realloc_chain_test: blocks resized many times in a row -- grown from 1 byte
// to several MiB and shrunk back, through realloc, rallocx (with
// MALLOCX_ZERO) and xallocx -- on two threads at once, checking after every
// step that the preserved prefix is intact (and the grown part zeroed when
// asked).
#include "stress.h"

namespace {

// Byte i of chain `seed`: independent of the block's size, so the prefix
// survives every resize unchanged.
inline unsigned char chain_byte(uint64_t seed, size_t i) {
  uint64_t x = seed ^ (i * 0x9e3779b97f4a7c15ull);
  x ^= x >> 29;
  return (unsigned char)(x * 0xbf58476d1ce4e5b9ull >> 56);
}

void chain_fill(unsigned char* p, size_t from, size_t to, uint64_t seed) {
  for (size_t i = from; i < to; i++) p[i] = chain_byte(seed, i);
}

size_t chain_check(const unsigned char* p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != chain_byte(seed, i)) return i;
  }
  return n;
}

std::atomic<long> g_bad{0};

void report(const char* what, size_t from, size_t to, size_t at) {
  if (g_bad.fetch_add(1) < 5) {
    std::printf("  %s %zu -> %zu: byte %zu wrong\n", what, from, to, at);
  }
}

constexpr size_t kMax = (size_t)6 << 20;

void* realloc_chains(void* arg) {
  jt::Rng rng((uintptr_t)arg);
  int rounds = 6 * stress::scale();
  for (int r = 0; r < rounds; r++) {
    uint64_t seed = rng.next();
    size_t n = 1;
    unsigned char* p = static_cast<unsigned char*>(malloc(n));
    if (p == nullptr) {
      g_bad++;
      return nullptr;
    }
    chain_fill(p, 0, n, seed);
    // Grow by 5..60 % per step (plus a little), crossing every boundary.
    while (n < kMax) {
      size_t next = n + n * (5 + rng.below(56)) / 100 + 1 + rng.below(64);
      unsigned char* q = static_cast<unsigned char*>(realloc(p, next));
      if (q == nullptr) {
        g_bad++;
        free(p);
        return nullptr;
      }
      size_t bad = chain_check(q, n, seed);
      if (bad != n) report("realloc grow", n, next, bad);
      chain_fill(q, n, next, seed);
      p = q;
      n = next;
    }
    // And shrink back in steps.
    while (n > 1) {
      size_t next = n - n * (5 + rng.below(56)) / 100 - 1;
      if (next == 0 || next > n) next = 1;
      unsigned char* q = static_cast<unsigned char*>(realloc(p, next));
      if (q == nullptr) {
        g_bad++;
        free(p);
        return nullptr;
      }
      size_t bad = chain_check(q, next, seed);
      if (bad != next) report("realloc shrink", n, next, bad);
      p = q;
      n = next;
    }
    free(p);
  }
  return nullptr;
}

void* rallocx_chains(void* arg) {
  jt::Rng rng((uintptr_t)arg);
  int rounds = 6 * stress::scale();
  for (int r = 0; r < rounds; r++) {
    uint64_t seed = rng.next();
    size_t n = 8;
    unsigned char* p = static_cast<unsigned char*>(mallocx(n, 0));
    if (p == nullptr) {
      g_bad++;
      return nullptr;
    }
    chain_fill(p, 0, n, seed);
    while (n < kMax / 2) {
      size_t next = n + n * (10 + rng.below(60)) / 100 + rng.below(100);
      // First try in place with some slack; else move (zeroing the tail).
      size_t got = xallocx(p, next, rng.below(2) ? next / 4 : 0, 0);
      if (got >= next) {
        if (got != sallocx(p, 0)) report("xallocx result", n, next, got);
        size_t bad = chain_check(p, n, seed);
        if (bad != n) report("xallocx", n, next, bad);
      } else {
        size_t old_usable = sallocx(p, 0);
        unsigned char* q = static_cast<unsigned char*>(rallocx(p, next, MALLOCX_ZERO));
        if (q == nullptr) {
          g_bad++;
          dallocx(p, 0);
          return nullptr;
        }
        size_t bad = chain_check(q, n, seed);
        if (bad != n) report("rallocx grow", n, next, bad);
        size_t usable = sallocx(q, 0);
        if (usable > old_usable &&
            jt::first_nonzero(q + old_usable, usable - old_usable) != usable - old_usable) {
          report("rallocx ZERO tail", n, next, old_usable);
        }
        p = q;
      }
      chain_fill(p, n, next, seed);
      n = next;
    }
    while (n > 8) {
      size_t next = n / 2 + rng.below(n / 4 + 1);
      if (next < 8) next = 8;
      unsigned char* q = static_cast<unsigned char*>(rallocx(p, next, 0));
      if (q == nullptr) {
        g_bad++;
        dallocx(p, 0);
        return nullptr;
      }
      size_t bad = chain_check(q, next, seed);
      if (bad != next) report("rallocx shrink", n, next, bad);
      p = q;
      n = next;
    }
    sdallocx(p, n, 0);
  }
  return nullptr;
}

}  // namespace

TEST(realloc_chains_two_threads) {
  g_bad = 0;
  pthread_t a, b;
  ASSERT_EQ(pthread_create(&a, nullptr, realloc_chains, (void*)1), 0);
  ASSERT_EQ(pthread_create(&b, nullptr, realloc_chains, (void*)2), 0);
  pthread_join(a, nullptr);
  pthread_join(b, nullptr);
  EXPECT_EQ(g_bad.load(), 0);
}

TEST(rallocx_xallocx_chains_two_threads) {
  g_bad = 0;
  pthread_t a, b;
  ASSERT_EQ(pthread_create(&a, nullptr, rallocx_chains, (void*)3), 0);
  ASSERT_EQ(pthread_create(&b, nullptr, rallocx_chains, (void*)4), 0);
  pthread_join(a, nullptr);
  pthread_join(b, nullptr);
  EXPECT_EQ(g_bad.load(), 0);
}

TEST(many_short_chains) {
  // Lots of small blocks each resized a few times, interleaved.
  g_bad = 0;
  constexpr int kN = 512;
  static unsigned char* blocks[kN];
  static size_t sizes[kN];
  static uint64_t seeds[kN];
  jt::Rng rng(99);
  for (int i = 0; i < kN; i++) {
    sizes[i] = 1 + rng.below(100);
    seeds[i] = rng.next();
    blocks[i] = static_cast<unsigned char*>(malloc(sizes[i]));
    ASSERT_NOT_NULL(blocks[i]);
    chain_fill(blocks[i], 0, sizes[i], seeds[i]);
  }
  for (int step = 0; step < 40 * stress::scale(); step++) {
    for (int i = 0; i < kN; i++) {
      size_t n = sizes[i];
      size_t next = 1 + rng.below(rng.below(8) == 0 ? 40000 : 2000);
      unsigned char* q = static_cast<unsigned char*>(realloc(blocks[i], next));
      ASSERT_NOT_NULL(q);
      size_t keep = n < next ? n : next;
      size_t bad = chain_check(q, keep, seeds[i]);
      if (bad != keep) report("short chain", n, next, bad);
      if (next > n) chain_fill(q, n, next, seeds[i]);
      blocks[i] = q;
      sizes[i] = next;
    }
  }
  for (int i = 0; i < kN; i++) free(blocks[i]);
  EXPECT_EQ(g_bad.load(), 0);
}
