// util.h: bit and alignment arithmetic.
//
// Purpose: small constexpr helpers used by every layer (size-class math, alignment).
// Layer: support (bottom). No state.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "support/config.h"

namespace je {

/// floor(log2(x)); x must be non-zero.
constexpr unsigned lg_floor(uint64_t x) { return 63u - static_cast<unsigned>(std::countl_zero(x)); }
/// ceil(log2(x)); x must be non-zero.
constexpr unsigned lg_ceil(uint64_t x) { return x <= 1 ? 0 : lg_floor(x - 1) + 1; }
/// Smallest power of two >= x (x <= 2^63).
constexpr uint64_t pow2_ceil(uint64_t x) { return x <= 1 ? 1 : uint64_t{1} << lg_ceil(x); }
constexpr bool is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

/// Round up to a multiple of `align` (a power of two). Wraps to 0 on overflow.
constexpr size_t align_up(size_t x, size_t align) { return (x + align - 1) & ~(align - 1); }
constexpr size_t align_down(size_t x, size_t align) { return x & ~(align - 1); }
constexpr size_t page_ceil(size_t x) { return align_up(x, config::kPage); }
constexpr size_t page_floor(size_t x) { return align_down(x, config::kPage); }
constexpr bool page_aligned(size_t x) { return (x & (config::kPage - 1)) == 0; }

inline uintptr_t addr_of(const void* p) { return reinterpret_cast<uintptr_t>(p); }
inline void* ptr_of(uintptr_t a) { return reinterpret_cast<void*>(a); }
inline void* ptr_add(void* p, size_t n) { return static_cast<char*>(p) + n; }

}  // namespace je
