// prng.h: small linear congruential generators.
//
// Purpose: cheap, allocation-free pseudo-random numbers where statistical quality matters little
// but speed and determinism do: the cache-oblivious offset of large allocations, the randomized
// first decay deadline, arena selection jitter. Only the high bits of an LCG state are usable
// (the low bits have short periods), so every "range" helper takes the top bits.
// Layer: support, header-only. Callers: thread (per-thread PRNG state in tsd), extent/decay,
// arena (cache-oblivious offsets).
// Concurrency: not synchronized; each state word belongs to one thread or is protected by its
// owner's mutex.
// Invariants: lg_range in [1, bits of the type]; range >= 1.
// jemalloc mapping: prng.h (same recurrences and constants, so seeded sequences match upstream).
#pragma once

#include <cstddef>
#include <cstdint>

#include "support/util.h"

namespace je {

inline constexpr uint64_t kPrngMult64 = 6364136223846793005ULL;
inline constexpr uint64_t kPrngAdd64 = 1442695040888963407ULL;
inline constexpr uint32_t kPrngMult32 = 1103515245U;
inline constexpr uint32_t kPrngAdd32 = 12345U;

/// One LCG step on a 64-bit state.
constexpr uint64_t prng_state_next(uint64_t state) { return state * kPrngMult64 + kPrngAdd64; }

/// One LCG step on a 32-bit state.
constexpr uint32_t prng_state_next_u32(uint32_t state) { return state * kPrngMult32 + kPrngAdd32; }

/// Advances *state and returns its top lg_range bits: uniform in [0, 2^lg_range), lg_range 1..64.
constexpr uint64_t prng_lg_range_u64(uint64_t* state, unsigned lg_range) {
  uint64_t s = prng_state_next(*state);
  *state = s;
  return s >> (64 - lg_range);
}

/// Advances *state and returns its top lg_range bits, lg_range 1..32.
constexpr uint32_t prng_lg_range_u32(uint32_t* state, unsigned lg_range) {
  uint32_t s = prng_state_next_u32(*state);
  *state = s;
  return s >> (32 - lg_range);
}

/// Uniform in [0, range). Draws top-bit values below the next power of two and rejects those
/// >= range (expected < 2 draws). range <= 1 returns 0 without advancing the state.
constexpr uint64_t prng_range_u64(uint64_t* state, uint64_t range) {
  if (range <= 1) return 0;
  unsigned lg = lg_ceil(range);  // 1..64
  uint64_t r;
  do {
    r = prng_lg_range_u64(state, lg);
  } while (r >= range);
  return r;
}

/// Uniform in [0, range), 32-bit state; same contract as prng_range_u64.
constexpr uint32_t prng_range_u32(uint32_t* state, uint32_t range) {
  if (range <= 1) return 0;
  unsigned lg = lg_ceil(range);  // 1..32
  uint32_t r;
  do {
    r = prng_lg_range_u32(state, lg);
  } while (r >= range);
  return r;
}

static_assert(sizeof(size_t) == sizeof(uint64_t), "LP64 only: size_t variants use the u64 LCG");

/// size_t flavour of prng_lg_range_u64 (lg_range 1..64).
constexpr size_t prng_lg_range_zu(uint64_t* state, unsigned lg_range) {
  return static_cast<size_t>(prng_lg_range_u64(state, lg_range));
}

/// size_t flavour of prng_range_u64.
constexpr size_t prng_range_zu(uint64_t* state, size_t range) {
  return static_cast<size_t>(prng_range_u64(state, range));
}

}  // namespace je
