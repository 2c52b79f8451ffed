// extent.h: the extent algorithms -- recycle, split, merge, record (coalesce), evict, grow.
//
// Purpose: everything that moves extents between the arena and its ecaches, and between the ecaches
// and the OS, lives here. Three coalescing regimes meet in `PacCore::dalloc` (record):
//   * * muzzy and retained: full coalescing with free neighbours on insertion, no size bound;
//   * * dirty, small extents (< 16 KiB, i.e. emptied slabs): no coalescing on insertion (delayed);
//   * * dirty, large extents: eager coalescing, one merge at a time, but -- the project's fix --
//     never into an extent larger than the dirty fit search for `size` bytes can find again
//     (coalesce_bound: about `size << lg_extent_max_active_fit`, worked out from the eset's
//     bins), nor, when oversize extents are purged inline, into one at or above the oversize
//     threshold. A neighbour claimed but refused for size is released unchanged. Switchable
//     per Pac (opt.bounded_coalesce, arena.<i>.bounded_coalesce) to reproduce jemalloc 5.3's
//     unbounded behaviour.
// Under opt.prof it also keeps heap profiling's high-water mark of mapped extent pages (the
// prof_gdump trigger; see the end of this header).
// Eviction (decay/purge) coalesces the LRU extent with no reuse bound; with the bound on, only up
// to the amount the purge wants, and the merged extent never goes back into the dirty cache.
// State: the algorithms are the members of PacCore, which owns what they work on -- the three
// ecaches, the extent descriptors, the hooks, the retained growth series, the counters and the
// settings they read -- privately; its public members are the only way in.
// Layer: extent. Callers: pac, which owns one PacCore per arena (and unit tests, through
// PacTestAccess).
// Concurrency: see pac.h. Members that take an ecache lock it themselves; the caller holds
// nothing except where stated (grow_mtx for retained recycling is taken inside).
// jemalloc mapping: src/extent.c (extent_record, extent_try_coalesce_impl with the max_size bound
// of 3c14707b plus the neighbour release of 675ab079, extent_recycle, extent_grow_retained,
// ecache_evict, extent_dalloc_wrapper, extent_split_impl, extent_merge_impl).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "extent/ecache.h"
#include "extent/edata.h"
#include "extent/edata_cache.h"
#include "extent/ehooks.h"
#include "extent/pac_stats.h"
#include "meta/base.h"
#include "support/compiler.h"
#include "support/mutex.h"

namespace je {

struct PacStatsSnap;

/// The state the extent algorithms work on, and the algorithms: one per Pac (arena).
class PacCore {
 public:
  struct Config {
    unsigned ind = 0;
    Base* base = nullptr;
    extent_hooks_t* hooks = nullptr;  // nullptr = our defaults
    bool retain = true;               // opt.retain
    unsigned lg_max_fit = 6;          // opt.lg_extent_max_active_fit
    bool bounded_coalesce = true;     // Placement::bounded_coalesce (initial)
    bool best_fit = true;             // Placement::best_fit
    size_t oversize_threshold = size_t{8} << 20;
    /// The retained growth series' first size, at least 2 MiB (PacOptions::grow_start).
    size_t grow_start = 0;
  };
  void init(const Config& c);

  // ---- settings ----
  unsigned ind() const { return ind_; }
  bool retain() const { return retain_; }
  unsigned lg_max_fit() const { return lg_max_fit_; }
  /// The coalescing bound (opt.bounded_coalesce, arena.<i>.bounded_coalesce). Each free and
  /// each eviction reads it once, so a switch takes effect with the next one.
  bool bounded_coalesce() const { return bounded_coalesce_.load(std::memory_order_relaxed); }
  void set_bounded_coalesce(bool on) { bounded_coalesce_.store(on, std::memory_order_relaxed); }
  size_t oversize_threshold() const { return oversize_threshold_.load(std::memory_order_relaxed); }
  void set_oversize_threshold(size_t v) { oversize_threshold_.store(v, std::memory_order_relaxed); }
  /// Whether freeing may purge an oversize extent inline: neither decay time is -1 (5.3.0's
  /// extent_may_force_decay) and the Pac does not hold its immediate frees (opt.oversize_hold).
  /// Kept by Pac on every decay-time change.
  bool may_force_decay() const { return may_force_decay_.load(std::memory_order_relaxed); }
  void set_may_force_decay(bool v) { may_force_decay_.store(v, std::memory_order_relaxed); }

  // ---- the algorithms ----
  /// The largest extent eager dirty coalescing may build from a freed extent of `size` bytes:
  /// the largest extent a dirty fit search for `size` bytes can find (Eset::max_fit_extent), so
  /// the merged extent stays reusable by requests of the size that freed it; about
  /// size << lg_max_fit, saturating at sc::kLargeMaxClass. (record() also keeps it below the
  /// oversize threshold when oversize extents are purged inline.)
  static size_t coalesce_bound(size_t size, unsigned lg_max_fit);
  /// Take an extent of `size` bytes aligned to `alignment` from the dirty or muzzy ecache, or,
  /// with `expand`, the free extent right after `expand` (for in-place growth). nullptr if
  /// none. Dirty reuse honours the lg_max_fit bound unless `bounded` is false.
  Edata* alloc(ExtentState which, Edata* expand, size_t size, size_t alignment, bool zero,
               bool bounded = true);
  /// Take from the retained ecache, else grow new address space (retain) or map it (no
  /// retain). *fresh reports that the extent comes from a new mapping.
  Edata* alloc_grow(Edata* expand, size_t size, size_t alignment, bool zero, bool* fresh);
  /// Remove and return (active, owned, unsplit) the free dirty extent of at least `min_size`
  /// bytes an allocation of that size would pick, or nullptr (opt.purge_on_grow's victims).
  Edata* take_dirty(size_t min_size);
  /// Ours (opt.reuse_before_grow): remove and return (active, owned) the largest dirty extent
  /// smaller than `size` but at least a quarter of it, among the kHeadScan oldest, whose next
  /// page starts a retained extent of this arena's address space (read from the emap, a hint
  /// only: the caller's claim of that neighbour decides), for Pac to extend in place. nullptr
  /// if none.
  Edata* take_dirty_head(size_t size);
  static constexpr unsigned kHeadScan = 64;
  /// Record a free (owned, registered) extent into the ecache of `which`, coalescing per its
  /// regime. An extent of the oversize threshold or more is purged at once where the Pac
  /// purges them inline (may_force_decay) unless `keep_oversize` (opt.decay_hold_peak: the
  /// hold covers it).
  void dalloc(ExtentState which, Edata* e, bool keep_oversize = false);
  /// Remove and return the least recently inserted extent of `which` if that ecache holds more
  /// than `npages_min` pages. In the dirty ecache the victim first absorbs its free neighbours
  /// (the delayed coalescing; no reuse bound): with the coalescing bound on, until it reaches
  /// `npages_want` pages (never fewer than its own), and the merged extent is the victim; with
  /// it off (5.3.0), without limit, and a merged extent goes back to the LRU tail while the
  /// search starts over. Dirty/muzzy victims come back active; retained victims come back
  /// deregistered. nullptr if nothing to evict.
  Edata* evict(ExtentState which, size_t npages_min, size_t npages_want = SIZE_MAX);
  /// Hand an owned extent to the OS: unmap it if the hooks allow, else decommit or purge it
  /// and record it as retained.
  void dalloc_wrapper(Edata* e);
  /// Destroy a deregistered extent (arena destroy): hooks' destroy, descriptor recycled.
  void destroy_wrapper(Edata* e);
  /// MADV_FREE-style purge of part of an owned extent. True on success.
  bool purge_lazy_wrapper(Edata* e, size_t offset, size_t length);
  /// Split an owned extent into [0, size_a) (keeps `e`) and the returned trail. nullptr on
  /// failure (metadata OOM or hooks refusal), `e` unchanged.
  Edata* split_wrapper(Edata* e, size_t size_a, size_t size_b);
  /// Merge the owned, adjacent extent `b` into `a`. False on hooks refusal (both unchanged).
  bool merge_wrapper(Edata* a, Edata* b);
  /// Destroy everything retained (arena destroy); the address space goes back to the OS.
  void destroy_retained();
  /// `e`, found free in another PacCore's ecache of state `was` and taken from it, becomes
  /// this one's: its arena index changes under this core's ecache mutex of that state (see
  /// Pac::adopt for why that lock).
  void adopt(Edata* e, ExtentState was);

  // ---- counts, hooks, growth limit ----
  size_t npages(ExtentState which) const { return ecache(which).npages(); }
  /// Bytes of active + dirty + muzzy pages (part of stats.mapped).
  size_t mapped() const { return mapped_.load(std::memory_order_relaxed); }
  void add_mapped(size_t bytes) { mapped_.fetch_add(bytes, std::memory_order_relaxed); }
  void sub_mapped(size_t bytes) { mapped_.fetch_sub(bytes, std::memory_order_relaxed); }
  PacCounters& counters() { return counters_; }
  const PacCounters& counters() const { return counters_; }
  extent_hooks_t* hooks() const { return ehooks_.get(); }
  extent_hooks_t* exchange_hooks(extent_hooks_t* h) { return ehooks_.exchange(h); }
  bool default_hooks() const { return ehooks_.is_default(); }
  bool merge_will_fail() const { return ehooks_.merge_will_fail(); }
  bool split_will_fail() const { return ehooks_.split_will_fail(); }
  /// Cap the retained growth series (arena.<i>.retain_grow_limit); false if below one page.
  bool set_retain_grow_limit(size_t limit, size_t* old_limit);
  /// The growth series' cap as a size (arena.<i>.retain_grow_limit read).
  size_t retain_grow_limit();

  /// The extent part of stats.arenas.<i>.* (counts, counters, per-size extents, the ecache,
  /// growth and descriptor-cache mutexes) into *out.
  void read_stats(PacStatsSnap* out);
  void reset_mutex_stats();
  void prefork_grow() { grow_mtx_.prefork(); }
  void prefork_ecaches();
  void postfork_parent();
  void postfork_child();

 private:
  friend class PacTestAccess;
  /// Growth series of retained address space (jemalloc exp_grow): page-size classes starting
  /// at 2 MiB (or Config::grow_start), one class further per growth, capped by `limit`
  /// (arena.<i>.retain_grow_limit).
  struct ExpGrow {
    pszind_t next = 0;
    pszind_t limit = 0;
  };
  enum class CoalesceMode : uint8_t;

  Ecache& ecache(ExtentState which) {
    return which == ExtentState::kDirty   ? dirty_
           : which == ExtentState::kMuzzy ? muzzy_
                                          : retained_;
  }
  const Ecache& ecache(ExtentState which) const {
    return which == ExtentState::kDirty   ? dirty_
           : which == ExtentState::kMuzzy ? muzzy_
                                          : retained_;
  }
  uint64_t next_sn() { return sn_next_.fetch_add(1, std::memory_order_relaxed); }
  Edata* split_impl(Edata* e, size_t size_a, size_t size_b);
  bool merge_impl(Edata* a, Edata* b);
  bool commit_impl(Edata* e, size_t offset, size_t length);
  bool decommit_impl(Edata* e);
  bool coalesce_one(Ecache& ec, Edata* inner, Edata* outer, bool forward);
  Edata* try_coalesce(Ecache& ec, Edata* e, size_t max_size, CoalesceMode mode, bool* coalesced);
  void maximally_purge(Edata* e);
  void record(Ecache& ec, Edata* e, bool keep_oversize = false);
  bool split_interior(Edata** e, Edata** lead, Edata** trail, size_t size, size_t alignment);
  Edata* recycle_extract(Ecache& ec, Edata* expand, size_t size, size_t alignment, bool bounded);
  Edata* recycle(Ecache& ec, Edata* expand, size_t size, size_t alignment, bool zero, bool* commit,
                 bool bounded = true);
  Edata* grow_retained(size_t size, size_t alignment, bool zero, bool* commit);
  Edata* alloc_wrapper(void* new_addr, size_t size, size_t alignment, bool zero, bool* commit);

  Ecache dirty_;
  Ecache muzzy_;
  Ecache retained_;
  EdataCache edata_cache_;
  Ehooks ehooks_;
  Mutex grow_mtx_{LockRank::kExtentGrow, "extent_grow"};
  ExpGrow exp_grow_;  // grow_mtx_
  PacCounters counters_;
  std::atomic<size_t> mapped_{0};        // bytes: active + dirty + muzzy
  std::atomic<size_t> abandoned_vm_{0};  // bytes leaked after a failed split (OOM only)
  unsigned ind_ = 0;
  bool retain_ = true;
  unsigned lg_max_fit_ = 6;
  std::atomic<bool> bounded_coalesce_{true};
  std::atomic<bool> may_force_decay_{true};
  std::atomic<size_t> oversize_threshold_{0};
  std::atomic<uint64_t> sn_next_{0};
};

namespace extent {

// ---- heap profiling's high-water mark (prof_gdump) ---------------------------------------------
// The pages of extents in use or cached (active, dirty, muzzy) over all arenas: counted up when
// an extent leaves the retained cache or is freshly mapped (ecache_alloc_grow), down when one is
// unmapped or goes back to retained (dalloc_wrapper) -- 5.3.0's curpages. Each time the count
// passes its largest value so far while prof.gdump is on, the thread that grew it is marked;
// the api layer writes the dump at the end of that thread's allocation (extent code runs
// under allocator locks, a dump must not). Counted only under opt.prof (gdump_boot), on the
// extent-growth and unmapping slow paths; nothing on the malloc/free fast paths.

/// At boot, with opt.prof: start counting; `on` is opt.prof_gdump.
void gdump_boot(bool on);
/// prof.gdump written.
void gdump_switch(bool on);
/// Whether this thread raised the high-water mark while prof.gdump was on since the last call;
/// clears the mark.
bool gdump_take_pending();
/// The same test without clearing, inline: every allocation slow path under opt.prof asks it,
/// and an out-of-line call there cost about as much as the rest of the test.
inline bool gdump_pending();
/// The pages counted now and the high-water mark (tests).
void gdump_pages(size_t* cur, size_t* high);

namespace gdump_detail {
// Set by the thread whose extent growth raised the mark (extent.cc); never set without opt.prof.
extern constinit thread_local bool t_pending JE_TLS_IE;
}  // namespace gdump_detail

inline bool gdump_pending() { return gdump_detail::t_pending; }

}  // namespace extent
}  // namespace je
