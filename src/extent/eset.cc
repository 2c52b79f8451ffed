// eset.cc: free-extent set (see eset.h).
#include "extent/eset.h"

#include "support/safety_check.h"

namespace je {

namespace {
constexpr size_t kPage = config::kPage;

void add(std::atomic<size_t>& c, size_t v) {
  c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}
void sub(std::atomic<size_t>& c, size_t v) {
  debug_assert(c.load(std::memory_order_relaxed) >= v, "eset: counter does not go below 0");
  c.store(c.load(std::memory_order_relaxed) - v, std::memory_order_relaxed);
}
}  // namespace

pszind_t Eset::bin_of(size_t size, size_t pad) {
  return sz::psz2ind(sz::psz_quantize_floor(size, pad));
}

pszind_t Eset::fit_limit(size_t size, unsigned lg_max_fit) {
  constexpr pszind_t kAll = kNBins - 1;
  if (lg_max_fit >= kUnboundedFit || size >= (SIZE_MAX >> lg_max_fit)) return kAll;
  // (c >> lg) <= size  <=>  c < (size + 1) << lg: the last bin is the largest class below x.
  size_t x = (size + 1) << lg_max_fit;
  if (x > sz::pind2sz(sc::kNPSizes)) return kAll;
  pszind_t first_not_below = sz::psz2ind(x);
  return first_not_below == 0 ? 0 : first_not_below - 1;  // 0: sizes are at least a page
}

size_t Eset::max_fit_extent(size_t size, unsigned lg_max_fit, size_t pad) {
  pszind_t last = fit_limit(size, lg_max_fit);
  // With the pad, bin j holds [class(j-1) + pad, class(j) + pad), so its largest page
  // multiple is class(j); without it, bin j holds [class(j), class(j+1)).
  pszind_t upper = pad == 0 ? last + 1 : last;
  if (upper >= sc::kNPSizes) return sc::kLargeMaxClass;
  return sz::pind2sz(upper) + pad - kPage;
}

void Eset::refresh_min(pszind_t i) {
  Edata* first = bins_[i].heap.first();
  if (first != nullptr) bins_[i].min = Summary{first->sn, first->base_addr()};
}

void Eset::insert(Edata* e) {
  pszind_t i = bin_of(e->size);
  Bin& bin = bins_[i];
  bool was_empty = bin.heap.empty();
  bin.heap.insert(e);
  if (was_empty) {
    nonempty_.set(i);
    bin.min = Summary{e->sn, e->base_addr()};
  } else {
    Summary s{e->sn, e->base_addr()};
    if (less(s, bin.min)) bin.min = s;
  }
  add(bin.nextents, 1);
  add(bin.nbytes, e->size);
  lru_.push_back(e);
  add(npages_, e->npages());
}

void Eset::remove(Edata* e) {
  pszind_t i = bin_of(e->size);
  Bin& bin = bins_[i];
  debug_assert(!bin.heap.empty(), "eset: removed extent's size bin is not empty");
  bool was_min = bin.heap.first() == e;
  bin.heap.remove(e);
  if (bin.heap.empty()) {
    nonempty_.unset(i);
  } else if (was_min) {
    refresh_min(i);
  }
  sub(bin.nextents, 1);
  sub(bin.nbytes, e->size);
  lru_.remove(e);
  sub(npages_, e->npages());
}

Edata* Eset::first_fit(size_t size, bool exact_only, unsigned lg_max_fit) {
  pszind_t start = sz::psz2ind(sz::psz_quantize_ceil(size));
  if (exact_only) {
    return start < kNBins ? bins_[start].heap.first() : nullptr;
  }
  pszind_t best = kNBins;
  // The reuse bound: a bin whose class is more than 2^lg_max_fit times the request holds
  // extents too big to be worth splitting for it.
  size_t last = fit_limit(size, lg_max_fit);
  if (best_fit_ && size <= kBestFitMaxSize) {
    // Ours: the smallest class that fits keeps bigger free extents whole for bigger requests
    // instead of carving the oldest one, whatever its size (5.3.0's order, below).
    size_t i = nonempty_.ffs(start);
    return i <= last ? bins_[i].heap.first() : nullptr;
  }
  for (size_t i = nonempty_.ffs(start); i <= last; i = nonempty_.ffs(i + 1)) {
    if (best == kNBins || less(bins_[i].min, bins_[best].min)) best = static_cast<pszind_t>(i);
  }
  return best == kNBins ? nullptr : bins_[best].heap.first();
}

Edata* Eset::fit_alignment(size_t min_size, size_t max_size, size_t alignment) {
  pszind_t lo = sz::psz2ind(sz::psz_quantize_ceil(min_size));
  pszind_t hi = sz::psz2ind(sz::psz_quantize_ceil(max_size));
  for (size_t i = nonempty_.ffs(lo); i < hi; i = nonempty_.ffs(i + 1)) {
    Edata* e = bins_[i].heap.first();
    uintptr_t base = e->base_addr();
    uintptr_t aligned = align_up(base, align_up(alignment, kPage));
    if (aligned < base || aligned >= e->past_addr()) continue;
    if (e->past_addr() - aligned >= min_size) return e;
  }
  return nullptr;
}

Edata* Eset::fit(size_t esize, size_t alignment, bool exact_only, unsigned lg_max_fit) {
  size_t max_size = esize + align_up(alignment, kPage) - kPage;
  if (max_size < esize) return nullptr;  // wrapped around
  Edata* e = first_fit(max_size, exact_only, lg_max_fit);
  if (e == nullptr && alignment > kPage) {
    // max_size guarantees alignment but is pessimistic; look for an aligned range inside
    // extents of [esize, max_size).
    e = fit_alignment(esize, max_size, alignment);
  }
  return e;
}

}  // namespace je
