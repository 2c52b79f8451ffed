// pac.h: the page allocator of one arena -- dirty, muzzy and retained ecaches, decay, growth.
//
// Purpose: serves page-multiple extents to the arena (slabs and large allocations) from, in
// order: the dirty ecache (recently freed, resident), the muzzy ecache (lazily purged; skipped when
// muzzy decay is 0), the dirty ecache again without the lg_max_fit bound (ours,
// opt.reuse_before_grow: resident pages beat faulting in new ones), a dirty extent extended by
// the retained pages after it (ours, same option), the retained ecache (purged
// address space) and finally new address space grown in a geometric series; growth then purges as
// many idle dirty pages (ours, opt.purge_on_grow). Frees go to the dirty ecache; decay moves pages
// on to muzzy or retained. This is where the project's coalescing bound lives (extent.cc, record
// path). What decay keeps is the memory-return policy's (hold.h, doc/design/memory-return.md);
// where extents are carved, the Placement value's (placement.h): Pac applies both.
// State: the extent algorithms and what they work on (ecaches, descriptors, hooks, growth,
// counters) are a PacCore (extent.h), private to Pac; beside it Pac owns the small extent cache,
// the two decay pipelines, the Hold (active pages, their peak) and its two settings. Statistics
// leave through read_stats only (pac_stats.h has the counter table).
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
#include "extent/extent.h"
#include "extent/hold.h"
#include "extent/pac_stats.h"
#include "extent/placement.h"
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
  Placement placement;              // where extents are carved (placement.h)
  Hold::Config hold;                // what decay keeps (hold.h; immediate_ms: opt.oversize_hold)
  bool purge_on_grow = false;       // ReturnPolicy::purge_on_grow: growth purges idle dirty pages
  /// Ours (with opt.oversize_hold, the huge arena): the first retained region it maps is at
  /// least this big (address space only; ExpGrow goes on from there). 0: 5.3.0's series.
  size_t grow_start = 0;
  size_t oversize_threshold = size_t{8} << 20;  // opt.oversize_threshold
  int64_t dirty_decay_ms = 10000;               // opt.dirty_decay_ms
  int64_t muzzy_decay_ms = 0;                   // opt.muzzy_decay_ms
  uint64_t now_ns = 0;                          // decay epoch origin
};

/// How many times any Pac of the process took pages from retained address space or from the
/// system (memory that faults in): a process-wide, relaxed counter. Readers (the thread caches'
/// grown bins, opt.tcache_grow_bytes) give back what they hold beyond 5.3.0's capacities when it
/// moved, so that freed blocks they keep are reused before more pages are faulted in.
extern constinit std::atomic<uint64_t> g_pac_growths;

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
  void dalloc(Edata* e) { dalloc_batch(&e, 1); }
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
  int64_t decay_ms_get(ExtentState which) const { return pipeline(which).decay.ms(); }
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
  /// opt.decay_hold_peak: the dirty pages the hold would keep now (Hold::estimate), read without
  /// a lock; 0 when the hold is off or dirty decay is not timed (decay_ms -1, or 0 without
  /// immediate_hold()).
  size_t hold_estimate() const { return hold_.estimate(decay_ms_get(ExtentState::kDirty)); }
  /// opt.oversize_hold: dirty decay is 0 and frees are held (Hold::Config::immediate_ms).
  bool immediate_hold() const { return hold_.immediate(decay_ms_get(ExtentState::kDirty)); }

  /// Destroy everything retained (arena destroy); the address space goes back to the OS.
  void destroy_retained() { core_.destroy_retained(); }

  size_t nactive() const { return hold_.active(); }
  /// Dirty pages: the small extent cache's, those a flush is carrying from it, and the dirty
  /// ecache's, read in the order pages move between them, so none is missed (one on its way
  /// may be counted twice for that moment).
  size_t ndirty() const {
    const size_t cached = sec_.npages();
    const size_t moving = sec_.in_transit();
    return cached + moving + core_.npages(ExtentState::kDirty);
  }
  size_t nmuzzy() const { return core_.npages(ExtentState::kMuzzy); }
  size_t nretained() const { return core_.npages(ExtentState::kRetained); }
  /// Bytes of active + dirty + muzzy pages (part of stats.mapped).
  size_t mapped() const { return core_.mapped(); }
  uint64_t counter(PacCounter c) const { return core_.counters().get(c); }
  /// Everything this Pac reports (stats.arenas.<i>.*), taking each ecache and decay mutex once.
  void read_stats(PacStatsSnap* out);
  /// Zero the counters of every mutex read_stats reports (stats.mutexes.reset).
  void reset_mutex_stats();

  /// The coalescing bound (opt.bounded_coalesce, ours arena.<i>.bounded_coalesce). Each free
  /// and each eviction reads it once, so a switch takes effect with the next one.
  void set_bounded_coalesce(bool on) { core_.set_bounded_coalesce(on); }
  bool bounded_coalesce() const { return core_.bounded_coalesce(); }
  unsigned lg_max_fit() const { return core_.lg_max_fit(); }
  bool reuse_before_grow() const { return placement_.reuse_before_grow; }
  /// Where this Pac carves extents (its coalescing bound as at creation).
  const Placement& placement() const { return placement_; }
  bool retain() const { return core_.retain(); }
  size_t oversize_threshold() const { return core_.oversize_threshold(); }
  void set_oversize_threshold(size_t v) { core_.set_oversize_threshold(v); }
  /// Cap the retained growth series (arena.<i>.retain_grow_limit); false if below one page.
  bool set_retain_grow_limit(size_t limit, size_t* old_limit) {
    return core_.set_retain_grow_limit(limit, old_limit);
  }
  /// The growth series' cap as a size (arena.<i>.retain_grow_limit read).
  size_t retain_grow_limit() { return core_.retain_grow_limit(); }
  /// The extent hooks in use (arena.<i>.extent_hooks); exchange installs new ones.
  extent_hooks_t* hooks() const { return core_.hooks(); }
  extent_hooks_t* exchange_hooks(extent_hooks_t* h) { return core_.exchange_hooks(h); }
  bool default_hooks() const { return core_.default_hooks(); }
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
  /// Keeps core_.may_force_decay in step with the decay times.
  void update_may_force_decay();
  bool may_have_muzzy() const { return decay_ms_get(ExtentState::kMuzzy) != 0; }
  void maybe_decay_purge_locked(ExtentState which, uint64_t now_ns, Eagerness eagerness,
                                size_t hold_cap, bool* epoch_advanced);
  /// Purges down to `npages_limit` pages, at most `npages_max` of them (decay mutex held).
  void decay_to_limit(ExtentState which, bool fully, size_t npages_limit, size_t npages_max);
  /// Takes extents with `take(pages still wanted)` until `npages` are stashed or it returns
  /// nullptr, and purges them (decay_stashed). The decay mutex of `which` is held on entry and
  /// exit and dropped meanwhile, so allocating threads never wait behind madvise:
  /// Decay::purging keeps purgers exclusive (with one under way, nothing is done).
  template <class Take>
  void purge_locked(ExtentState which, bool fully, size_t npages, Take take);
  size_t decay_stashed(ExtentState which, bool fully, EdataList* stash);
  void count_alloc(PacSource src, size_t size) {
    core_.counters().add_alloc(src, size >> config::kLgPage);
  }
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
    return sec_.enabled() && core_.default_hooks() && decay_dirty_.decay.ms() != 0;
  }
  /// Ours (opt.reuse_before_grow), the last step before growth for a request of at least
  /// kHeadMinPages pages: a dirty extent too small for it, extended in place by the retained
  /// address space after it (PacCore::take_dirty_head). Only the extension faults in: where a
  /// purge left a dirty piece in front of purged pages, a request bigger than every dirty
  /// extent takes the resident piece instead of faulting in all of its size elsewhere while
  /// the piece sits unused. Accounted and purged for as growth of the extension's size, with
  /// the piece counted as dirty reuse. nullptr if nothing fits (the piece goes back).
  Edata* extend_dirty_head(size_t size, size_t alignment, bool zero);
  static constexpr size_t kHeadMinPages = 64;  // 256 KiB with 4 KiB pages
  /// The growth step of obtain(): retained address space, else a new mapping.
  Edata* take_grown(Edata* expand, size_t size, size_t alignment, bool zero, PacSource* src);
  /// `size` bytes from `src` became active: mapped (growth only), nactive/peak, counters.
  void account_obtained(PacSource src, size_t size);
  /// account_obtained() for a new extent, then, after growth, opt.purge_on_grow.
  void new_extent_obtained(PacSource src, size_t size);
  /// opt.purge_on_grow, and the immediate hold: after growing by `npages`, purge the dirty
  /// pages growth_purge_pages (hold.h) names.
  void purge_for_growth(size_t npages);
  /// opt.decay_hold_peak with timed decay: whether freed extent `e`, at or above the oversize
  /// threshold, stays dirty within the hold instead of being purged inline, as 5.3.0 does (and
  /// the next round faults it in again). Lock-free read.
  bool keeps_oversize(const Edata* e) const {
    const size_t threshold = oversize_threshold();
    return threshold != 0 && e->size >= threshold &&
           hold_.keeps_oversize(e->npages(), core_.npages(ExtentState::kDirty),
                                decay_ms_get(ExtentState::kDirty));
  }

  PacCore core_;
  Sec sec_;  // ours, opt.extent_cache_bytes (sec.h)
  DecayPipeline decay_dirty_;
  DecayPipeline decay_muzzy_;
  Hold hold_;  // the active count, its peak and what decay keeps (hold.h)
  Placement placement_;
  bool purge_on_grow_ = false;

  friend class PacTestAccess;
};

}  // namespace je
