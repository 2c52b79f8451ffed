// stress.h: helpers shared by the stress programs (test/stress), on top of
// the integration harness (test/integration/harness.h).
//
// Every stress program has a short form, run by `make check` (each under
// ~5 s on 2 cores), and a long form, run by `make stress` (STRESS_LONG=1).
// STRESS_SCALE=<n> sets the multiplier directly.
#ifndef JT_STRESS_H_
#define JT_STRESS_H_

#include "harness.h"

namespace stress {

// Work multiplier: 1 for the short form, 10 for the long one.
inline int scale() {
  const char* s = std::getenv("STRESS_SCALE");
  if (s != nullptr && std::atoi(s) > 0) return std::atoi(s);
  const char* l = std::getenv("STRESS_LONG");
  return (l != nullptr && l[0] == '1') ? 10 : 1;
}

// A word-wise fill pattern keyed by the block's address and size: fast
// enough to cover every byte of large blocks, and different for every
// (address, size) so that a block handed out twice, or written through a
// stale pointer, does not verify.
inline uint64_t seed_of(const void* p, size_t n) {
  uint64_t x = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull ^ (uint64_t)n * 0xc2b2ae3d27d4eb4full;
  x ^= x >> 31;
  return x | 1;
}

inline void fill(void* p, size_t n) {
  uint64_t s = seed_of(p, n);
  unsigned char* b = static_cast<unsigned char*>(p);
  size_t words = n / 8;
  for (size_t i = 0; i < words; i++) {
    uint64_t w = s + i * 0x632be59bd9b4e019ull;
    std::memcpy(b + i * 8, &w, 8);
  }
  for (size_t i = words * 8; i < n; i++) b[i] = (unsigned char)(s >> ((i & 7) * 8));
}

// Returns n when the block still holds its pattern, else the first bad byte.
inline size_t verify(const void* p, size_t n) {
  uint64_t s = seed_of(p, n);
  const unsigned char* b = static_cast<const unsigned char*>(p);
  size_t words = n / 8;
  for (size_t i = 0; i < words; i++) {
    uint64_t w;
    std::memcpy(&w, b + i * 8, 8);
    if (w != s + i * 0x632be59bd9b4e019ull) {
      for (size_t j = 0; j < 8; j++) {
        uint64_t want = s + i * 0x632be59bd9b4e019ull;
        if (b[i * 8 + j] != (unsigned char)(want >> (j * 8))) return i * 8 + j;
      }
    }
  }
  for (size_t i = words * 8; i < n; i++) {
    if (b[i] != (unsigned char)(s >> ((i & 7) * 8))) return i;
  }
  return n;
}

// A skewed size in [1, 256 KiB]: mostly small, rarely large.
//   60% 1..128 B, 25% ..4 KiB, 10% ..32 KiB, 4% ..128 KiB, 1% ..256 KiB.
inline size_t skewed_size(jt::Rng& rng) {
  uint64_t r = rng.below(100);
  if (r < 60) return 1 + rng.below(128);
  if (r < 85) return 129 + rng.below(4096 - 128);
  if (r < 95) return 4097 + rng.below(32768 - 4096);
  if (r < 99) return 32769 + rng.below(131072 - 32768);
  return 131073 + rng.below(262144 - 131072);
}

}  // namespace stress

#endif  // JT_STRESS_H_
