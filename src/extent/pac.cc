// pac.cc: the page allocator of one arena (see pac.h).
#include "extent/pac.h"

#include <algorithm>
#include <cstring>

#include "extent/dss.h"
#include "extent/emap.h"
#include "extent/extent.h"

namespace je {

namespace {
constexpr size_t kPage = config::kPage;
constexpr unsigned kLgPage = config::kLgPage;
}  // namespace

bool Pac::init(const PacOptions& o) {
  if (!Decay::ms_valid(o.dirty_decay_ms) || !Decay::ms_valid(o.muzzy_decay_ms)) return false;
  placement_ = o.placement;
  purge_on_grow_ = o.purge_on_grow;
  hold_.init(o.hold, o.now_ns);
  core_.init(PacCore::Config{.ind = o.ind,
                             .base = o.base,
                             .hooks = o.hooks,
                             .retain = o.retain,
                             .lg_max_fit = o.lg_max_fit,
                             .bounded_coalesce = o.placement.bounded_coalesce,
                             .best_fit = o.placement.best_fit,
                             .oversize_threshold = o.oversize_threshold,
                             .grow_start = o.grow_start});
  sec_.init(o.placement.extent_cache_bytes);
  dss_prec_set(o.ind, dss_prec_default());  // a new arena takes arena.4096.dss
  decay_dirty_.decay.init(o.now_ns, o.dirty_decay_ms);
  decay_muzzy_.decay.init(o.now_ns, o.muzzy_decay_ms);
  update_may_force_decay();
  return true;
}

void Pac::update_may_force_decay() {
  // A held oversize extent stays dirty like any other; decay purges what the hold lets go.
  core_.set_may_force_decay(decay_ms_get(ExtentState::kDirty) != -1 &&
                            decay_ms_get(ExtentState::kMuzzy) != -1 && !immediate_hold());
}

// The one allocation cascade, for a new extent (`expand` nullptr) and for in-place growth
// (`expand`: only the free extent right after it can serve). The muzzy ecache is consulted
// only while muzzy decay is on: with muzzy_decay_ms 0 purging never moves pages there.
Edata* Pac::obtain(Edata* expand, size_t size, size_t alignment, bool zero, Reach reach,
                   PacSource* src) {
  Edata* e = obtain_cached(expand, size, alignment, zero, src);
  // Freed memory before any retained or fresh memory: what the small extent cache holds has
  // not been seen by the ecache yet, so it goes there (coalescing as it goes) and the search
  // runs once more.
  if (e == nullptr && reach != Reach::kCached && sec_.npages() != 0) {
    flush_sec(/*for_growth=*/true);
    e = obtain_cached(expand, size, alignment, zero, src);
  }
  if (e == nullptr && reach == Reach::kGrow) e = take_grown(expand, size, alignment, zero, src);
  return e;
}

Edata* Pac::obtain_cached(Edata* expand, size_t size, size_t alignment, bool zero, PacSource* src) {
  *src = PacSource::kDirty;
  Edata* e = core_.alloc(ExtentState::kDirty, expand, size, alignment, zero);
  if (e == nullptr && may_have_muzzy()) {
    *src = PacSource::kMuzzy;
    e = core_.alloc(ExtentState::kMuzzy, expand, size, alignment, zero);
  }
  // Ours (opt.reuse_before_grow): the lg_max_fit bound keeps big dirty extents whole for big
  // requests, but when the alternative is retained or new memory -- a page fault per page and
  // more RSS while the big extent sits resident and unused -- splitting it is the better deal.
  // The unlocked page count only skips a search that cannot succeed. (In-place growth has one
  // candidate, the neighbour, which the bound never applies to.)
  if (e == nullptr && expand == nullptr && placement_.reuse_before_grow &&
      lg_max_fit() < Eset::kUnboundedFit &&
      core_.npages(ExtentState::kDirty) >= (size >> kLgPage)) {
    *src = PacSource::kDirty;
    e = core_.alloc(ExtentState::kDirty, nullptr, size, alignment, zero,
                    /*bounded=*/false);
  }
  return e;
}

void Pac::flush_sec(bool for_growth) {
  EdataList l;
  // The Sec counts the extents in transit before they leave it; each is uncounted once it is in
  // the ecache: whoever finds the Sec empty and then this count at 0 finds them in the ecache.
  sec_.flush(&l, for_growth ? Sec::FlushOrder::kSmallFirst : Sec::FlushOrder::kLargeFirst);
  while (Edata* e = l.front()) {
    l.remove(e);
    const size_t npages = e->size >> kLgPage;  // e may coalesce away in the ecache
    core_.dalloc(ExtentState::kDirty, e);
    sec_.landed(npages);
  }
}

Edata* Pac::take_grown(Edata* expand, size_t size, size_t alignment, bool zero, PacSource* src) {
  bool fresh;
  Edata* e = core_.alloc_grow(expand, size, alignment, zero, &fresh);
  *src = fresh ? PacSource::kFresh : PacSource::kRetained;
  return e;
}

constinit std::atomic<uint64_t> g_pac_growths{0};

void Pac::account_obtained(PacSource src, size_t size) {
  if (src == PacSource::kFresh || src == PacSource::kRetained) {
    core_.add_mapped(size);
    g_pac_growths.fetch_add(1, std::memory_order_relaxed);
  }
  hold_.grown(size >> kLgPage);
  count_alloc(src, size);
}

Edata* Pac::alloc(size_t size, size_t alignment, bool zero, Reach reach) {
  PacSource src = PacSource::kDirty;
  // The small extent cache serves only what it holds exactly; a zeroed request needs pages
  // known to be zero, which cached (dirty) ones are not.
  Edata* e = zero ? nullptr : sec_.take(size, alignment);
  if (e == nullptr) {
    // Everything cached first; growth (with its dirty head step) is grow()'s.
    const Reach cached = reach == Reach::kGrow ? Reach::kFlushed : reach;
    e = obtain(nullptr, size, alignment, zero, cached, &src);
    if (e == nullptr && reach == Reach::kGrow) return grow(size, alignment, zero);
  }
  if (e != nullptr) new_extent_obtained(src, size);
  return e;
}

Edata* Pac::extend_dirty_head(size_t size, size_t alignment, bool zero) {
  if (!placement_.reuse_before_grow || alignment > kPage || (size >> kLgPage) < kHeadMinPages ||
      !core_.default_hooks()) {
    return nullptr;
  }
  Edata* head = core_.take_dirty_head(size);
  if (head == nullptr) return nullptr;
  const size_t have = head->size;
  bool fresh = false;
  Edata* trail = core_.alloc_grow(head, size - have, kPage, zero, &fresh);
  if (trail == nullptr || !core_.merge_wrapper(head, trail)) {
    if (trail != nullptr) core_.dalloc_wrapper(trail);
    core_.dalloc(ExtentState::kDirty, head, /*keep_oversize=*/true);  // dirty it was
    return nullptr;
  }
  // Dirty pages are never known to be zero; the extension's are zeroed by alloc_grow.
  if (zero) std::memset(head->base(), 0, have);
  head->zeroed = zero;
  hold_.grown(have >> kLgPage);
  count_alloc(PacSource::kDirty, have);
  new_extent_obtained(fresh ? PacSource::kFresh : PacSource::kRetained, size - have);
  return head;
}

Edata* Pac::lend(size_t size, ExtentState* was) {
  PacSource src = PacSource::kDirty;
  Edata* e = sec_.take(size, kPage);
  if (e == nullptr) e = obtain(nullptr, size, kPage, /*zero=*/false, Reach::kCached, &src);
  if (e == nullptr) return nullptr;
  // Counted as reuse of this arena's cached pages; never active here, so the hold's peak and
  // the active count do not see it.
  count_alloc(src, size);
  core_.sub_mapped(size);
  *was = src == PacSource::kMuzzy ? ExtentState::kMuzzy : ExtentState::kDirty;
  return e;
}

void Pac::adopt(Edata* e, ExtentState was) {
  core_.adopt(e, was);
  core_.add_mapped(e->size);
  hold_.grown(e->npages());
}

Edata* Pac::grow(size_t size, size_t alignment, bool zero) {
  if (Edata* head = extend_dirty_head(size, alignment, zero)) return head;
  PacSource src;
  Edata* e = take_grown(nullptr, size, alignment, zero, &src);
  if (e != nullptr) new_extent_obtained(src, size);
  return e;
}

void Pac::new_extent_obtained(PacSource src, size_t size) {
  account_obtained(src, size);
  // The immediate hold (opt.oversize_hold) always purges on growth: its held extents were too
  // small for this request, and keeping them beside the new one would stack the two.
  if ((purge_on_grow_ || immediate_hold()) &&
      (src == PacSource::kFresh || src == PacSource::kRetained)) {
    purge_for_growth(size >> kLgPage);
  }
}

// Ours (opt.purge_on_grow; growth_purge_pages says how many and why). Decay would purge these
// pages later anyway; this brings it forward through the same pipeline (counted in the dirty
// decay stats), taking only pieces of at least kGrowPurgeMinPages.
void Pac::purge_for_growth(size_t npages) {
  const bool held = immediate_hold();
  // -1: never purge; 0: nothing dirty, unless held.
  if (decay_ms_get(ExtentState::kDirty) <= 0 && !held) return;
  const size_t want =
      growth_purge_pages(npages, core_.npages(ExtentState::kDirty), nactive(), held);
  DecayPipeline& p = pipeline(ExtentState::kDirty);
  if (want == 0 || !p.mtx.try_lock()) return;  // locked: a purge is on its way already
  purge_locked(ExtentState::kDirty, /*fully=*/false, want,
               [&](size_t) { return core_.take_dirty(kGrowPurgeMinPages << kLgPage); });
  p.mtx.unlock();
}

bool Pac::expand(Edata* e, size_t old_size, size_t new_size, bool zero) {
  if (core_.merge_will_fail()) return false;
  size_t amount = new_size - old_size;
  // A neighbour sitting in the small extent cache is free memory, as it would be in the ecache.
  if (sec_.npages() != 0) {
    Edata* next = g_emap.lookup(reinterpret_cast<void*>(e->past_addr()));
    if (next != nullptr && sec_.remove(next, ind())) {
      core_.dalloc(ExtentState::kDirty, next);
    }
  }
  PacSource src;
  Edata* trail = obtain(e, amount, kPage, zero, Reach::kGrow, &src);
  if (trail == nullptr) return false;
  if (!core_.merge_wrapper(e, trail)) {
    core_.dalloc_wrapper(trail);
    return false;
  }
  // Growth in place does not purge (opt.purge_on_grow acts on new extents only).
  account_obtained(src, amount);
  return true;
}

bool Pac::shrink(Edata* e, size_t old_size, size_t new_size) {
  if (core_.split_will_fail()) return false;
  Edata* trail = core_.split_wrapper(e, new_size, old_size - new_size);
  if (trail == nullptr) return false;
  hold_.shrunk((old_size - new_size) >> kLgPage);
  core_.dalloc(ExtentState::kDirty, trail);
  return true;
}

unsigned Pac::alloc_batch(size_t size, Edata** out, unsigned k, Reach reach) {
  unsigned got = sec_.take_batch(size, out, k);
  if (got != 0) {
    hold_.grown((size >> kLgPage) * got);
    core_.counters().add_alloc(PacSource::kDirty, (size >> kLgPage) * got, got);
  }
  while (got < k) {
    Edata* e = alloc(size, kPage, /*zero=*/false, reach);
    if (e == nullptr) break;
    out[got++] = e;
  }
  return got;
}

void Pac::dalloc_batch(Edata* const* es, unsigned n) {
  size_t npages = 0;
  bool all_fit = sec_may_cache();
  for (unsigned i = 0; i < n; i++) {
    Edata* e = es[i];
    if (e->slab) g_emap.deregister_interior(e);
    g_emap.remap(e, sc::kNSizes, /*slab=*/false);
    npages += e->npages();
    all_fit = all_fit && sec_.fits(e);
  }
  hold_.shrunk(npages);
  if (!all_fit) {
    for (unsigned i = 0; i < n; i++) {
      core_.dalloc(ExtentState::kDirty, es[i], keeps_oversize(es[i]));
    }
    return;
  }
  for (unsigned i = 0; i < n; i++) {
    es[i]->addr = es[i]->base();  // as the ecache keeps it: no cache-oblivious offset, not zeroed
    es[i]->zeroed = false;
  }
  // Some arena faulted pages in since the last free here: what this cache holds for exact
  // sizes goes to the ecache (where it coalesces, can be borrowed, and decays) rather than
  // wait for this arena's own growth or decay epoch.
  if (sec_.growths_moved(g_pac_growths.load(std::memory_order_relaxed)) && sec_.npages() != 0) {
    flush_sec(/*for_growth=*/true);
  }
  EdataList evicted;
  sec_.put_batch(es, n, &evicted);
  while (Edata* x = evicted.front()) {
    evicted.remove(x);
    core_.dalloc(ExtentState::kDirty, x);
  }
}

bool Pac::decay_ms_set(ExtentState which, int64_t ms, uint64_t now_ns) {
  if (!Decay::ms_valid(ms)) return false;
  DecayPipeline& p = pipeline(which);
  MutexGuard guard(p.mtx);
  // Restart the backlog: decay time changes are rare (configuration), and mapping the old
  // backlog onto a new window is not worth its complexity.
  p.decay.init(now_ns, ms);
  update_may_force_decay();
  if (which == ExtentState::kDirty) hold_.restart_locked(now_ns);
  bool advanced;
  maybe_decay_purge_locked(which, now_ns, Eagerness::kOnEpochAdvance, SIZE_MAX, &advanced);
  return true;
}

void Pac::decay_all(ExtentState which, bool fully) {
  if (which == ExtentState::kDirty) flush_sec();
  DecayPipeline& p = pipeline(which);
  MutexGuard guard(p.mtx);
  decay_to_limit(which, fully, 0, core_.npages(which));
}

bool Pac::try_decay(ExtentState which, uint64_t now_ns, Eagerness eagerness, bool* epoch_advanced,
                    size_t hold_cap) {
  *epoch_advanced = false;
  DecayPipeline& p = pipeline(which);
  if (which == ExtentState::kDirty && sec_.npages() != 0) {
    // An epoch about to end counts the pages freed during it as its newest: the small extent
    // cache's go to the ecache first, so that decay ages them as if they had gone there when
    // freed. (Not under the decay mutex: recording an extent dirty may purge.)
    if (!p.mtx.try_lock()) return false;  // someone else is on it; no need to wait
    const bool due = now_ns >= p.decay.deadline_ns();
    p.mtx.unlock();
    if (due) flush_sec();
  }
  if (!p.mtx.try_lock()) return false;
  maybe_decay_purge_locked(which, now_ns, eagerness, hold_cap, epoch_advanced);
  p.mtx.unlock();
  // Pages cached after the check above: decay sees them from the next epoch on.
  if (which == ExtentState::kDirty && *epoch_advanced) flush_sec();
  return true;
}

uint64_t Pac::decay_ns_until_purge(ExtentState which, uint64_t now_ns, uint64_t npages_threshold,
                                   size_t hold_cap) {
  DecayPipeline& p = pipeline(which);
  if (which == ExtentState::kDirty && immediate_hold()) {
    // Frees purge down to the hold at once; what it keeps may go when the peak ages out.
    if (!p.mtx.try_lock()) return 0;
    const bool held = core_.npages(ExtentState::kDirty) != 0;
    const uint64_t ns =
        held ? hold_.ns_until_rotation_locked(now_ns, hold_.window_ms(0)) : UINT64_MAX;
    p.mtx.unlock();
    return ns;
  }
  if (p.decay.ms() <= 0) return UINT64_MAX;
  if (which == ExtentState::kDirty) {
    flush_sec();  // a background thread must see them
    // Another thread's flush may still be carrying pages from the Sec to the ecache (a stats
    // read, a growing arena): they are not in the ecache's count yet, which may look empty.
    // Look again shortly rather than sleep without a deadline: the flusher does not wake us.
    if (sec_.in_transit() != 0) return 0;
  }
  if (!p.mtx.try_lock()) return 0;
  const size_t current = core_.npages(which);
  uint64_t ns = p.decay.ns_until_purge(current, npages_threshold);
  uint64_t epoch = p.decay.epoch_ns();
  // With the hold (dirty only), pages below it are not purgeable until the peak ages out.
  const uint64_t not_before =
      which == ExtentState::kDirty
          ? hold_.ns_not_before_locked(now_ns, p.decay.ms(), current, p.decay.npages_limit(),
                                       npages_threshold, hold_cap)
          : 0;
  p.mtx.unlock();
  if (ns == UINT64_MAX) return ns;
  // ns_until_purge counts from the current epoch start.
  uint64_t due = epoch > UINT64_MAX - ns ? UINT64_MAX - 1 : epoch + ns;
  uint64_t wait = due > now_ns ? due - now_ns : 0;
  return std::max(wait, not_before);
}

void Pac::maybe_decay_purge_locked(ExtentState which, uint64_t now_ns, Eagerness eagerness,
                                   size_t hold_cap, bool* epoch_advanced) {
  DecayPipeline& p = pipeline(which);
  *epoch_advanced = false;
  int64_t ms = p.decay.ms();
  if (ms <= 0) {
    if (ms != 0) return;
    const bool held = which == ExtentState::kDirty && immediate_hold();
    const size_t limit = held ? hold_.floor_locked(now_ns, hold_.window_ms(0), 0, hold_cap) : 0;
    const size_t current = core_.npages(which);
    if (current > limit) decay_to_limit(which, false, limit, current - limit);
    return;
  }
  size_t current = core_.npages(which);
  *epoch_advanced = p.decay.maybe_advance_epoch(now_ns, current);
  const size_t limit = which == ExtentState::kDirty
                           ? hold_.floor_locked(now_ns, ms, p.decay.npages_limit(), hold_cap)
                           : p.decay.npages_limit();
  if (eagerness == Eagerness::kAlways ||
      (*epoch_advanced && eagerness == Eagerness::kOnEpochAdvance)) {
    if (current > limit) decay_to_limit(which, false, limit, current - limit);
  }
}

template <class Take>
void Pac::purge_locked(ExtentState which, bool fully, size_t npages, Take take) {
  DecayPipeline& p = pipeline(which);
  if (p.decay.purging || npages == 0) return;
  p.decay.purging = true;
  p.mtx.unlock();
  EdataList stash;
  size_t nstashed = 0;
  while (nstashed < npages) {
    Edata* e = take(npages - nstashed);
    if (e == nullptr) break;
    stash.push_back(e);
    nstashed += e->npages();
  }
  if (nstashed != 0) decay_stashed(which, fully, &stash);
  p.mtx.lock();
  p.decay.purging = false;
}

void Pac::decay_to_limit(ExtentState which, bool fully, size_t npages_limit, size_t npages_max) {
  purge_locked(which, fully, npages_max,
               [&](size_t left) { return core_.evict(which, npages_limit, left); });
}

size_t Pac::decay_stashed(ExtentState which, bool fully, EdataList* stash) {
  size_t npurged = 0;
  uint64_t nmadvise = 0;
  size_t nunmapped = 0;
  // Dirty pages go to muzzy (MADV_FREE) when muzzy decay is on; otherwise, and for muzzy
  // pages, to retained (MADV_DONTNEED or unmap).
  bool try_muzzy = !fully && decay_ms_get(ExtentState::kMuzzy) != 0;
  while (Edata* e = stash->pop_front()) {
    size_t npages = e->npages();
    nmadvise++;
    npurged += npages;
    if (which == ExtentState::kDirty && try_muzzy && core_.purge_lazy_wrapper(e, 0, e->size)) {
      core_.dalloc(ExtentState::kMuzzy, e);
      continue;
    }
    core_.dalloc_wrapper(e);
    nunmapped += npages;
  }
  bool dirty = which == ExtentState::kDirty;
  core_.counters().add_decay(dirty, PacDecayCounter::kNpurge, 1);
  core_.counters().add_decay(dirty, PacDecayCounter::kNmadvise, nmadvise);
  core_.counters().add_decay(dirty, PacDecayCounter::kPurged, npurged);
  core_.sub_mapped(nunmapped << kLgPage);
  return npurged;
}

void Pac::read_stats(PacStatsSnap* out) {
  flush_sec();  // per-size extent counts as the ecache would have them
  out->dirty_decay_ms = decay_ms_get(ExtentState::kDirty);
  out->muzzy_decay_ms = decay_ms_get(ExtentState::kMuzzy);
  out->nactive = nactive();
  out->ndirty = ndirty();
  core_.read_stats(out);
  for (auto [slot, p] :
       {std::pair{kPacMtxDecayDirty, &decay_dirty_}, {kPacMtxDecayMuzzy, &decay_muzzy_}}) {
    MutexGuard g(p->mtx);
    out->mutexes[slot] = p->mtx.stats();
  }
}

void Pac::reset_mutex_stats() {
  core_.reset_mutex_stats();
  for (DecayPipeline* p : {&decay_dirty_, &decay_muzzy_}) {
    MutexGuard g(p->mtx);
    p->mtx.reset_stats();
  }
}

void Pac::prefork_grow() { core_.prefork_grow(); }
void Pac::prefork_decay() {
  decay_dirty_.mtx.prefork();
  decay_muzzy_.mtx.prefork();
}
void Pac::prefork_ecaches() {
  core_.prefork_ecaches();
  sec_.prefork();
}
void Pac::postfork_parent() {
  sec_.postfork_parent();
  core_.postfork_parent();
  decay_muzzy_.mtx.postfork_parent();
  decay_dirty_.mtx.postfork_parent();
}
void Pac::postfork_child() {
  sec_.postfork_child();
  core_.postfork_child();
  decay_muzzy_.mtx.postfork_child();
  decay_dirty_.mtx.postfork_child();
}

}  // namespace je
