// eset.cc: free-extent set (see eset.h).
#include "extent/eset.h"

namespace je {

namespace {
constexpr size_t kPage = config::kPage;

void add(std::atomic<size_t>& c, size_t v) {
  c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}
void sub(std::atomic<size_t>& c, size_t v) {
  c.store(c.load(std::memory_order_relaxed) - v, std::memory_order_relaxed);
}
}  // namespace

pszind_t Eset::bin_of(size_t size) { return sz::psz2ind(sz::psz_quantize_floor(size)); }

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
  if (best_fit_) {
    // Ours: the smallest class that fits keeps bigger free extents whole for bigger requests
    // instead of carving the oldest one, whatever its size (5.3.0's order, below).
    size_t i = nonempty_.ffs(start);
    if (i >= kNBins) return nullptr;
    const size_t cls = sz::pind2sz(static_cast<pszind_t>(i));
    if (lg_max_fit < kUnboundedFit && (cls >> lg_max_fit) > size) return nullptr;
    return bins_[i].heap.first();
  }
  for (size_t i = nonempty_.ffs(start); i < kNBins; i = nonempty_.ffs(i + 1)) {
    // The reuse bound: a bin whose class is more than 2^lg_max_fit times the request holds
    // extents too big to be worth splitting for it.
    if (lg_max_fit < kUnboundedFit && (sz::pind2sz(static_cast<pszind_t>(i)) >> lg_max_fit) > size) {
      break;
    }
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
