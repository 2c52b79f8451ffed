// pac.h: the page allocator of one arena -- dirty, muzzy and retained ecaches, decay, growth.
//
// Purpose: serves page-multiple extents to the arena (slabs and large allocations) from, in
// order: the dirty ecache (recently freed, resident), the muzzy ecache (lazily purged; skipped when
// muzzy decay is 0), the dirty ecache again without the lg_max_fit bound (ours,
// opt.reuse_before_grow: resident pages beat faulting in new ones), the retained ecache (purged
// address space) and finally new address space grown in a geometric series; growth then purges as
// many idle dirty pages (ours, opt.purge_on_grow). Frees go to the dirty ecache; decay moves pages
// on to muzzy or retained. This is where the project's coalescing bound lives (extent.cc, record
// path).
// State: the structures the extent algorithms work on (ecaches, descriptors, hooks, growth,
// counters) form a PacCore, which Pac keeps private and hands to extent.cc's functions; the decay
// pipelines and the hold are Pac's own. Statistics leave through read_stats only (pac_stats.h has
// the counter table).
// Layer: extent. Callers: arena (alloc/dalloc/expand/shrink, decay ticks, purge, read_stats).
// Concurrency: ecache mutexes (kEcache), `grow_mtx` (kExtentGrow, held around recycling from
// retained and growing), one decay mutex per decaying ecache (kDecay; held only to advance the
// epoch -- purging itself runs unlocked, serialized by Decay::purging), the edata cache
// (kEdataCache). Counters are relaxed atomics.
// Invariants: nactive == pages of extents handed out and not yet returned, adopted ones
// included and lent ones not (opt.borrow_dirty: a lent extent becomes the borrower's);
// `stats.mapped` counts active + dirty + muzzy bytes (not retained); every free extent is in
// exactly one ecache, of the Pac its arena index names.
// jemalloc mapping: pac_t (src/pac.c) with pa_shard's nactive; stats.arenas.<i>.{pactive, pdirty,
// pmuzzy, mapped, retained, dirty_*, muzzy_*, abandoned_vm, extent_avail} and
// stats.arenas.<i>.mutexes.{extents_*, decay_dirty, decay_muzzy, extent_avail}.*.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "extent/decay.h"
#include "extent/ecache.h"
#include "extent/edata_cache.h"
#include "extent/ehooks.h"
#include "extent/pac_stats.h"
#include "extent/sec.h"
#include "meta/base.h"
#include "support/mutex.h"

namespace je {

/// Construction-time settings (opt.* values for automatic arenas, or per-arena overrides).
struct PacOptions {
  unsigned ind = 0;
  Base* base = nullptr;
  extent_hooks_t* hooks = nullptr;  // nullptr = our defaults
  bool retain = true;               // opt.retain
  unsigned lg_max_fit = 6;          // opt.lg_extent_max_active_fit
  bool bounded_coalesce = true;     // opt.bounded_coalesce (ours): bound eager dirty merges
  bool reuse_before_grow = true;    // opt.reuse_before_grow (ours): unbounded dirty fit last
  bool best_fit = true;             // opt.extent_best_fit (ours): smallest class first
  bool purge_on_grow = false;       // opt.purge_on_grow (ours): growth purges idle dirty pages
  bool decay_hold_peak = true;      // opt.decay_hold_peak (ours): dirty decay spares the dip
  /// Ours (opt.oversize_hold, the huge arena): while dirty decay is 0, purge down to the hold,
  /// whose window is this many milliseconds, instead of to nothing, and keep freed oversize
  /// extents dirty (no inline purge). 0: off. Needs decay_hold_peak.
  int64_t immediate_hold_ms = 0;
  bool shares_hold_budget = false;  // counted in the process-wide hold budget (HoldBudget)
  /// Ours (with opt.oversize_hold, the huge arena): the first retained region it maps is at
  /// least this big (address space only; ExpGrow goes on from there). 0: 5.3.0's series.
  size_t grow_start = 0;
  size_t extent_cache_bytes = 0;    // opt.extent_cache_bytes (ours): the Sec's capacity, 0 = off
  size_t oversize_threshold = size_t{8} << 20;  // opt.oversize_threshold
  int64_t dirty_decay_ms = 10000;               // opt.dirty_decay_ms
  int64_t muzzy_decay_ms = 0;                   // opt.muzzy_decay_ms
  uint64_t now_ns = 0;                          // decay epoch origin
};

/// opt.decay_hold_peak's slack: a round carves its blocks from the pieces the last round freed
/// and leaves crumbs that none of its requests fits (the spare pad page when two freed 8 MiB
/// neighbours serve a 16 MiB block), resident at the peak as well. Held to the bare dip below
/// the peak, those pages pushed the dirty count over the hold, decay purged whole extents to
/// shed them, and the next round faulted in a block it had just given back. So the hold keeps
/// up to 1/64 of the peak more while the arena is busy -- it allocated or freed extents within
/// the last kHoldSlackQuietHalves half windows (two whole windows): an idle arena holds nothing
/// beyond its peak from then on. A round's big blocks may sit at their peak for longer than a
/// window with no extent activity at all (a query's hash tables, full, while the query works),
/// and its crumbs must outlast that; a bound by the dip seen in the window, or by activity in
/// the last window alone, purged them there.
inline constexpr unsigned kLgHoldSlack = 6;
inline constexpr unsigned kHoldSlackQuietHalves = 4;
constexpr size_t hold_slack(size_t peak, bool busy) { return busy ? peak >> kLgHoldSlack : 0; }

/// opt.decay_hold_peak's process-wide view (arenas_hold_cap in the arena layer divides it): the
/// active pages of the Pacs that share the budget (PacOptions::shares_hold_budget), summed in
/// granules of kGranulePages as each Pac's count crosses a granule boundary (so the sum is
/// within one granule per Pac of the truth, and the hot path pays an atomic only every
/// granule), and the highest sum over the current and the previous half window.
/// Lock-free; state is process-wide.
namespace hold_budget {
inline constexpr unsigned kLgGranulePages = 6;  // 64 pages (256 KiB with 4 KiB pages)
inline constexpr size_t kGranulePages = size_t{1} << kLgGranulePages;
/// A budget-sharing Pac's active count went from `before` to `after` pages.
void publish(size_t before, size_t after);
/// Published active pages now.
size_t active_pages();
/// The highest published sum over the current and previous half window of `ms` milliseconds
/// (ms > 0); rotates the halves when due.
size_t peak_pages(uint64_t now_ns, int64_t ms);
}  // namespace hold_budget

/// How many times any Pac of the process took pages from retained address space or from the
/// system (memory that faults in): a process-wide, relaxed counter. Readers (the thread caches'
/// grown bins, opt.tcache_grow_bytes) give back what they hold beyond 5.3.0's capacities when it
/// moved, so that freed blocks they keep are reused before more pages are faulted in.
extern constinit std::atomic<uint64_t> g_pac_growths;

/// Growth series of retained address space (jemalloc exp_grow): page-size classes starting at
/// 2 MiB (or PacOptions::grow_start), one class further per growth, capped by `limit`
/// (arena.<i>.retain_grow_limit).
struct ExpGrow {
  pszind_t next = 0;
  pszind_t limit = 0;
};

/// The state the extent algorithms (extent.cc) work on: the three ecaches, descriptors, hooks,
/// growth, counters, and the settings they read. Pac owns one privately and hands it to
/// extent.cc's functions; nothing else holds it (unit tests through PacTestAccess).
class PacCore {
 public:
  Ecache ecache_dirty;
  Ecache ecache_muzzy;
  Ecache ecache_retained;
  EdataCache edata_cache;
  Ehooks ehooks;
  Base* base = nullptr;
  Mutex grow_mtx{LockRank::kExtentGrow, "extent_grow"};
  ExpGrow exp_grow;  // grow_mtx
  PacCounters counters;
  std::atomic<size_t> mapped{0};        // bytes: active + dirty + muzzy
  std::atomic<size_t> abandoned_vm{0};  // bytes leaked after a failed split (OOM only)

  unsigned ind() const { return ind_; }
  bool retain() const { return retain_; }
  unsigned lg_max_fit() const { return lg_max_fit_; }
  bool bounded_coalesce() const { return bounded_coalesce_.load(std::memory_order_relaxed); }
  size_t oversize_threshold() const { return oversize_threshold_.load(std::memory_order_relaxed); }
  /// Whether freeing may purge an oversize extent inline: neither decay time is -1 (5.3.0's
  /// extent_may_force_decay) and the Pac does not hold its immediate frees (opt.oversize_hold).
  /// Kept by Pac on every decay-time change.
  bool may_force_decay() const { return may_force_decay_.load(std::memory_order_relaxed); }
  /// Serial number for a new mapping.
  uint64_t next_sn() { return sn_next_.fetch_add(1, std::memory_order_relaxed); }

 private:
  friend class Pac;
  unsigned ind_ = 0;
  bool retain_ = true;
  unsigned lg_max_fit_ = 6;
  std::atomic<bool> bounded_coalesce_{true};
  std::atomic<bool> may_force_decay_{true};
  std::atomic<size_t> oversize_threshold_{0};
  std::atomic<uint64_t> sn_next_{0};
};

class Pac {
 public:
  enum class Eagerness : uint8_t { kAlways, kOnEpochAdvance, kNever };

  bool init(const PacOptions& o);

  /// How far alloc() may go before giving up: the cached extents as they are; those and, after
  /// recording the small extent cache's extents in the dirty ecache (where they coalesce), once
  /// more -- every cached page this arena holds; all that, then growth.
  enum class Reach : uint8_t { kCached, kFlushed, kGrow };
  /// An active extent of `size` bytes (page multiple), aligned to `alignment`, zeroed if
  /// asked. nullptr on OOM -- or, short of Reach::kGrow, when no cached extent fits.
  /// The caller sets szind/slab via the emap.
  Edata* alloc(size_t size, size_t alignment, bool zero, Reach reach = Reach::kGrow);
  /// The growth half of alloc(): retained address space, else a new mapping; then, with
  /// opt.purge_on_grow, up to as many dirty pages purged as were grown (purge_for_growth).
  Edata* grow(size_t size, size_t alignment, bool zero);
  /// Grow `e` in place to new_size by absorbing the free extent that follows it, found by the
  /// same cascade as alloc() (dirty, muzzy while muzzy decay is on, retained, new mapping).
  bool expand(Edata* e, size_t old_size, size_t new_size, bool zero);
  /// Shrink `e` to new_size, recording the tail as dirty.
  bool shrink(Edata* e, size_t old_size, size_t new_size);
  /// Return an active extent (recorded dirty).
  void dalloc(Edata* e);
  /// For slabs: up to `k` extents of `size` bytes (page aligned, not zeroed) into out[], the
  /// small extent cache's under one lock, the rest one by one as alloc() finds them. Returns
  /// how many (fewer only on OOM, or, short of Reach::kGrow, when nothing cached fits). The
  /// caller sets szind/slab via the emap.
  unsigned alloc_batch(size_t size, Edata** out, unsigned k, Reach reach = Reach::kGrow);
  /// Ours (opt.borrow_dirty, slabs; the lender's side): a cached extent of `size` bytes, page
  /// aligned and not zeroed -- the small extent cache's or the dirty or muzzy ecache's, never
  /// new memory -- for another automatic arena's Pac to adopt(): it leaves this Pac's mapped
  /// count (it never enters its active one). *was: the ecache it came from (kDirty for the
  /// small extent cache, whose extents are active in the emap). nullptr if nothing fits.
  Edata* lend(size_t size, ExtentState* was);
  /// The borrower's side: `e`, lent by another Pac with default hooks, becomes this Pac's --
  /// its arena index, its pages in active and mapped. The index changes under this Pac's
  /// ecache of `was`: a coalescing check that found `e` free in the lender's ecache of that
  /// state, and compares indices while holding ours, sees the old index (no merge) or, after
  /// the change, `e` active (no merge), never the new index with the old state.
  void adopt(Edata* e, ExtentState was);
  /// dalloc() for each of es[0..n) (emptied slabs), the small extent cache under one lock.
  void dalloc_batch(Edata* const* es, unsigned n);

  /// Decay times (dirty or muzzy). Setting restarts the backlog and may purge immediately.
  bool decay_ms_set(ExtentState which, int64_t ms, uint64_t now_ns);
  int64_t decay_ms_get(ExtentState which) const;
  /// Purge everything in the dirty (or muzzy) ecache now (arena.<i>.purge; fully = skip muzzy).
  void decay_all(ExtentState which, bool fully);
  /// Advance decay and purge down to its limit. Returns false when another thread holds the
  /// decay lock (nothing done); *epoch_advanced reports an epoch change.
  /// `hold_cap` bounds opt.decay_hold_peak's hold for this call (the arena layer's share of the
  /// process-wide dip, arenas_hold_cap); SIZE_MAX leaves the hold as this Pac sees it.
  bool try_decay(ExtentState which, uint64_t now_ns, Eagerness eagerness, bool* epoch_advanced,
                 size_t hold_cap = SIZE_MAX);
  /// For background threads: nanoseconds from now_ns until at least npages_threshold pages of
  /// `which` (all of them, if fewer) are purgeable, assuming nothing changes meanwhile. 0 when
  /// due now, or when the decay lock is busy (ask again soon); UINT64_MAX when decay will never
  /// purge here on a schedule (no pages; decay_ms -1, or 0, which purges inline).
  uint64_t decay_ns_until_purge(ExtentState which, uint64_t now_ns, uint64_t npages_threshold,
                                size_t hold_cap = SIZE_MAX);
  /// opt.decay_hold_peak: the dirty pages the hold would keep now (peak - active), read without
  /// a lock (an estimate: the peaks may rotate meanwhile); 0 when the hold is off or dirty decay
  /// is not timed (decay_ms -1, or 0 without immediate_hold()).
  size_t hold_estimate() const;
  /// opt.oversize_hold: dirty decay is 0 and frees are held (PacOptions::immediate_hold_ms).
  bool immediate_hold() const {
    return immediate_hold_ms_ > 0 && decay_dirty_.decay.ms() == 0;
  }

  /// Destroy everything retained (arena destroy); the address space goes back to the OS.
  void destroy_retained();

  size_t nactive() const { return nactive_.load(std::memory_order_relaxed); }
  /// Dirty pages: the small extent cache's, those a flush is carrying from it, and the dirty
  /// ecache's, read in the order pages move between them, so none is missed (one on its way
  /// may be counted twice for that moment).
  size_t ndirty() const {
    const size_t cached = sec_.npages();
    const size_t moving = sec_transit_pages_.load(std::memory_order_acquire);
    return cached + moving + core_.ecache_dirty.npages();
  }
  size_t nmuzzy() const { return core_.ecache_muzzy.npages(); }
  size_t nretained() const { return core_.ecache_retained.npages(); }
  /// Bytes of active + dirty + muzzy pages (part of stats.mapped).
  size_t mapped() const { return core_.mapped.load(std::memory_order_relaxed); }
  uint64_t counter(PacCounter c) const { return core_.counters.get(c); }
  /// Everything this Pac reports (stats.arenas.<i>.*), taking each ecache and decay mutex once.
  void read_stats(PacStatsSnap* out);
  /// Zero the counters of every mutex read_stats reports (stats.mutexes.reset).
  void reset_mutex_stats();

  /// The coalescing bound (opt.bounded_coalesce, ours arena.<i>.bounded_coalesce). Each free
  /// and each eviction reads it once, so a switch takes effect with the next one.
  void set_bounded_coalesce(bool on) {
    core_.bounded_coalesce_.store(on, std::memory_order_relaxed);
  }
  bool bounded_coalesce() const { return core_.bounded_coalesce(); }
  unsigned lg_max_fit() const { return core_.lg_max_fit(); }
  bool reuse_before_grow() const { return reuse_before_grow_; }
  bool retain() const { return core_.retain(); }
  size_t oversize_threshold() const { return core_.oversize_threshold(); }
  void set_oversize_threshold(size_t v) {
    core_.oversize_threshold_.store(v, std::memory_order_relaxed);
  }
  /// Cap the retained growth series (arena.<i>.retain_grow_limit); false if below one page.
  bool set_retain_grow_limit(size_t limit, size_t* old_limit);
  /// The growth series' cap as a size (arena.<i>.retain_grow_limit read).
  size_t retain_grow_limit();
  /// The extent hooks in use (arena.<i>.extent_hooks); exchange installs new ones.
  extent_hooks_t* hooks() const { return core_.ehooks.get(); }
  extent_hooks_t* exchange_hooks(extent_hooks_t* h) { return core_.ehooks.exchange(h); }
  bool default_hooks() const { return core_.ehooks.is_default(); }
  unsigned ind() const { return core_.ind(); }

  void prefork_grow();
  void prefork_decay();
  void prefork_ecaches();
  void postfork_parent();
  void postfork_child();

 private:
  struct DecayPipeline {
    Mutex mtx{LockRank::kDecay, "decay"};
    Decay decay;
  };
  DecayPipeline& pipeline(ExtentState which) {
    return which == ExtentState::kDirty ? decay_dirty_ : decay_muzzy_;
  }
  const DecayPipeline& pipeline(ExtentState which) const {
    return which == ExtentState::kDirty ? decay_dirty_ : decay_muzzy_;
  }
  Ecache& ecache_of(ExtentState which) {
    return which == ExtentState::kDirty ? core_.ecache_dirty : core_.ecache_muzzy;
  }
  /// Keeps core_.may_force_decay in step with the decay times.
  void update_may_force_decay();
  bool may_have_muzzy() const { return decay_ms_get(ExtentState::kMuzzy) != 0; }
  void maybe_decay_purge_locked(ExtentState which, uint64_t now_ns, Eagerness eagerness,
                                size_t hold_cap, bool* epoch_advanced);
  void decay_to_limit(ExtentState which, bool fully, size_t npages_limit, size_t npages_max);
  size_t decay_stashed(ExtentState which, bool fully, EdataList* stash);
  void count_alloc(PacSource src, size_t size);
  /// The one cascade behind alloc(), grow() and expand(): dirty (bounded), muzzy (only while
  /// muzzy decay is on), dirty without the bound (new extents only, opt.reuse_before_grow),
  /// then, as far as `reach` allows, the Sec flushed and take_grown(). `expand` non-null: only
  /// the free extent right after it, of exactly `size` bytes, can serve. *src says where the
  /// extent came from; no accounting.
  Edata* obtain(Edata* expand, size_t size, size_t alignment, bool zero, Reach reach,
                PacSource* src);
  /// obtain()'s reuse steps (dirty, muzzy, dirty without the bound), before any growth.
  Edata* obtain_cached(Edata* expand, size_t size, size_t alignment, bool zero, PacSource* src);
  /// Record everything the small extent cache holds into the dirty ecache: before growth
  /// (`for_growth`) small first, so that the freed pieces merge into the larger extents the
  /// request may need; otherwise large first, keeping each extent whole (Sec::FlushOrder).
  void flush_sec(bool for_growth = false);
  /// Whether a free of `e` may stay in the small extent cache: the cache is on, the hooks are
  /// ours (custom hooks see every free as 5.3.0 makes it) and dirty decay is not immediate.
  bool sec_may_cache() const {
    return sec_.enabled() && core_.ehooks.is_default() && decay_dirty_.decay.ms() != 0;
  }
  /// The growth step of obtain(): retained address space, else a new mapping.
  Edata* take_grown(Edata* expand, size_t size, size_t alignment, bool zero, PacSource* src);
  /// `size` bytes from `src` became active: mapped (growth only), nactive/peak, counters.
  void account_obtained(PacSource src, size_t size);
  /// account_obtained() for a new extent, then, after growth, opt.purge_on_grow.
  void new_extent_obtained(PacSource src, size_t size);
  /// opt.purge_on_grow: after growing by `npages`, purge up to that many dirty pages, taking
  /// only extents of at least kGrowPurgeMinPages and keeping max(kGrowPurgeMinKeepPages,
  /// nactive / kGrowPurgeActiveDiv) dirty.
  void purge_for_growth(size_t npages);
  /// The hold's window for a dirty decay time of `ms`: ms itself when timed, the immediate
  /// hold's window at 0, none (0) at -1.
  int64_t hold_window_ms(int64_t ms) const {
    return ms > 0 ? ms : ms == 0 ? immediate_hold_ms_ : 0;
  }
  /// opt.decay_hold_peak: active pages grew by `npages`; raise the current peak.
  void note_active_grown(size_t npages);
  /// Active pages fell by `npages` (dalloc, shrink).
  void note_active_shrunk(size_t npages);
  /// opt.decay_hold_peak: the arena is busy this half window (hold_slack). Reads first so that
  /// the line is written once per half window, not on every extent.
  void note_busy() {
    if (!busy_cur_.load(std::memory_order_relaxed)) {
      busy_cur_.store(true, std::memory_order_relaxed);
    }
  }
  /// opt.decay_hold_peak, dirty decay mutex held, decay_ms > 0: the dirty pages decay must not
  /// purge now -- how far active pages are below their peak over the last half to whole
  /// window of decay_ms. Rotates the two half-window peaks when a half window has passed.
  size_t hold_pages_locked(uint64_t now_ns, int64_t ms);
  /// The same without rotating: peak + slack - active as the peaks stand (0 when active is
  /// higher).
  size_t held_pages_locked() const;
  /// opt.decay_hold_peak with timed decay: whether freed extent `e`, at or above the oversize
  /// threshold, stays dirty within the hold instead of being purged inline. Lock-free read.
  bool keeps_oversize(const Edata* e) const;
  /// Nanoseconds from now_ns until the hold's next rotation (0 when due); mutex held.
  uint64_t hold_ns_until_rotation_locked(uint64_t now_ns, int64_t ms) const;
  static constexpr size_t kGrowPurgeMinPages = 16;  // 64 KiB: one madvise per >= 16 pages
  static constexpr size_t kGrowPurgeMinKeepPages = (size_t{1} << 20) >> config::kLgPage;
  static constexpr size_t kGrowPurgeActiveDiv = 32;

  PacCore core_;
  Sec sec_;  // ours, opt.extent_cache_bytes (sec.h)
  /// g_pac_growths when a free last looked: a free that finds it moved flushes the Sec first.
  std::atomic<uint64_t> sec_seen_growths_{0};
  /// Pages flush_sec() calls have taken out of the Sec and not yet recorded in the dirty
  /// ecache (counted before they leave the Sec, uncounted once each is recorded). ndirty()
  /// includes them; a background thread asking how long it may sleep (decay_ns_until_purge)
  /// must not read that gap as "nothing to decay".
  std::atomic<size_t> sec_transit_pages_{0};
  DecayPipeline decay_dirty_;
  DecayPipeline decay_muzzy_;
  std::atomic<size_t> nactive_{0};
  bool reuse_before_grow_ = true;
  bool purge_on_grow_ = false;
  // opt.decay_hold_peak. peak_cur_ is raised by allocating threads (no lock); peak_prev_ and
  // peak_epoch_ns_ change only under the dirty decay mutex, which rotates them (peak_prev_ is
  // atomic for hold_estimate's lock-free read).
  bool decay_hold_peak_ = true;
  bool shares_hold_budget_ = false;
  int64_t immediate_hold_ms_ = 0;  // opt.oversize_hold; set at init only
  std::atomic<size_t> peak_cur_{0};
  std::atomic<size_t> peak_prev_{0};
  // Whether extents were allocated or freed in the current half window (the slack,
  // hold_slack), set by allocating and freeing threads; and how many half windows before it
  // passed without (counted at rotations, under the dirty decay mutex).
  std::atomic<bool> busy_cur_{false};
  std::atomic<unsigned> quiet_halves_{kHoldSlackQuietHalves};
  uint64_t peak_epoch_ns_ = 0;
  // The immediate hold: the highest active page count a free started from since the last
  // decay step (0: no free since), which that step takes (hold_pages_locked).
  std::atomic<size_t> freed_from_{0};

  friend class PacTestAccess;
};

}  // namespace je
