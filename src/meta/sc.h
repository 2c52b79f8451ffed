// sc.h: the size-class table, generated at compile time.
//
// Purpose: define every size class the allocator hands out (small/binned, large, and the
// page-multiple subset used to index free extents) and the slab geometry of each small class.
// Nothing here runs at start-up: the table is a `constexpr` value produced by a generator that
// walks the same (lg_base, lg_delta, ndelta) coordinates as jemalloc's `sc.c`, so a change of
// page or quantum in `support/config.h` re-derives the whole table, and the `static_assert`s at
// the bottom pin the result for the default platform (4 KiB pages, 16-byte quantum);
// `--with-lg-page` builds (up to 64 KiB pages) take the generator's counts.
//
// Layer: meta. Callers: `sz` (size <-> index mapping), arena bins and slabs (`kBinInfo`), the
// tcache (bin count), ctl/stats (`arenas.*` geometry).
//
// Concurrency: none; immutable compile-time data.
//
// Invariants (checked below):
//   * sizes strictly increase; every size is a multiple of 8 (tiny) or of 16 (all others);
//   * class i < kNBins is small: reg_size < 4 pages, slab_size = LCM(page, reg_size)
//     (so slabs have no tail slack), at most 7 pages, nregs = slab_size / reg_size;
//   * classes kNBins.. are large, from kLargeMinClass to kLargeMaxClass, all page multiples;
//   * the page-multiple ("psz") classes are 1, 2, 3 pages followed by all large classes.
//
// jemalloc mapping: `sc.h`/`sc.c` (`sc_data_t`, `SC_NTINY`, `SC_NBINS`, `SC_NSIZES`,
// `SC_NPSIZES`, `SC_LOOKUP_MAXCLASS`, `SC_SMALL_MAXCLASS`, `SC_LARGE_MINCLASS`,
// `SC_LARGE_MAXCLASS`) and `bin_info.c` (`bin_infos[]`). Feeds mallctl `arenas.quantum`,
// `arenas.page`, `arenas.nbins`, `arenas.bin.<i>.{size,nregs,slab_size,nshards}`,
// `arenas.nlextents`, `arenas.lextent.<i>.size`, and the extent index of
// `stats.arenas.<i>.extents.<j>.*`.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "support/config.h"
#include "support/util.h"

namespace je {

/// Index of a size class, 0..sc::kNSizes-1 (kNSizes itself means "too large").
using szind_t = unsigned;
/// Index of a page-multiple size class, 0..sc::kNPSizes-1 (kNPSizes means "too large").
using pszind_t = unsigned;

namespace sc {

// ---- Generator parameters ------------------------------------------------------------------

/// The smallest class is 8 bytes: below the 16-byte quantum there is room for one tiny class.
inline constexpr unsigned kLgTinyMin = 3;
/// Four classes per power-of-two doubling: the spacing inside group [2^g, 2^(g+1)] is 2^(g-2).
inline constexpr unsigned kLgNGroup = 2;
inline constexpr unsigned kNGroup = 1u << kLgNGroup;
/// Classes must stay below 2^63 so that every size fits in ptrdiff_t.
inline constexpr unsigned kLgSizeLimit = 63;
/// A class is binned (slab-backed) when smaller than page << kLgNGroup (4 pages: 16 KiB).
inline constexpr size_t kSmallLimit = config::kPage << kLgNGroup;

// ---- Published counts and bounds -----------------------------------------------------------
// The counts follow the page (`--with-lg-page`) and are computed by the generator below
// (`detail::kCensus`); the pins at the bottom fix them for the default 4 KiB page, where they
// are 5.3.0's numbers.

/// Requests up to this size map to a class through a byte table indexed by (size + 7) >> 3.
/// Fixed at 4 KiB whatever the page, as jemalloc's SC_LG_MAX_LOOKUP (12).
inline constexpr unsigned kLgMaxLookup = 12;
/// Most regions any slab can hold (a one-page slab of 8-byte regions); sizes slab bitmaps.
inline constexpr unsigned kSlabMaxRegs = static_cast<unsigned>(config::kPage >> kLgTinyMin);

/// One size class in jemalloc's coordinates: size = 2^lg_base + ndelta * 2^lg_delta.
struct SizeClass {
  uint8_t lg_base;
  uint8_t lg_delta;
  uint8_t ndelta;
  bool psz;     ///< multiple of the page (indexes the extent heaps)
  bool bin;     ///< small: served from slabs
  uint8_t pgs;  ///< slab pages (bins only, else 0)
  size_t size;
};

/// Slab geometry of one small class (`arenas.bin.<i>.*`).
struct BinInfo {
  uint32_t reg_size;
  uint32_t nregs;
  uint32_t slab_size;
  uint32_t n_shards;
};

namespace detail {

/// Pages in the smallest slab that holds a whole number of regions: LCM(page, size) / page.
constexpr unsigned slab_pages(size_t size) {
  unsigned pgs = 1;
  while ((pgs * config::kPage) % size != 0) ++pgs;
  return pgs;
}

constexpr SizeClass make_class(unsigned lg_base, unsigned lg_delta, unsigned ndelta) {
  SizeClass c{};
  c.lg_base = static_cast<uint8_t>(lg_base);
  c.lg_delta = static_cast<uint8_t>(lg_delta);
  c.ndelta = static_cast<uint8_t>(ndelta);
  c.size = (size_t{1} << lg_base) + (size_t{ndelta} << lg_delta);
  c.psz = c.size % config::kPage == 0;
  c.bin = c.size < kSmallLimit;
  c.pgs = c.bin ? static_cast<uint8_t>(slab_pages(c.size)) : 0;
  return c;
}

/// Calls `emit(SizeClass)` for every class in increasing order. Three regimes:
///   tiny:   one class per power of two below the quantum (8);
///   first:  quantum-spaced classes up to 2^(lg_quantum + lg_ngroup) (16, 32, 48, 64), because
///           a quarter-of-base spacing would be finer than the quantum there;
///   groups: 2^g + n * 2^(g-2), n = 1..4, for g = 6, 7, ... while the size stays below 2^63.
template <class Emit>
constexpr void for_each_class(Emit&& emit) {
  for (unsigned lg = kLgTinyMin; lg < config::kLgQuantum; ++lg) emit(make_class(lg, lg, 0));
  for (unsigned n = 0; n < kNGroup; ++n) {
    emit(make_class(config::kLgQuantum, config::kLgQuantum, n));
  }
  for (unsigned lg_base = config::kLgQuantum + kLgNGroup; lg_base < kLgSizeLimit; ++lg_base) {
    const unsigned lg_delta = lg_base - kLgNGroup;
    for (unsigned n = 1; n <= kNGroup; ++n) {
      // 2^lg_base + n * 2^lg_delta < 2^63  <=>  n < 2^(63 - lg_delta) - 2^(lg_base - lg_delta).
      const uint64_t room = (uint64_t{1} << (kLgSizeLimit - lg_delta)) - kNGroup;
      if (n >= room) return;
      emit(make_class(lg_base, lg_delta, n));
    }
  }
}

/// Aggregate figures of the generated table, compared with the published constants.
struct Census {
  unsigned nsizes = 0, ntiny = 0, nbins = 0, npsizes = 0;
  size_t small_max = 0, large_min = 0, large_max = 0, lookup_max = 0;
};

constexpr Census take_census() {
  Census c;
  for_each_class([&c](const SizeClass& s) {
    ++c.nsizes;
    if (s.size < config::kQuantum) ++c.ntiny;
    if (s.bin) {
      ++c.nbins;
      c.small_max = s.size;
    } else if (c.large_min == 0) {
      c.large_min = s.size;
    }
    if (s.psz) ++c.npsizes;
    // The byte lookup table in `sz` stops at 2^kLgMaxLookup (jemalloc's SC_LG_MAX_LOOKUP).
    if (s.size <= (size_t{1} << kLgMaxLookup)) c.lookup_max = s.size;
    c.large_max = s.size;
  });
  return c;
}

inline constexpr Census kCensus = take_census();

}  // namespace detail

inline constexpr unsigned kNTiny = detail::kCensus.ntiny;
inline constexpr unsigned kNBins = detail::kCensus.nbins;
inline constexpr unsigned kNSizes = detail::kCensus.nsizes;
inline constexpr unsigned kNLExtents = kNSizes - kNBins;
inline constexpr unsigned kNPSizes = detail::kCensus.npsizes;
inline constexpr size_t kTinyMin = size_t{1} << kLgTinyMin;
inline constexpr size_t kSmallMaxClass = detail::kCensus.small_max;
inline constexpr size_t kLargeMinClass = detail::kCensus.large_min;
inline constexpr size_t kLookupMaxClass = detail::kCensus.lookup_max;
inline constexpr size_t kLargeMaxClass = detail::kCensus.large_max;

namespace detail {

constexpr std::array<SizeClass, kNSizes> build_classes() {
  std::array<SizeClass, kNSizes> t{};
  unsigned i = 0;
  for_each_class([&](const SizeClass& s) {
    if (i < kNSizes) t[i] = s;
    ++i;
  });
  return t;
}

}  // namespace detail

/// Every size class, in increasing size; index = szind_t.
inline constexpr std::array<SizeClass, kNSizes> kSizeClasses = detail::build_classes();

namespace detail {
constexpr std::array<BinInfo, kNBins> build_bin_info() {
  std::array<BinInfo, kNBins> t{};
  for (unsigned i = 0; i < kNBins; ++i) {
    const SizeClass& s = kSizeClasses[i];
    const size_t slab = size_t{s.pgs} << config::kLgPage;
    t[i] = BinInfo{static_cast<uint32_t>(s.size), static_cast<uint32_t>(slab / s.size),
                   static_cast<uint32_t>(slab), 1};
  }
  return t;
}
}  // namespace detail

/// Slab geometry per small class (index = szind_t < kNBins). One shard per bin by default.
inline constexpr std::array<BinInfo, kNBins> kBinInfo = detail::build_bin_info();

// ---- Pins ----------------------------------------------------------------------------------

// 5.3.0's published numbers for 4 KiB pages and a 16-byte quantum (the default build).
static_assert(config::kLgQuantum == 4, "the generator is pinned for a 16-byte quantum");
static_assert(config::kLgPage != 12 ||
              (kNTiny == 1 && kNBins == 36 && kNLExtents == 196 && kNSizes == 232 &&
               kNPSizes == 199 && kSmallMaxClass == 14336 && kLargeMinClass == 16384));
static_assert(kLookupMaxClass == 4096);
static_assert(kLargeMaxClass == size_t{7} << 60);
static_assert(kSizeClasses[0].size == kTinyMin);
static_assert(kSizeClasses[kNBins - 1].size == kSmallMaxClass);
static_assert(kSizeClasses[kNBins].size == kLargeMinClass);
static_assert(kSizeClasses[kNSizes - 1].size == kLargeMaxClass);
static_assert(kLargeMaxClass == 8070450532247928832u);
static_assert(kSmallMaxClass < (config::kPage << kLgNGroup) &&
              kLargeMinClass == (config::kPage << kLgNGroup));

namespace detail {
constexpr bool classes_well_formed() {
  for (unsigned i = 0; i < kNSizes; ++i) {
    const SizeClass& s = kSizeClasses[i];
    if (i > 0 && s.size <= kSizeClasses[i - 1].size) return false;
    if (s.size % (i < kNTiny ? kTinyMin : config::kQuantum) != 0) return false;
    if (s.bin != (i < kNBins)) return false;
    if (i >= kNBins && !s.psz) return false;  // every large class is a page multiple
  }
  // Below the large classes exactly the page multiples 1..kNGroup-1 pages are psz classes.
  unsigned small_psz = 0;
  for (unsigned i = 0; i < kNBins; ++i) {
    if (kSizeClasses[i].psz) {
      ++small_psz;
      if (kSizeClasses[i].size != small_psz * config::kPage) return false;
    }
  }
  return small_psz == kNPSizes - kNLExtents && small_psz == kNGroup - 1;
}

constexpr bool slabs_well_formed() {
  for (const BinInfo& b : kBinInfo) {
    if (b.slab_size % config::kPage != 0) return false;
    if (b.slab_size % b.reg_size != 0) return false;    // zero tail slack
    if (b.slab_size > 7 * config::kPage) return false;  // at most 7 pages
    if (b.nregs * b.reg_size != b.slab_size) return false;
    if (b.nregs == 0 || b.nregs > kSlabMaxRegs) return false;
    // Minimality: no smaller page multiple also holds a whole number of regions.
    for (size_t s = config::kPage; s < b.slab_size; s += config::kPage) {
      if (s % b.reg_size == 0) return false;
    }
    if (b.n_shards != 1) return false;
  }
  return true;
}
}  // namespace detail

static_assert(detail::classes_well_formed());
static_assert(detail::slabs_well_formed());
static_assert(kBinInfo[0].nregs == kSlabMaxRegs);
// Spot checks from the 5.3.0 table (4 KiB pages): odd classes take multi-page slabs with no
// slack.
static_assert(config::kLgPage != 12 ||
              (kBinInfo[5].reg_size == 80 && kBinInfo[5].nregs == 256 &&
               kBinInfo[5].slab_size == 20480 && kBinInfo[28].reg_size == 4096 &&
               kBinInfo[28].nregs == 1 && kBinInfo[35].slab_size == 28672 &&
               kBinInfo[35].nregs == 2));

}  // namespace sc
}  // namespace je
