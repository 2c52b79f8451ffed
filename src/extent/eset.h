// eset.h: a set of free extents of one state, indexed for first-fit-by-age.
//
// Purpose: holds the free extents of an ecache. One bin per page-size class (+1 overflow bin) whose
// pairing heap orders extents by (serial number, address); fit is first fit by age across bins
// (5.3.0) or, ours, best fit by class then age for searches up to 64 KiB (opt.extent_best_fit); a
// bitmap of non-empty bins; a cached copy of each bin's minimum so a fit search compares bins without touching cold
// descriptors; an LRU list (insertion order) used only by eviction; counters for stats.
// Layer: extent. Callers: ecache/extent (under the ecache lock); stats readers (lock-free).
// Concurrency: mutations under the owning ecache's mutex (rank kEcache). The counters are relaxed
// atomics so stats can be read without the lock.
// Invariants: an extent is in exactly one bin -- the page-size class of its size after removing the
// cache-oblivious pad (sz::psz_quantize_floor) -- and in the LRU, iff it is in the set; `npages()`
// is the sum of member sizes in pages.
// jemalloc mapping: eset (src/eset.c); feeds stats.arenas.<i>.extents.<j>.{n,}{dirty,muzzy,
// retained}_{extents,bytes} and pdirty/pmuzzy.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "extent/edata.h"
#include "meta/sz.h"
#include "support/bitmap.h"

namespace je {

class Eset {
 public:
  static constexpr unsigned kNBins = sc::kNPSizes + 1;
  /// Pass as lg_max_fit for "no bound on the fitted extent's size".
  static constexpr unsigned kUnboundedFit = 64;

  constexpr Eset() = default;

  void insert(Edata* e);
  void remove(Edata* e);

  /// First fit by age: among extents of at least `esize` bytes (with room to place an
  /// `alignment`-aligned range), the oldest (lowest sn, then address), searching the bins from
  /// esize's class upward but not past bins whose class exceeds `esize << lg_max_fit`.
  /// With best fit (set_best_fit, ours) and a search of at most kBestFitMaxSize bytes, the
  /// smallest non-empty bin in that range wins and the age order applies only within it.
  /// `exact_only` restricts the search to esize's own bin.
  /// Does not remove the extent.
  Edata* fit(size_t esize, size_t alignment, bool exact_only, unsigned lg_max_fit);
  /// Ours (opt.extent_best_fit): for searches of up to kBestFitMaxSize bytes, choose the
  /// smallest class that fits first, then by age.
  void set_best_fit(bool on) { best_fit_ = on; }
  bool best_fit() const { return best_fit_; }
  /// Best fit's scope: slabs and the smallest large blocks, whose first fit by age would carve
  /// holes out of big free extents. Bigger requests keep 5.3.0's order: the oldest extent
  /// (in practice the lowest address) of any fitting class, so a round's blocks of one size
  /// are cut one after another from the front of the same free extents instead of from the
  /// tails of many slightly bigger ones, and they merge back whole when freed together
  /// (measured on ClickHouse's GROUP BY: doc/compat.md#extent-best-fit).
  static constexpr size_t kBestFitMaxSize = size_t{64} << 10;

  /// Oldest-inserted extent (eviction order), or nullptr.
  Edata* lru_first() const { return lru_.front(); }

  size_t npages() const { return npages_.load(std::memory_order_relaxed); }
  size_t nextents(pszind_t bin) const {
    return bins_[bin].nextents.load(std::memory_order_relaxed);
  }
  size_t nbytes(pszind_t bin) const { return bins_[bin].nbytes.load(std::memory_order_relaxed); }

  /// Bin index used for an extent of `size` bytes (`pad`: the cache-oblivious pad; the
  /// parameter lets tests check the arithmetic for builds with and without it).
  static pszind_t bin_of(size_t size, size_t pad = sz::kLargePad);

  /// The last bin a bounded fit search for `size` bytes looks in: the bins whose class c has
  /// (c >> lg_max_fit) <= size (jemalloc's reuse bound, applied to bin classes). Every bin
  /// from the request's own up to this one is searched; kNBins - 1 when the bound admits all.
  static pszind_t fit_limit(size_t size, unsigned lg_max_fit);

  /// The largest extent a bounded fit search for `size` bytes can find: the largest size
  /// filed in a bin up to fit_limit(size). Not `size << lg_max_fit`: bin j holds extents up
  /// to one page short of class(j) + pad, so a bin can hold extents the search for `size`
  /// may use and others, of the same bin, above that product (or, without the pad, the
  /// search admits extents above it). This is the coalescing bound (extent.cc, doc/design/
  /// coalescing.md). Saturates at sc::kLargeMaxClass.
  static size_t max_fit_extent(size_t size, unsigned lg_max_fit, size_t pad = sz::kLargePad);

 private:
  struct Summary {
    uint64_t sn;
    uintptr_t addr;
  };
  struct Bin {
    EdataHeap heap;
    Summary min{};
    std::atomic<size_t> nextents{0};
    std::atomic<size_t> nbytes{0};
  };

  Edata* first_fit(size_t size, bool exact_only, unsigned lg_max_fit);
  Edata* fit_alignment(size_t min_size, size_t max_size, size_t alignment);
  void refresh_min(pszind_t i);

  static bool less(const Summary& a, const Summary& b) {
    return a.sn != b.sn ? a.sn < b.sn : a.addr < b.addr;
  }

  Bin bins_[kNBins];
  FixedBitmap<kNBins> nonempty_;
  EdataList lru_;
  std::atomic<size_t> npages_{0};
  bool best_fit_ = false;
};

}  // namespace je
