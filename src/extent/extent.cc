// extent.cc: recycle, split, merge, record (coalesce), evict, grow (see extent.h).
//
// Vocabulary: "activate" takes an extent out of an ecache (eset remove + state kActive);
// "deactivate" puts it in (state = ecache state + eset insert), both under the ecache lock.
// "record" is deactivate preceded by the coalescing regime of the ecache.
#include "extent/extent.h"

#include <algorithm>
#include <atomic>

#include "extent/ecache.h"
#include "extent/emap.h"
#include "extent/pac_stats.h"
#include "support/compiler.h"
#include "support/safety_check.h"

namespace je {
namespace extent {

constinit thread_local bool gdump_detail::t_pending JE_TLS_IE = false;

namespace {

constexpr size_t kPage = config::kPage;

// prof_gdump's counters (see extent.h).
constinit bool g_gdump_track = false;  // opt.prof: set once at boot
constinit std::atomic<bool> g_gdump_on{false};
constinit std::atomic<size_t> g_gdump_cur{0};
constinit std::atomic<size_t> g_gdump_high{0};

void gdump_add(const Edata* e) {
  const size_t n = e->size >> config::kLgPage;
  const size_t cur = g_gdump_cur.fetch_add(n, std::memory_order_relaxed) + n;
  size_t high = g_gdump_high.load(std::memory_order_relaxed);
  // A racing thread may have raised the mark further; whoever moves it marks itself.
  while (cur > high) {
    if (g_gdump_high.compare_exchange_weak(high, cur, std::memory_order_relaxed)) {
      if (g_gdump_on.load(std::memory_order_relaxed)) gdump_detail::t_pending = true;
      return;
    }
  }
}

void gdump_sub(const Edata* e) {
  const size_t n = e->size >> config::kLgPage;
  // Extents counted before the tracking began (none: it starts at boot) cannot underflow it.
  size_t cur = g_gdump_cur.load(std::memory_order_relaxed);
  while (
      !g_gdump_cur.compare_exchange_weak(cur, cur >= n ? cur - n : 0, std::memory_order_relaxed)) {
  }
}

void deactivate_locked(Ecache& ec, Edata* e) {
  if constexpr (config::kDebug) ec.mtx.assert_owner();
  debug_assert(e->state != ec.state, "extent: deactivated extent is not already in the ecache");
  debug_assert(e->size != 0 && e->size % kPage == 0, "extent: size is a non-zero page multiple");
  g_emap.update_state(e, ec.state);
  ec.eset.insert(e);
}

// `claimed`: e was taken as a neighbour (try_acquire_neighbor, state kMerging) rather than
// found in the eset; it is still filed there.
void activate_locked(Ecache& ec, Edata* e, bool claimed = false) {
  if constexpr (config::kDebug) ec.mtx.assert_owner();
  debug_assert(e->state == (claimed ? ExtentState::kMerging : ec.state),
               "extent: activated extent has its ecache's state");
  ec.eset.remove(e);
  g_emap.update_state(e, ExtentState::kActive);
}

bool register_impl(Edata* e) {
  if (!g_emap.register_boundary(e)) return false;
  if (e->slab && !g_emap.register_interior(e)) {
    g_emap.deregister_boundary(e);
    return false;
  }
  return true;
}

void deregister_impl(Edata* e) {
  g_emap.deregister_boundary(e);
  if (e->slab) {
    g_emap.deregister_interior(e);
    e->slab = false;
  }
}

}  // namespace
}  // namespace extent

using extent::activate_locked;
using extent::deactivate_locked;
using extent::deregister_impl;
using extent::g_gdump_track;
using extent::gdump_add;
using extent::gdump_sub;
using extent::register_impl;

namespace {
constexpr size_t kPage = config::kPage;
}  // namespace

Edata* PacCore::split_impl(Edata* e, size_t size_a, size_t size_b) {
  if (ehooks_.split_will_fail()) return nullptr;
  Edata* trail = edata_cache_.get();
  if (trail == nullptr) return nullptr;
  trail->init(e->arena_ind, ptr_of(e->base_addr() + size_a), size_b, /*is_slab=*/false, sc::kNSizes,
              e->sn, e->state, e->zeroed, e->committed, /*head=*/false);
  Emap::SplitPlan plan;
  if (!g_emap.split_prepare(&plan, e, size_a, trail, size_b) ||
      !ehooks_.split(e->base(), size_a + size_b, size_a, size_b, e->committed)) {
    edata_cache_.put(trail);
    return nullptr;
  }
  e->size = size_a;
  g_emap.split_commit(plan, e, trail);
  return trail;
}

// `a` (lower address) absorbs the adjacent `b`; both owned by the caller.
bool PacCore::merge_impl(Edata* a, Edata* b) {
  if (!ehooks_.merge(a->base(), a->size, b->base(), b->size, a->committed)) return false;
  g_emap.merge_commit(a, b);
  a->size += b->size;
  if (b->sn < a->sn) a->sn = b->sn;
  a->zeroed = a->zeroed && b->zeroed;
  edata_cache_.put(b);
  return true;
}

bool PacCore::commit_impl(Edata* e, size_t offset, size_t length) {
  bool ok = ehooks_.commit(e->base(), e->size, offset, length);
  e->committed = e->committed || ok;
  return ok;
}

bool PacCore::decommit_impl(Edata* e) {
  bool ok = ehooks_.decommit(e->base(), e->size, 0, e->size);
  e->committed = e->committed && !ok;
  return ok;
}

enum class PacCore::CoalesceMode : uint8_t {
  kFull,   // muzzy/retained record: merge everything, no bound
  kEager,  // large extent recorded dirty: one merge per call, bounded by max_size
  kEvict,  // eviction of a dirty extent: one merge per call, no bound
};

// `outer` is a claimed neighbour of the owned `inner`; merge them (the lower address survives).
bool PacCore::coalesce_one(Ecache& ec, Edata* inner, Edata* outer, bool forward) {
  ec.eset.remove(outer);
  bool ok = forward ? merge_impl(inner, outer) : merge_impl(outer, inner);
  if (!ok) deactivate_locked(ec, outer);  // hooks refused: the neighbour goes back unchanged
  return ok;
}

// Merges free neighbours into the owned extent `e` (ecache lock held). Neighbours are claimed
// through the emap; one whose size would take the result past `max_size` is released and left
// mergeable for later (eviction, or a later free on its other side). With delayed coalescing
// (dirty) it stops after one merge and reports it, so the caller loops; otherwise it runs until
// neither side merges.
Edata* PacCore::try_coalesce(Ecache& ec, Edata* e, size_t max_size, CoalesceMode mode,
                             bool* coalesced) {
  *coalesced = false;
  bool again;
  do {
    again = false;
    for (bool forward : {true, false}) {
      Edata* nb = g_emap.try_acquire_neighbor(e, ec.state, forward, /*expanding=*/false);
      if (nb == nullptr) continue;
      size_t room = max_size > e->size ? max_size - e->size : 0;
      if (nb->size > room) {
        g_emap.release(nb, ec.state);
        if (mode == CoalesceMode::kEager) counters_.add(PacCounter::dirty_merges_refused);
        continue;
      }
      if (!coalesce_one(ec, e, nb, forward)) continue;
      if (!forward) e = nb;  // the lower extent's descriptor survives
      *coalesced = true;
      if (mode == CoalesceMode::kEager) counters_.add(PacCounter::dirty_merges);
      if (mode == CoalesceMode::kEvict) counters_.add(PacCounter::evict_merges);
      if (ec.delay_coalesce) return e;
      again = true;
    }
  } while (again);
  return e;
}

// An oversize extent goes straight to retained instead of sitting dirty.
void PacCore::maximally_purge(Edata* e) {
  size_t size = e->size;
  dalloc_wrapper(e);
  // Counted as a dirty purge, as 5.3.0 does (one madvise; no purge run), and as ours.
  counters_.add_decay(/*dirty=*/true, PacDecayCounter::kNmadvise, 1);
  counters_.add_decay(/*dirty=*/true, PacDecayCounter::kPurged, size >> config::kLgPage);
  counters_.add(PacCounter::oversize_purged, size >> config::kLgPage);
  mapped_.fetch_sub(size, std::memory_order_relaxed);
}

void PacCore::record(Ecache& ec, Edata* e, bool keep_oversize) {
  ec.mtx.lock();
  bool coalesced;
  if (!ec.delay_coalesce) {
    e = try_coalesce(ec, e, sc::kLargeMaxClass, CoalesceMode::kFull, &coalesced);
  } else if (e->size >= sc::kLargeMinClass) {
    size_t threshold = oversize_threshold();
    bool purges_oversize = threshold != 0 && may_force_decay() && !keep_oversize;
    // The bound is fixed by the size of the extent being freed; as merges accumulate the room
    // left only shrinks, so a neighbour refused once stays refused for this call.
    size_t max_size = sc::kLargeMaxClass;
    if (bounded_coalesce()) {
      max_size = coalesce_bound(e->size, lg_max_fit());
      // Nor may a bounded merge reach the oversize threshold: the result would be purged
      // below, and the freeing workload would fault the same pages in again.
      if (purges_oversize && e->size < threshold) {
        max_size = std::min(max_size, align_down(threshold - 1, kPage));
      }
    }
    do {
      e = try_coalesce(ec, e, max_size, CoalesceMode::kEager, &coalesced);
    } while (coalesced);
    if (purges_oversize && e->size >= threshold) {
      ec.mtx.unlock();
      maximally_purge(e);
      return;
    }
  }
  deactivate_locked(ec, e);
  ec.mtx.unlock();
}

// Cuts *e down to [aligned start, +size). Lead and trail pieces come back in *lead / *trail
// (still owned, state of *e). On failure every piece is still a valid extent: *lead (if
// non-null) and *e.
bool PacCore::split_interior(Edata** e, Edata** lead, Edata** trail, size_t size,
                             size_t alignment) {
  *lead = nullptr;
  *trail = nullptr;
  uintptr_t base = (*e)->base_addr();
  size_t leadsize = align_up(base, align_up(alignment, kPage)) - base;
  size_t trailsize = (*e)->size - leadsize - size;
  if (leadsize != 0) {
    Edata* rest = split_impl(*e, leadsize, size + trailsize);
    if (rest == nullptr) return false;
    *lead = *e;
    *e = rest;
  }
  if (trailsize != 0) {
    *trail = split_impl(*e, size, trailsize);
    if (*trail == nullptr) return false;
  }
  return true;
}

Edata* PacCore::recycle_extract(Ecache& ec, Edata* expand, size_t size, size_t alignment,
                                bool bounded) {
  Edata* e;
  if (expand != nullptr) {
    e = g_emap.try_acquire_neighbor(expand, ec.state, /*forward=*/true, /*expanding=*/true);
    if (e != nullptr && e->size < size) {
      g_emap.release(e, ec.state);
      e = nullptr;
    }
  } else {
    // Dirty reuse is bounded: splitting a much larger dirty extent for a small request would
    // fragment it while delayed coalescing keeps the pieces apart. The page allocator lifts the
    // bound as its last resort before growing (Pac::alloc, opt.reuse_before_grow).
    const unsigned fit = ec.delay_coalesce && bounded ? lg_max_fit_ : Eset::kUnboundedFit;
    e = ec.eset.fit(size, alignment, /*exact_only=*/false, fit);
  }
  if (e != nullptr) activate_locked(ec, e, /*claimed=*/expand != nullptr);
  return e;
}

Edata* PacCore::recycle(Ecache& ec, Edata* expand, size_t size, size_t alignment, bool zero,
                        bool* commit, bool bounded) {
  ec.mtx.lock();
  Edata* e = recycle_extract(ec, expand, size, alignment, bounded);
  if (e == nullptr) {
    ec.mtx.unlock();
    return nullptr;
  }
  Edata* lead;
  Edata* trail;
  bool ok = split_interior(&e, &lead, &trail, size, alignment);
  // Pieces go back without coalescing: they came from one free extent.
  if (lead != nullptr) deactivate_locked(ec, lead);
  if (trail != nullptr) deactivate_locked(ec, trail);
  if (!ok) deactivate_locked(ec, e);
  ec.mtx.unlock();
  if (!ok) return nullptr;

  if (*commit && !e->committed && !commit_impl(e, 0, e->size)) {
    record(ec, e);
    return nullptr;
  }
  if (zero && !e->zeroed) ehooks_.zero(e->base(), e->size);
  if (e->committed) *commit = true;
  return e;
}

// Grows retained address space by the next size of the series that fits the request; returns
// the requested piece, records the rest as retained. Called with grow_mtx held; releases it.
Edata* PacCore::grow_retained(size_t size, size_t alignment, bool zero, bool* commit) {
  Edata* e = nullptr;
  size_t alloc_min = size + align_up(alignment, kPage) - kPage;
  pszind_t skip = 0;
  pszind_t max_ind = sz::psz2ind(sc::kLargeMaxClass);
  size_t alloc_size = sz::pind2sz(exp_grow_.next);
  bool zeroed = false;
  bool committed = false;
  bool fallback = false;
  void* ptr;
  Edata* lead;
  Edata* trail;
  if (alloc_min < size) goto fail;  // wrapped around
  while (alloc_size < alloc_min) {
    skip++;
    if (exp_grow_.next + skip >= max_ind) goto fail;
    alloc_size = sz::pind2sz(exp_grow_.next + skip);
  }
  e = edata_cache_.get();
  if (e == nullptr) goto fail;
  ptr = ehooks_.alloc(nullptr, alloc_size, kPage, &zeroed, &committed);
  if (const pszind_t fit = sz::psz2ind(alloc_min); ptr == nullptr && fit < exp_grow_.next + skip) {
    // Ours: a series that starts big (PacOptions::grow_start) must not fail a request that a
    // region of its own size would serve (RLIMIT_AS, a full address space). The series then
    // stays where it was.
    alloc_size = sz::pind2sz(fit);
    fallback = true;
    ptr = ehooks_.alloc(nullptr, alloc_size, kPage, &zeroed, &committed);
  }
  if (ptr == nullptr) {
    edata_cache_.put(e);
    goto fail;
  }
  e->init(ind(), ptr, alloc_size, false, sc::kNSizes, next_sn(), ExtentState::kActive, zeroed,
          committed, /*head=*/true);
  if (!register_impl(e)) {
    ehooks_.destroy(ptr, alloc_size, committed);
    edata_cache_.put(e);
    goto fail;
  }
  if (e->committed) *commit = true;
  if (!split_interior(&e, &lead, &trail, size, alignment)) {
    if (lead != nullptr) record(retained_, lead);
    record(retained_, e);
    goto fail;
  }
  if (lead != nullptr) record(retained_, lead);
  if (trail != nullptr) record(retained_, trail);
  if (*commit && !e->committed && !commit_impl(e, 0, e->size)) {
    record(retained_, e);
    goto fail;
  }
  // Only now, with every failure behind us, advance the series.
  if (!fallback) {
    if (exp_grow_.next + skip + 1 <= exp_grow_.limit) {
      exp_grow_.next += skip + 1;
    } else {
      exp_grow_.next = exp_grow_.limit;
    }
  }
  grow_mtx_.unlock();
  if (zero && !e->zeroed) ehooks_.zero(e->base(), e->size);
  return e;
fail:
  grow_mtx_.unlock();
  return nullptr;
}

// Maps a separate region for one extent (no-retain mode, or in-place growth at new_addr).
Edata* PacCore::alloc_wrapper(void* new_addr, size_t size, size_t alignment, bool zero,
                              bool* commit) {
  Edata* e = edata_cache_.get();
  if (e == nullptr) return nullptr;
  bool zeroed = zero;
  void* addr = ehooks_.alloc(new_addr, size, align_up(alignment, kPage), &zeroed, commit);
  if (addr == nullptr) {
    edata_cache_.put(e);
    return nullptr;
  }
  e->init(ind(), addr, size, false, sc::kNSizes, next_sn(), ExtentState::kActive, zeroed, *commit,
          /*head=*/retain());
  if (!register_impl(e)) {
    ehooks_.destroy(addr, size, *commit);
    edata_cache_.put(e);
    return nullptr;
  }
  return e;
}

size_t PacCore::coalesce_bound(size_t size, unsigned lg_max_fit) {
  return Eset::max_fit_extent(size, lg_max_fit);
}

Edata* PacCore::alloc(ExtentState which, Edata* expand, size_t size, size_t alignment, bool zero,
                      bool bounded) {
  bool commit = true;
  return recycle(ecache(which), expand, size, alignment, zero, &commit, bounded);
}

Edata* PacCore::alloc_grow(Edata* expand, size_t size, size_t alignment, bool zero, bool* fresh) {
  *fresh = false;
  bool commit = true;
  grow_mtx_.lock();
  Edata* e = recycle(retained_, expand, size, alignment, zero, &commit);
  if (e != nullptr) {
    grow_mtx_.unlock();
    if (g_gdump_track) gdump_add(e);
    return e;
  }
  if (retain() && expand == nullptr) {
    e = grow_retained(size, alignment, zero, &commit);  // releases grow_mtx
    if (e == nullptr) {
      // As 5.3.0 does: when growth fails -- custom hooks that refuse to split the grown region
      // (a region they could not split stays retained), or no region of the series' size --
      // ask the hooks for exactly the extent needed.
      commit = true;
      e = alloc_wrapper(nullptr, size, alignment, zero, &commit);
    }
  } else {
    grow_mtx_.unlock();
    // With retain, growing in place by mapping right after the extent would almost never
    // succeed; without retain it is how extents grow.
    if (retain()) return nullptr;
    e = alloc_wrapper(expand == nullptr ? nullptr : expand->past(), size, alignment, zero, &commit);
  }
  *fresh = e != nullptr;
  if (g_gdump_track && e != nullptr) gdump_add(e);
  return e;
}

Edata* PacCore::take_dirty(size_t min_size) {
  Ecache& ec = dirty_;
  MutexGuard guard(ec.mtx);
  Edata* e = ec.eset.fit(min_size, kPage, /*exact_only=*/false, Eset::kUnboundedFit);
  if (e != nullptr) activate_locked(ec, e);
  return e;
}

Edata* PacCore::take_dirty_head(size_t size) {
  Ecache& ec = dirty_;
  MutexGuard guard(ec.mtx);
  Edata* best = nullptr;
  unsigned n = 0;
  for (Edata* e = ec.eset.lru_first(); e != nullptr && n < kHeadScan; e = EdataList::next(e), n++) {
    if (e->size >= size || e->size < size / 4 || (best != nullptr && e->size <= best->size)) {
      continue;
    }
    const EmapEntry next = g_emap.lookup_entry(e->past());
    if (next.edata != nullptr && next.state == ExtentState::kRetained && !next.is_head) best = e;
  }
  if (best != nullptr) activate_locked(ec, best);
  return best;
}

void PacCore::dalloc(ExtentState which, Edata* e, bool keep_oversize) {
  e->addr = e->base();  // drop the cache-oblivious offset
  e->zeroed = false;    // dirty and muzzy memory is never assumed zero
  record(ecache(which), e, keep_oversize);
}

Edata* PacCore::evict(ExtentState which, size_t npages_min, size_t npages_want) {
  Ecache& ec = ecache(which);
  MutexGuard guard(ec.mtx);
  Edata* e;
  for (;;) {
    e = ec.eset.lru_first();
    if (e == nullptr || ec.npages() <= npages_min) return nullptr;
    ec.eset.remove(e);
    if (!ec.delay_coalesce) break;
    // Delayed coalescing happens here, with no reuse bound: what is purged goes out in few
    // madvise calls.
    g_emap.update_state(e, ExtentState::kActive);
    bool coalesced;
    if (bounded_coalesce()) {
      // It stops at what the caller wants purged, and the merged extent is the victim: put
      // back into the dirty cache it would be an extent that no request of the sizes that
      // freed its pieces may split -- the hole the bound closes on the free path.
      size_t want = npages_want > (sc::kLargeMaxClass >> config::kLgPage)
                        ? sc::kLargeMaxClass
                        : npages_want << config::kLgPage;
      size_t max_size = std::max(e->size, want);
      do {
        e = try_coalesce(ec, e, max_size, CoalesceMode::kEvict, &coalesced);
      } while (coalesced);
      break;
    }
    // 5.3.0 (bounded_coalesce:false): merge without limit; the merged extent goes back at the
    // LRU tail (keeping the older sn) and the search starts over.
    e = try_coalesce(ec, e, sc::kLargeMaxClass, CoalesceMode::kEvict, &coalesced);
    if (!coalesced) break;
    deactivate_locked(ec, e);
  }
  if (ec.state == ExtentState::kRetained) {
    deregister_impl(e);
  } else {
    g_emap.update_state(e, ExtentState::kActive);
  }
  return e;
}

void PacCore::dalloc_wrapper(Edata* e) {
  if (g_gdump_track) gdump_sub(e);
  if (!ehooks_.dalloc_will_fail(retain())) {
    // Deregister first so no other thread can find the range while it is being unmapped.
    deregister_impl(e);
    if (ehooks_.dalloc(e->base(), e->size, e->committed)) {
      edata_cache_.put(e);
      return;
    }
    register_impl(e);  // leaves exist already: cannot fail
  }
  // Keep the address space: decommit, else purge (DONTNEED zero-fills), else purge lazily.
  bool zeroed;
  if (!e->committed) {
    zeroed = true;
  } else if (decommit_impl(e)) {
    zeroed = true;
  } else if (ehooks_.purge_forced(e->base(), e->size, 0, e->size)) {
    zeroed = true;
  } else {
    ehooks_.purge_lazy(e->base(), e->size, 0, e->size);
    zeroed = false;
  }
  e->zeroed = zeroed;
  record(retained_, e);
}

void PacCore::destroy_wrapper(Edata* e) {
  ehooks_.destroy(e->base(), e->size, e->committed);
  edata_cache_.put(e);
}

bool PacCore::purge_lazy_wrapper(Edata* e, size_t offset, size_t length) {
  return ehooks_.purge_lazy(e->base(), e->size, offset, length);
}

Edata* PacCore::split_wrapper(Edata* e, size_t size_a, size_t size_b) {
  return split_impl(e, size_a, size_b);
}

bool PacCore::merge_wrapper(Edata* a, Edata* b) { return merge_impl(a, b); }

void PacCore::init(const Config& c) {
  ind_ = c.ind;
  retain_ = c.retain;
  lg_max_fit_ = c.lg_max_fit;
  bounded_coalesce_.store(c.bounded_coalesce, std::memory_order_relaxed);
  oversize_threshold_.store(c.oversize_threshold, std::memory_order_relaxed);
  dirty_.init(ExtentState::kDirty, c.ind, /*delay=*/true);
  muzzy_.init(ExtentState::kMuzzy, c.ind, /*delay=*/false);
  retained_.init(ExtentState::kRetained, c.ind, /*delay=*/false);
  for (Ecache* ec : {&dirty_, &muzzy_, &retained_}) ec->eset.set_best_fit(c.best_fit);
  edata_cache_.init(c.base);
  ehooks_.init(c.ind,
               c.hooks != nullptr ? c.hooks : const_cast<extent_hooks_t*>(&kDefaultExtentHooks));
  exp_grow_.next = sz::psz2ind(std::max(config::kHugepage, c.grow_start));
  exp_grow_.limit = sz::psz2ind(sc::kLargeMaxClass);
}

void PacCore::adopt(Edata* e, ExtentState was) {
  MutexGuard g(ecache(was).mtx);
  std::atomic_ref<uint16_t>(e->arena_ind)
      .store(static_cast<uint16_t>(ind_), std::memory_order_relaxed);
}

void PacCore::destroy_retained() {
  while (Edata* e = evict(ExtentState::kRetained, 0)) destroy_wrapper(e);
}

bool PacCore::set_retain_grow_limit(size_t limit, size_t* old_limit) {
  pszind_t ind = sz::psz2ind(limit + 1) - 1;
  if (ind >= sc::kNPSizes) return false;
  MutexGuard guard(grow_mtx_);
  if (old_limit != nullptr) *old_limit = sz::pind2sz(exp_grow_.limit);
  exp_grow_.limit = ind;
  return true;
}

size_t PacCore::retain_grow_limit() {
  MutexGuard guard(grow_mtx_);
  return sz::pind2sz(exp_grow_.limit);
}

namespace {
MutexStats read_mutex(Mutex& m) {
  MutexGuard g(m);
  return m.stats();
}
}  // namespace

void PacCore::read_stats(PacStatsSnap* out) {
  out->nmuzzy = muzzy_.npages();
  out->nretained = retained_.npages();
  out->mapped = mapped();
  out->abandoned_vm = abandoned_vm_.load(std::memory_order_relaxed);
  out->extent_avail = edata_cache_.available();
  counters_.read(out->counters);
  out->mutexes[kPacMtxExtentAvail] = edata_cache_.mutex_stats();
  out->mutexes[kPacMtxExtentsDirty] = read_mutex(dirty_.mtx);
  out->mutexes[kPacMtxExtentsMuzzy] = read_mutex(muzzy_.mtx);
  out->mutexes[kPacMtxExtentsRetained] = read_mutex(retained_.mtx);
  for (pszind_t j = 0; j < sc::kNPSizes; j++) {
    PacExtentStats& e = out->extents[j];
    e.ndirty = dirty_.eset.nextents(j);
    e.nmuzzy = muzzy_.eset.nextents(j);
    e.nretained = retained_.eset.nextents(j);
    e.dirty_bytes = dirty_.eset.nbytes(j);
    e.muzzy_bytes = muzzy_.eset.nbytes(j);
    e.retained_bytes = retained_.eset.nbytes(j);
  }
}

void PacCore::reset_mutex_stats() {
  edata_cache_.reset_mutex_stats();
  for (Mutex* m : {&dirty_.mtx, &muzzy_.mtx, &retained_.mtx}) {
    MutexGuard g(*m);
    m->reset_stats();
  }
}

void PacCore::prefork_ecaches() {
  dirty_.mtx.prefork();
  muzzy_.mtx.prefork();
  retained_.mtx.prefork();
  edata_cache_.prefork();
}
void PacCore::postfork_parent() {
  edata_cache_.postfork_parent();
  retained_.mtx.postfork_parent();
  muzzy_.mtx.postfork_parent();
  dirty_.mtx.postfork_parent();
  grow_mtx_.postfork_parent();
}
void PacCore::postfork_child() {
  edata_cache_.postfork_child();
  retained_.mtx.postfork_child();
  muzzy_.mtx.postfork_child();
  dirty_.mtx.postfork_child();
  grow_mtx_.postfork_child();
}

namespace extent {

void gdump_boot(bool on) {
  g_gdump_on.store(on, std::memory_order_relaxed);
  g_gdump_track = true;
}

void gdump_switch(bool on) { g_gdump_on.store(on, std::memory_order_relaxed); }

bool gdump_take_pending() {
  if (JE_LIKELY(!gdump_detail::t_pending)) return false;
  gdump_detail::t_pending = false;
  return true;
}

void gdump_pages(size_t* cur, size_t* high) {
  *cur = g_gdump_cur.load(std::memory_order_relaxed);
  *high = g_gdump_high.load(std::memory_order_relaxed);
}

}  // namespace extent
}  // namespace je
