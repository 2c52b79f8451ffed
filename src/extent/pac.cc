// pac.cc: the page allocator of one arena (see pac.h).
#include "extent/pac.h"

#include <algorithm>

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
  core_.ind_ = o.ind;
  core_.base = o.base;
  core_.retain_ = o.retain;
  core_.lg_max_fit_ = o.lg_max_fit;
  reuse_before_grow_ = o.reuse_before_grow;
  purge_on_grow_ = o.purge_on_grow;
  decay_hold_peak_ = o.decay_hold_peak;
  shares_hold_budget_ = o.decay_hold_peak && o.shares_hold_budget;
  immediate_hold_ms_ = o.decay_hold_peak && o.immediate_hold_ms > 0 ? o.immediate_hold_ms : 0;
  peak_epoch_ns_ = o.now_ns;
  core_.bounded_coalesce_.store(o.bounded_coalesce, std::memory_order_relaxed);
  core_.oversize_threshold_.store(o.oversize_threshold, std::memory_order_relaxed);
  core_.ecache_dirty.init(ExtentState::kDirty, o.ind, /*delay=*/true);
  core_.ecache_muzzy.init(ExtentState::kMuzzy, o.ind, /*delay=*/false);
  core_.ecache_retained.init(ExtentState::kRetained, o.ind, /*delay=*/false);
  core_.ecache_dirty.eset.set_best_fit(o.best_fit);
  core_.ecache_muzzy.eset.set_best_fit(o.best_fit);
  core_.ecache_retained.eset.set_best_fit(o.best_fit);
  core_.edata_cache.init(o.base);
  sec_.init(o.extent_cache_bytes);
  dss_prec_set(o.ind, dss_prec_default());  // a new arena takes arena.4096.dss
  core_.ehooks.init(
      o.ind, o.hooks != nullptr ? o.hooks : const_cast<extent_hooks_t*>(&kDefaultExtentHooks));
  core_.exp_grow.next = sz::psz2ind(std::max(config::kHugepage, o.grow_start));
  core_.exp_grow.limit = sz::psz2ind(sc::kLargeMaxClass);
  decay_dirty_.decay.init(o.now_ns, o.dirty_decay_ms);
  decay_muzzy_.decay.init(o.now_ns, o.muzzy_decay_ms);
  update_may_force_decay();
  return true;
}

void Pac::update_may_force_decay() {
  // A held oversize extent stays dirty like any other; decay purges what the hold lets go.
  core_.may_force_decay_.store(decay_ms_get(ExtentState::kDirty) != -1 &&
                                   decay_ms_get(ExtentState::kMuzzy) != -1 && !immediate_hold(),
                               std::memory_order_relaxed);
}

void Pac::count_alloc(PacSource src, size_t size) {
  core_.counters.add_alloc(src, size >> kLgPage);
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

Edata* Pac::obtain_cached(Edata* expand, size_t size, size_t alignment, bool zero,
                          PacSource* src) {
  *src = PacSource::kDirty;
  Edata* e = extent::ecache_alloc(core_, core_.ecache_dirty, expand, size, alignment, zero);
  if (e == nullptr && may_have_muzzy()) {
    *src = PacSource::kMuzzy;
    e = extent::ecache_alloc(core_, core_.ecache_muzzy, expand, size, alignment, zero);
  }
  // Ours (opt.reuse_before_grow): the lg_max_fit bound keeps big dirty extents whole for big
  // requests, but when the alternative is retained or new memory -- a page fault per page and
  // more RSS while the big extent sits resident and unused -- splitting it is the better deal.
  // The unlocked page count only skips a search that cannot succeed. (In-place growth has one
  // candidate, the neighbour, which the bound never applies to.)
  if (e == nullptr && expand == nullptr && reuse_before_grow_ &&
      lg_max_fit() < Eset::kUnboundedFit && core_.ecache_dirty.npages() >= (size >> kLgPage)) {
    *src = PacSource::kDirty;
    e = extent::ecache_alloc(core_, core_.ecache_dirty, nullptr, size, alignment, zero,
                             /*bounded=*/false);
  }
  return e;
}

void Pac::flush_sec(bool for_growth) {
  EdataList l;
  // The Sec counts the extents in transit before they leave it; each is uncounted once it is in
  // the ecache: whoever finds the Sec empty and then this count at 0 finds them in the ecache.
  sec_.flush(&l, for_growth ? Sec::FlushOrder::kSmallFirst : Sec::FlushOrder::kLargeFirst,
             &sec_transit_pages_);
  while (Edata* e = l.front()) {
    l.remove(e);
    const size_t npages = e->size >> kLgPage;  // e may coalesce away in the ecache
    extent::ecache_dalloc(core_, core_.ecache_dirty, e);
    sec_transit_pages_.fetch_sub(npages, std::memory_order_release);
  }
}

Edata* Pac::take_grown(Edata* expand, size_t size, size_t alignment, bool zero, PacSource* src) {
  bool fresh;
  Edata* e = extent::ecache_alloc_grow(core_, expand, size, alignment, zero, &fresh);
  *src = fresh ? PacSource::kFresh : PacSource::kRetained;
  return e;
}

constinit std::atomic<uint64_t> g_pac_growths{0};

void Pac::account_obtained(PacSource src, size_t size) {
  if (src == PacSource::kFresh || src == PacSource::kRetained) {
    core_.mapped.fetch_add(size, std::memory_order_relaxed);
    g_pac_growths.fetch_add(1, std::memory_order_relaxed);
  }
  note_active_grown(size >> kLgPage);
  count_alloc(src, size);
}

Edata* Pac::alloc(size_t size, size_t alignment, bool zero, Reach reach) {
  PacSource src = PacSource::kDirty;
  // The small extent cache serves only what it holds exactly; a zeroed request needs pages
  // known to be zero, which cached (dirty) ones are not.
  Edata* e = zero ? nullptr : sec_.take(size, alignment);
  if (e == nullptr) e = obtain(nullptr, size, alignment, zero, reach, &src);
  if (e != nullptr) new_extent_obtained(src, size);
  return e;
}

Edata* Pac::lend(size_t size, ExtentState* was) {
  PacSource src = PacSource::kDirty;
  Edata* e = sec_.take(size, kPage);
  if (e == nullptr) e = obtain(nullptr, size, kPage, /*zero=*/false, Reach::kCached, &src);
  if (e == nullptr) return nullptr;
  // Counted as reuse of this arena's cached pages; never active here, so the hold's peak and
  // the active count do not see it.
  count_alloc(src, size);
  core_.mapped.fetch_sub(size, std::memory_order_relaxed);
  *was = src == PacSource::kMuzzy ? ExtentState::kMuzzy : ExtentState::kDirty;
  return e;
}

void Pac::adopt(Edata* e, ExtentState was) {
  {
    MutexGuard g(ecache_of(was).mtx);
    std::atomic_ref<uint16_t>(e->arena_ind)
        .store(static_cast<uint16_t>(core_.ind()), std::memory_order_relaxed);
  }
  core_.mapped.fetch_add(e->size, std::memory_order_relaxed);
  note_active_grown(e->npages());
}

Edata* Pac::grow(size_t size, size_t alignment, bool zero) {
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

// Ours (opt.purge_on_grow). We get here only when nothing cached fits the request, so the dirty
// pages held are in pieces too small for it (or, with reuse_before_grow off, beyond the reuse
// ratio): resident, yet not serving the demand that now faults in new pages. Purging as many
// of them as we just grew keeps the footprint from stacking the two. Only pieces of at least
// kGrowPurgeMinPages are purged -- one madvise each, so the cost per page stays low (purging
// small slab-sized pieces one by one cost more time than it saved memory) -- and a reserve of
// max(1 MiB, active / 32) stays dirty. Decay would purge these pages later anyway; this brings
// it forward through the same pipeline (counted in the dirty decay stats).
void Pac::purge_for_growth(size_t npages) {
  // -1: never purge; 0: nothing dirty, unless held (then no reserve: the hold is the reserve).
  const bool held = immediate_hold();
  if (decay_ms_get(ExtentState::kDirty) <= 0 && !held) return;
  const size_t ndirty = core_.ecache_dirty.npages();
  size_t keep = 0;
  if (!held) keep = std::max(nactive() / kGrowPurgeActiveDiv, kGrowPurgeMinKeepPages);
  if (ndirty <= keep + kGrowPurgeMinPages) return;
  const size_t want = ndirty - keep < npages ? ndirty - keep : npages;
  DecayPipeline& p = pipeline(ExtentState::kDirty);
  if (!p.mtx.try_lock()) return;  // a purge is on its way already
  if (p.decay.purging) {
    p.mtx.unlock();
    return;
  }
  p.decay.purging = true;
  p.mtx.unlock();
  EdataList stash;
  size_t nstashed = 0;
  while (nstashed < want) {
    Edata* e = extent::ecache_take(core_.ecache_dirty, kGrowPurgeMinPages << kLgPage);
    if (e == nullptr) break;
    stash.push_back(e);
    nstashed += e->npages();
  }
  if (nstashed != 0) decay_stashed(ExtentState::kDirty, /*fully=*/false, &stash);
  p.mtx.lock();
  p.decay.purging = false;
  p.mtx.unlock();
}

namespace hold_budget {
namespace {
constinit std::atomic<size_t> g_active{0};
constinit std::atomic<size_t> g_peak_cur{0};
constinit std::atomic<size_t> g_peak_prev{0};
constinit std::atomic<uint64_t> g_epoch_ns{0};

void raise_peak(size_t now) {
  size_t peak = g_peak_cur.load(std::memory_order_relaxed);
  while (now > peak && !g_peak_cur.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
}  // namespace

// Each Pac's successive counts are one linear sequence (fetch_add/fetch_sub), so the granule
// crossings its threads publish telescope to floor(count / granule) exactly.
void publish(size_t before, size_t after) {
  const size_t b = before >> kLgGranulePages;
  const size_t a = after >> kLgGranulePages;
  if (a > b) {
    const size_t add = (a - b) << kLgGranulePages;
    raise_peak(g_active.fetch_add(add, std::memory_order_relaxed) + add);
  } else if (a < b) {
    g_active.fetch_sub((b - a) << kLgGranulePages, std::memory_order_relaxed);
  }
}

size_t active_pages() { return g_active.load(std::memory_order_relaxed); }

size_t peak_pages(uint64_t now_ns, int64_t ms) {
  const uint64_t half = static_cast<uint64_t>(ms) * 500'000;
  uint64_t epoch = g_epoch_ns.load(std::memory_order_relaxed);
  // The first reader starts the windows: the peak so far is the current half's, not stale.
  if (epoch == 0 && g_epoch_ns.compare_exchange_strong(epoch, now_ns, std::memory_order_relaxed)) {
    epoch = now_ns;
  }
  const uint64_t elapsed = now_ns > epoch ? now_ns - epoch : 0;
  // Whoever moves the epoch rotates; the others read the peaks as they stand.
  if (elapsed >= half &&
      g_epoch_ns.compare_exchange_strong(epoch, now_ns, std::memory_order_relaxed)) {
    const size_t active = active_pages();
    const size_t cur = g_peak_cur.exchange(active, std::memory_order_relaxed);
    g_peak_prev.store(elapsed >= 2 * half ? active : cur, std::memory_order_relaxed);
  }
  return std::max(g_peak_cur.load(std::memory_order_relaxed),
                  g_peak_prev.load(std::memory_order_relaxed));
}
}  // namespace hold_budget

// Ours (opt.decay_hold_peak). A server that runs the same work again and again (a query, a
// request batch) frees most of its memory at the end of each round and takes it back at the
// start of the next. Decay cannot tell such a dip from memory that will never be used again:
// it purges pages by age alone, so each round faults in again what the last one freed. The
// hold remembers the highest active page count of the last one to two half windows of
// dirty_decay_ms and keeps that many dirty pages beyond active -- never more than the process
// had resident at that peak -- so a return to the peak is served from the dirty cache. When
// the work does not come back, the peak ages out after at most one window and decay purges
// as 5.3.0 does (only later). Explicit purges and decay_ms 0 or -1 are not affected.
void Pac::note_active_grown(size_t npages) {
  size_t now = nactive_.fetch_add(npages, std::memory_order_relaxed) + npages;
  if (!decay_hold_peak_) return;
  note_busy();
  if (shares_hold_budget_) hold_budget::publish(now - npages, now);
  size_t peak = peak_cur_.load(std::memory_order_relaxed);
  while (now > peak && !peak_cur_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void Pac::note_active_shrunk(size_t npages) {
  const size_t before = nactive_.fetch_sub(npages, std::memory_order_relaxed);
  if (decay_hold_peak_) note_busy();
  if (shares_hold_budget_) hold_budget::publish(before, before - npages);
  // The immediate hold's arena may see no decay step for longer than a window (its blocks often
  // live through a whole query), so the level its active pages stood at until this free is
  // kept for the decay step the free makes next (hold_pages_locked).
  if (immediate_hold_ms_ != 0) {
    size_t from = freed_from_.load(std::memory_order_relaxed);
    while (before > from &&
           !freed_from_.compare_exchange_weak(from, before, std::memory_order_relaxed)) {
    }
  }
}

size_t Pac::hold_pages_locked(uint64_t now_ns, int64_t ms) {
  if (!decay_hold_peak_) return 0;
  const size_t freed_from =
      immediate_hold_ms_ != 0 ? freed_from_.exchange(0, std::memory_order_relaxed) : 0;
  // ms * 1e6 / 2; even 2 * half fits in 64 bits for the largest decay time (Decay::kMaxMs).
  const uint64_t half = static_cast<uint64_t>(ms) * 500'000;
  const uint64_t elapsed = now_ns > peak_epoch_ns_ ? now_ns - peak_epoch_ns_ : 0;
  if (elapsed >= half) {
    // A whole window without a rotation: the older peak is too old to count -- but not the
    // level active stood at until a free since the last decay step: the immediate hold's arena
    // steps at every free, so that level lasted until now. (Without this, the first free after
    // a quiet stretch found its peak "stale" and purged its block at once, although it was
    // freed from the peak this very moment.)
    const size_t active = nactive();
    const bool stale = elapsed >= 2 * half;
    const size_t cur = peak_cur_.exchange(active, std::memory_order_relaxed);
    peak_prev_.store(stale ? std::max(active, freed_from) : cur, std::memory_order_relaxed);
    // Half windows without extent activity: none if there was some since the last rotation.
    const uint64_t halves = elapsed / half;
    const unsigned quiet = quiet_halves_.load(std::memory_order_relaxed);
    const unsigned next =
        busy_cur_.exchange(false, std::memory_order_relaxed) ? 0
        : quiet + halves < kHoldSlackQuietHalves            ? static_cast<unsigned>(quiet + halves)
                                                             : kHoldSlackQuietHalves;
    quiet_halves_.store(next, std::memory_order_relaxed);
    peak_epoch_ns_ = now_ns;
  }
  return held_pages_locked();
}

size_t Pac::held_pages_locked() const {
  const size_t active = nactive();
  const size_t peak = std::max(peak_prev_.load(std::memory_order_relaxed),
                               peak_cur_.load(std::memory_order_relaxed));
  const bool busy = busy_cur_.load(std::memory_order_relaxed) ||
                    quiet_halves_.load(std::memory_order_relaxed) < kHoldSlackQuietHalves;
  const size_t level = peak + hold_slack(peak, busy);
  return level > active ? level - active : 0;
}

// Ours (opt.decay_hold_peak). A block whose extent reaches the oversize threshold in an arena
// with timed decay (a request just below 8 MiB, whose usable size is 8 MiB: 5.3.0 sends it by
// its requested size to the thread's arena) is purged when freed, as 5.3.0 does -- and faulted
// in again by the next round that asks for it. It stays dirty instead when the hold covers it
// with what is dirty already; decay then treats it as any other dirty extent.
bool Pac::keeps_oversize(const Edata* e) const {
  const size_t threshold = oversize_threshold();
  if (threshold == 0 || e->size < threshold || !decay_hold_peak_) return false;
  if (decay_dirty_.decay.ms() <= 0) return false;  // 0: the immediate hold's own path; -1: kept
  return core_.ecache_dirty.npages() + e->npages() <= held_pages_locked();
}

size_t Pac::hold_estimate() const {
  if (!decay_hold_peak_ || hold_window_ms(decay_dirty_.decay.ms()) <= 0) return 0;
  return held_pages_locked();  // only atomics: fine without the mutex
}

uint64_t Pac::hold_ns_until_rotation_locked(uint64_t now_ns, int64_t ms) const {
  const uint64_t half = static_cast<uint64_t>(ms) * 500'000;
  const uint64_t elapsed = now_ns > peak_epoch_ns_ ? now_ns - peak_epoch_ns_ : 0;
  return elapsed < half ? half - elapsed : 0;
}

bool Pac::expand(Edata* e, size_t old_size, size_t new_size, bool zero) {
  if (core_.ehooks.merge_will_fail()) return false;
  size_t amount = new_size - old_size;
  // A neighbour sitting in the small extent cache is free memory, as it would be in the ecache.
  if (sec_.npages() != 0) {
    Edata* next = g_emap.lookup(reinterpret_cast<void*>(e->past_addr()));
    if (next != nullptr && sec_.remove(next, ind())) {
      extent::ecache_dalloc(core_, core_.ecache_dirty, next);
    }
  }
  PacSource src;
  Edata* trail = obtain(e, amount, kPage, zero, Reach::kGrow, &src);
  if (trail == nullptr) return false;
  if (!extent::merge_wrapper(core_, e, trail)) {
    extent::dalloc_wrapper(core_, trail);
    return false;
  }
  // Growth in place does not purge (opt.purge_on_grow acts on new extents only).
  account_obtained(src, amount);
  return true;
}

bool Pac::shrink(Edata* e, size_t old_size, size_t new_size) {
  if (core_.ehooks.split_will_fail()) return false;
  Edata* trail = extent::split_wrapper(core_, e, new_size, old_size - new_size);
  if (trail == nullptr) return false;
  note_active_shrunk((old_size - new_size) >> kLgPage);
  extent::ecache_dalloc(core_, core_.ecache_dirty, trail);
  return true;
}

unsigned Pac::alloc_batch(size_t size, Edata** out, unsigned k, Reach reach) {
  unsigned got = sec_.take_batch(size, out, k);
  if (got != 0) {
    note_active_grown((size >> kLgPage) * got);
    core_.counters.add_alloc(PacSource::kDirty, (size >> kLgPage) * got, got);
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
  note_active_shrunk(npages);
  if (!all_fit) {
    for (unsigned i = 0; i < n; i++) {
      extent::ecache_dalloc(core_, core_.ecache_dirty, es[i], keeps_oversize(es[i]));
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
  const uint64_t growths = g_pac_growths.load(std::memory_order_relaxed);
  if (sec_seen_growths_.load(std::memory_order_relaxed) != growths &&
      sec_seen_growths_.exchange(growths, std::memory_order_relaxed) != growths &&
      sec_.npages() != 0) {
    flush_sec(/*for_growth=*/true);
  }
  EdataList evicted;
  sec_.put_batch(es, n, &evicted);
  while (Edata* x = evicted.front()) {
    evicted.remove(x);
    extent::ecache_dalloc(core_, core_.ecache_dirty, x);
  }
}

void Pac::dalloc(Edata* e) { dalloc_batch(&e, 1); }

int64_t Pac::decay_ms_get(ExtentState which) const { return pipeline(which).decay.ms(); }

bool Pac::decay_ms_set(ExtentState which, int64_t ms, uint64_t now_ns) {
  if (!Decay::ms_valid(ms)) return false;
  DecayPipeline& p = pipeline(which);
  MutexGuard guard(p.mtx);
  // Restart the backlog: decay time changes are rare (configuration), and mapping the old
  // backlog onto a new window is not worth its complexity.
  p.decay.init(now_ns, ms);
  update_may_force_decay();
  if (which == ExtentState::kDirty) peak_epoch_ns_ = now_ns;  // the hold restarts with it
  bool advanced;
  maybe_decay_purge_locked(which, now_ns, Eagerness::kOnEpochAdvance, SIZE_MAX, &advanced);
  return true;
}

void Pac::decay_all(ExtentState which, bool fully) {
  if (which == ExtentState::kDirty) flush_sec();
  DecayPipeline& p = pipeline(which);
  MutexGuard guard(p.mtx);
  decay_to_limit(which, fully, 0, ecache_of(which).npages());
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
    const bool held = core_.ecache_dirty.npages() != 0;
    const uint64_t ns = held ? hold_ns_until_rotation_locked(now_ns, immediate_hold_ms_)
                             : UINT64_MAX;
    p.mtx.unlock();
    return ns;
  }
  if (p.decay.ms() <= 0) return UINT64_MAX;
  if (which == ExtentState::kDirty) {
    flush_sec();  // a background thread must see them
    // Another thread's flush may still be carrying pages from the Sec to the ecache (a stats
    // read, a growing arena): they are not in the ecache's count yet, which may look empty.
    // Look again shortly rather than sleep without a deadline: the flusher does not wake us.
    if (sec_transit_pages_.load(std::memory_order_acquire) != 0) return 0;
  }
  if (!p.mtx.try_lock()) return 0;
  const size_t current = ecache_of(which).npages();
  uint64_t ns = p.decay.ns_until_purge(current, npages_threshold);
  uint64_t epoch = p.decay.epoch_ns();
  // With the hold (dirty only), pages below it are not purgeable until the peak ages out: if
  // the pages above both the limit and the hold are too few, wake no earlier than the next
  // rotation, or the caller would wake every epoch to find nothing to do.
  uint64_t not_before = 0;
  if (which == ExtentState::kDirty && decay_hold_peak_) {
    const size_t hold = std::min(held_pages_locked(), hold_cap);
    const size_t floor = std::max(p.decay.npages_limit(), hold);
    const size_t want = npages_threshold < 1 ? 1 : npages_threshold;
    if (hold != 0 && (current <= floor || current - floor < want)) {
      not_before = hold_ns_until_rotation_locked(now_ns, p.decay.ms());
    }
  }
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
  Ecache& ec = ecache_of(which);
  *epoch_advanced = false;
  int64_t ms = p.decay.ms();
  if (ms <= 0) {
    if (ms != 0) return;
    size_t limit = 0;
    if (which == ExtentState::kDirty && immediate_hold()) {
      limit = std::min(hold_pages_locked(now_ns, immediate_hold_ms_), hold_cap);
    }
    const size_t current = ec.npages();
    if (current > limit) decay_to_limit(which, false, limit, current - limit);
    return;
  }
  size_t current = ec.npages();
  *epoch_advanced = p.decay.maybe_advance_epoch(now_ns, current);
  const size_t hold =
      which == ExtentState::kDirty ? std::min(hold_pages_locked(now_ns, ms), hold_cap) : 0;
  if (eagerness == Eagerness::kAlways ||
      (*epoch_advanced && eagerness == Eagerness::kOnEpochAdvance)) {
    size_t limit = std::max(p.decay.npages_limit(), hold);
    if (current > limit) decay_to_limit(which, false, limit, current - limit);
  }
}

// Called with the decay mutex held; drops it while purging (Decay::purging keeps purgers
// exclusive) so allocation threads never wait behind madvise.
void Pac::decay_to_limit(ExtentState which, bool fully, size_t npages_limit, size_t npages_max) {
  DecayPipeline& p = pipeline(which);
  if (p.decay.purging || npages_max == 0) return;
  p.decay.purging = true;
  p.mtx.unlock();
  EdataList stash;
  size_t nstashed = 0;
  Ecache& ec = ecache_of(which);
  while (nstashed < npages_max) {
    Edata* e = extent::ecache_evict(core_, ec, npages_limit, npages_max - nstashed);
    if (e == nullptr) break;
    stash.push_back(e);
    nstashed += e->npages();
  }
  if (nstashed != 0) decay_stashed(which, fully, &stash);
  p.mtx.lock();
  p.decay.purging = false;
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
    if (which == ExtentState::kDirty && try_muzzy &&
        extent::purge_lazy_wrapper(core_, e, 0, e->size)) {
      extent::ecache_dalloc(core_, core_.ecache_muzzy, e);
      continue;
    }
    extent::dalloc_wrapper(core_, e);
    nunmapped += npages;
  }
  bool dirty = which == ExtentState::kDirty;
  core_.counters.add_decay(dirty, PacDecayCounter::kNpurge, 1);
  core_.counters.add_decay(dirty, PacDecayCounter::kNmadvise, nmadvise);
  core_.counters.add_decay(dirty, PacDecayCounter::kPurged, npurged);
  core_.mapped.fetch_sub(nunmapped << kLgPage, std::memory_order_relaxed);
  return npurged;
}

void Pac::destroy_retained() {
  while (Edata* e = extent::ecache_evict(core_, core_.ecache_retained, 0)) {
    extent::destroy_wrapper(core_, e);
  }
}

bool Pac::set_retain_grow_limit(size_t limit, size_t* old_limit) {
  pszind_t ind = sz::psz2ind(limit + 1) - 1;
  if (ind >= sc::kNPSizes) return false;
  MutexGuard guard(core_.grow_mtx);
  if (old_limit != nullptr) *old_limit = sz::pind2sz(core_.exp_grow.limit);
  core_.exp_grow.limit = ind;
  return true;
}

size_t Pac::retain_grow_limit() {
  MutexGuard guard(core_.grow_mtx);
  return sz::pind2sz(core_.exp_grow.limit);
}

namespace {
MutexStats read_mutex(Mutex& m) {
  MutexGuard g(m);
  return m.stats();
}
void reset_mutex(Mutex& m) {
  MutexGuard g(m);
  m.reset_stats();
}
}  // namespace

void Pac::read_stats(PacStatsSnap* out) {
  flush_sec();  // per-size extent counts as the ecache would have them
  out->dirty_decay_ms = decay_ms_get(ExtentState::kDirty);
  out->muzzy_decay_ms = decay_ms_get(ExtentState::kMuzzy);
  out->nactive = nactive();
  out->ndirty = ndirty();
  out->nmuzzy = nmuzzy();
  out->nretained = nretained();
  out->mapped = mapped();
  out->abandoned_vm = core_.abandoned_vm.load(std::memory_order_relaxed);
  out->extent_avail = core_.edata_cache.available();
  core_.counters.read(out->counters);
  out->mutexes[kPacMtxExtentAvail] = core_.edata_cache.mutex_stats();
  out->mutexes[kPacMtxExtentsDirty] = read_mutex(core_.ecache_dirty.mtx);
  out->mutexes[kPacMtxExtentsMuzzy] = read_mutex(core_.ecache_muzzy.mtx);
  out->mutexes[kPacMtxExtentsRetained] = read_mutex(core_.ecache_retained.mtx);
  out->mutexes[kPacMtxDecayDirty] = read_mutex(decay_dirty_.mtx);
  out->mutexes[kPacMtxDecayMuzzy] = read_mutex(decay_muzzy_.mtx);
  for (pszind_t j = 0; j < sc::kNPSizes; j++) {
    PacExtentStats& e = out->extents[j];
    e.ndirty = core_.ecache_dirty.eset.nextents(j);
    e.nmuzzy = core_.ecache_muzzy.eset.nextents(j);
    e.nretained = core_.ecache_retained.eset.nextents(j);
    e.dirty_bytes = core_.ecache_dirty.eset.nbytes(j);
    e.muzzy_bytes = core_.ecache_muzzy.eset.nbytes(j);
    e.retained_bytes = core_.ecache_retained.eset.nbytes(j);
  }
}

void Pac::reset_mutex_stats() {
  core_.edata_cache.reset_mutex_stats();
  for (Mutex* m : {&core_.ecache_dirty.mtx, &core_.ecache_muzzy.mtx, &core_.ecache_retained.mtx,
                   &decay_dirty_.mtx, &decay_muzzy_.mtx}) {
    reset_mutex(*m);
  }
}

void Pac::prefork_grow() { core_.grow_mtx.prefork(); }
void Pac::prefork_decay() {
  decay_dirty_.mtx.prefork();
  decay_muzzy_.mtx.prefork();
}
void Pac::prefork_ecaches() {
  core_.ecache_dirty.mtx.prefork();
  core_.ecache_muzzy.mtx.prefork();
  core_.ecache_retained.mtx.prefork();
  core_.edata_cache.prefork();
  sec_.prefork();
}
void Pac::postfork_parent() {
  sec_.postfork_parent();
  core_.edata_cache.postfork_parent();
  core_.ecache_retained.mtx.postfork_parent();
  core_.ecache_muzzy.mtx.postfork_parent();
  core_.ecache_dirty.mtx.postfork_parent();
  core_.grow_mtx.postfork_parent();
  decay_muzzy_.mtx.postfork_parent();
  decay_dirty_.mtx.postfork_parent();
}
void Pac::postfork_child() {
  sec_.postfork_child();
  core_.edata_cache.postfork_child();
  core_.ecache_retained.mtx.postfork_child();
  core_.ecache_muzzy.mtx.postfork_child();
  core_.ecache_dirty.mtx.postfork_child();
  core_.grow_mtx.postfork_child();
  decay_muzzy_.mtx.postfork_child();
  decay_dirty_.mtx.postfork_child();
}

}  // namespace je
