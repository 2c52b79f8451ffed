// sz.h: size <-> size-class conversions.
//
// Purpose: answer "which class serves this request, and how big is it really" on the allocation
// fast path, plus the page-multiple ("psz") class arithmetic the extent layer uses to index and
// quantize free extents. Everything is `constexpr` over tables derived from `sc.h` at compile
// time, so the answers are identical whether computed by the compiler or at run time.
//
// Layer: meta. Callers: the api fast paths (malloc, nallocx, sdallocx), arena (small/large
// dispatch, aligned allocation), tcache, extent (eset bins, pac sizing), ctl/stats.
//
// Concurrency: none; pure functions over immutable tables.
//
// Invariants: for every class index i, size2index(index2size(i)) == i; s2u(n) is the smallest
// class >= n; psz classes are the page multiples of the class table, with a sentinel
// pind2sz(kNPSizes) == kLargeMaxClass + page. Requests up to kLookupMaxClass go through one byte
// table; larger ones use lg_floor arithmetic (no search over the class table).
//
// jemalloc mapping: `sz.h`/`sz.c` (`sz_size2index`, `sz_index2size`, `sz_s2u`, `sz_sa2u`,
// `sz_psz2ind`, `sz_pind2sz`, `sz_psz2u`, `sz_large_pad`, `sz_psz_quantize_floor/ceil`).
// Observable through `nallocx`, `malloc_usable_size` and the extent index j of
// `stats.arenas.<i>.extents.<j>.*`.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "meta/sc.h"
#include "support/compiler.h"
#include "support/config.h"
#include "support/util.h"

namespace je::sz {

/// Extra page carried by every large extent under cache-oblivious placement, so the user
/// pointer can be shifted by a random cache-line multiple without running past the extent.
inline constexpr size_t kLargePad = config::kCacheOblivious ? config::kPage : 0;

namespace detail {

/// The arithmetic path holds above 2^kLgFirstGroup (64 B); below it lie the tiny class and the
/// quantum-spaced first group, which only the lookup table serves.
inline constexpr unsigned kLgFirstGroup = config::kLgQuantum + sc::kLgNGroup;
static_assert((size_t{1} << kLgFirstGroup) <= sc::kLookupMaxClass);
/// psz classes below the large ones (4, 8, 12 KiB).
inline constexpr unsigned kNSmallPSizes = sc::kNPSizes - sc::kNLExtents;

constexpr std::array<size_t, sc::kNSizes> build_index2size() {
  std::array<size_t, sc::kNSizes> t{};
  for (unsigned i = 0; i < sc::kNSizes; ++i) t[i] = sc::kSizeClasses[i].size;
  return t;
}

constexpr std::array<size_t, sc::kNPSizes + 1> build_pind2sz() {
  std::array<size_t, sc::kNPSizes + 1> t{};
  unsigned p = 0;
  for (const sc::SizeClass& c : sc::kSizeClasses) {
    if (c.psz) t[p++] = c.size;
  }
  // Sentinel: "one step past the largest class" keeps psz2u total without a branch on overflow.
  t[sc::kNPSizes] = sc::kLargeMaxClass + config::kPage;
  return t;
}

/// One slot per 8-byte step of request size: slot k serves sizes (8(k-1), 8k].
inline constexpr size_t kLookupSlots = (sc::kLookupMaxClass >> sc::kLgTinyMin) + 1;

constexpr std::array<uint8_t, kLookupSlots> build_size2index_tab() {
  std::array<uint8_t, kLookupSlots> t{};
  unsigned i = 0;
  for (size_t k = 0; k < kLookupSlots; ++k) {
    const size_t size = k << sc::kLgTinyMin;
    while (sc::kSizeClasses[i].size < size) ++i;
    t[k] = static_cast<uint8_t>(i);
  }
  return t;
}

alignas(kCacheline) inline constexpr std::array<size_t, sc::kNSizes> kIndex2Size =
    build_index2size();
alignas(kCacheline) inline constexpr std::array<size_t, sc::kNPSizes + 1> kPind2Sz =
    build_pind2sz();
alignas(kCacheline) inline constexpr std::array<uint8_t, kLookupSlots> kSize2Index =
    build_size2index_tab();
static_assert(sc::kNSizes <= 256, "class indices must fit the byte lookup table");

// Arithmetic for 2^kLgFirstGroup < size <= kLargeMaxClass. With g = lg_floor(size - 1) the
// request lies in (2^g, 2^(g+1)], whose classes are 2^g + n * 2^(g-2), n = 1..4; the top bits
// (size - 1) >> (g - 2) are 4 + (n - 1), which gives the index without any table.

/// Class index of `size` by arithmetic.
constexpr szind_t size2index_compute(size_t size) {
  const unsigned g = lg_floor(size - 1);
  return sc::kNTiny + sc::kNGroup * (g - kLgFirstGroup) +
         static_cast<unsigned>((size - 1) >> (g - sc::kLgNGroup));
}

/// Class size for `size` by arithmetic: round up to the spacing of its group.
constexpr size_t s2u_compute(size_t size) {
  const unsigned g = lg_floor(size - 1);
  return align_up(size, size_t{1} << (g - sc::kLgNGroup));
}

}  // namespace detail

/// Size of class `i` (i < kNSizes).
JE_ALWAYS_INLINE constexpr size_t index2size(szind_t i) { return detail::kIndex2Size[i]; }

/// Index of the smallest class >= `size`; size 0 maps to class 0, sizes above kLargeMaxClass
/// to kNSizes.
JE_ALWAYS_INLINE constexpr szind_t size2index(size_t size) {
  if (JE_LIKELY(size <= sc::kLookupMaxClass)) {
    return detail::kSize2Index[(size + (sc::kTinyMin - 1)) >> sc::kLgTinyMin];
  }
  if (JE_UNLIKELY(size > sc::kLargeMaxClass)) return sc::kNSizes;
  return detail::size2index_compute(size);
}

/// Usable size of a request of `size` bytes (s2u(0) is the smallest class, as upstream);
/// 0 when `size` exceeds kLargeMaxClass.
JE_ALWAYS_INLINE constexpr size_t s2u(size_t size) {
  if (JE_LIKELY(size <= sc::kLookupMaxClass)) {
    return detail::kIndex2Size[detail::kSize2Index[(size + (sc::kTinyMin - 1)) >> sc::kLgTinyMin]];
  }
  if (JE_UNLIKELY(size > sc::kLargeMaxClass)) return 0;
  return detail::s2u_compute(size);
}

/// Usable size of a request of `size` bytes aligned to `alignment` (a power of two), or 0 when
/// no class can satisfy it. Small requests with alignment <= page round up to a class that is a
/// multiple of the alignment; otherwise the result is a large class, which the arena over-sizes
/// by page_ceil(alignment) - page to place it. Size 0 yields s2u(0) like upstream, which is not
/// aligned: callers that promise alignment for size 0 pass 1.
constexpr size_t sa2u(size_t size, size_t alignment) {
  if (size <= sc::kSmallMaxClass && alignment <= config::kPage) {
    // Small classes of a multiple of `alignment` (<= page) are aligned in their slab.
    const size_t usize = s2u(align_up(size, alignment));
    if (usize < sc::kLargeMinClass) return usize;
  }
  if (alignment > sc::kLargeMaxClass) return 0;
  size_t usize;
  if (size <= sc::kLargeMinClass) {
    usize = sc::kLargeMinClass;
  } else {
    usize = s2u(size);
    if (usize < size) return 0;  // s2u overflowed to 0
  }
  // The arena maps usize + pad + (page_ceil(alignment) - page) bytes; reject if that wraps.
  if (usize + kLargePad + page_ceil(alignment) - config::kPage < usize) return 0;
  return usize;
}

/// Index of the smallest page-multiple class >= `psz` (psz > 0; 0 maps to 0), or kNPSizes when
/// `psz` exceeds kLargeMaxClass.
constexpr pszind_t psz2ind(size_t psz) {
  if (psz <= sc::kLargeMinClass) {
    // 4, 8, 12, 16 KiB: one class per page.
    return static_cast<pszind_t>((psz - (psz != 0)) >> config::kLgPage);
  }
  if (psz > sc::kLargeMaxClass) return sc::kNPSizes;
  return detail::size2index_compute(psz) - sc::kNBins + detail::kNSmallPSizes;
}

/// Size of page-multiple class `i` (i <= kNPSizes; kNPSizes gives kLargeMaxClass + page).
JE_ALWAYS_INLINE constexpr size_t pind2sz(pszind_t i) { return detail::kPind2Sz[i]; }

/// Smallest page-multiple class >= `psz` (psz > 0), or kLargeMaxClass + page when too big.
constexpr size_t psz2u(size_t psz) {
  if (psz <= sc::kLargeMinClass) return page_ceil(psz);
  if (psz > sc::kLargeMaxClass) return sc::kLargeMaxClass + config::kPage;
  return detail::s2u_compute(psz);
}

/// Largest "psz class + pad" extent size <= `size` (page-aligned, > 0): the size under which a
/// free extent of `size` bytes is filed, so any extent found in that bin can serve that class.
/// An extent no larger than one page plus the pad is returned unchanged. `pad` is the
/// cache-oblivious pad (kLargePad); the parameter exists so tests can check both builds.
constexpr size_t psz_quantize_floor(size_t size, size_t pad = kLargePad) {
  const pszind_t p = psz2ind(size - pad + 1);
  if (p == 0) return size;
  return pind2sz(p - 1) + pad;
}

/// Smallest "psz class + pad" extent size >= `size` (page-aligned, > 0): the bin to start
/// searching from so that every extent found is at least `size` bytes.
constexpr size_t psz_quantize_ceil(size_t size, size_t pad = kLargePad) {
  size_t r = psz_quantize_floor(size, pad);
  if (r < size) r = pind2sz(psz2ind(r - pad + 1)) + pad;
  return r;
}

// ---- Compile-time self-checks --------------------------------------------------------------

namespace detail {

/// Both paths (byte table and arithmetic) agree with the class table at every class boundary.
constexpr bool conversions_consistent() {
  for (unsigned i = 0; i < sc::kNSizes; ++i) {
    const size_t size = index2size(i);
    if (size2index(size) != i || s2u(size) != size) return false;
    if (size2index(size + 1) != i + 1) return false;
    const size_t prev = i == 0 ? 0 : index2size(i - 1);
    if (size - 1 > prev && (size2index(size - 1) != i || s2u(size - 1) != size)) return false;
    if (size > (size_t{1} << kLgFirstGroup)) {
      if (size2index_compute(size) != i || s2u_compute(size) != size) return false;
      if (size2index_compute(size - 1) != i && size - 1 > prev) return false;
    }
  }
  for (pszind_t p = 0; p < sc::kNPSizes; ++p) {
    const size_t psz = pind2sz(p);
    if (psz2ind(psz) != p || psz2u(psz) != psz) return false;
    if (psz2ind(psz + 1) != p + 1 || psz2ind(psz - config::kPage + 1) != p) return false;
  }
  return pind2sz(sc::kNPSizes) == sc::kLargeMaxClass + config::kPage;
}

}  // namespace detail

static_assert(detail::conversions_consistent());
static_assert(size2index(0) == 0 && s2u(0) == sc::kTinyMin);
static_assert(size2index(sc::kLargeMaxClass + 1) == sc::kNSizes);
static_assert(s2u(sc::kLargeMaxClass + 1) == 0 && s2u(SIZE_MAX) == 0);
static_assert(psz2ind(sc::kLargeMaxClass + 1) == sc::kNPSizes);
static_assert(sa2u(5000, 4096) == 8192 && sa2u(1, 64) == 64 && sa2u(16385, 1) == 20480);
static_assert(s2u(16385) == 20480);  // nallocx(16385) in 5.3.0

}  // namespace je::sz
