// arena.h: an arena -- a self-contained heap of small bins, large extents and a page allocator.
//
// Purpose: serves small regions from per-class bins (slabs from the arena's Pac, or, with
// opt.borrow_dirty, from another automatic arena's cached pages, which become this arena's)
// and large allocations as one extent each (usable size + the cache-oblivious pad page, the
// returned pointer offset by a random cache line inside the first page). Frees and in-place
// resizes come back here. Decay (purging) of the arena's dirty/muzzy memory is driven by
// allocation ticks, by explicit `arena.<i>.decay/purge`, or by a background thread.
// State: all private. The page allocator is reached through the narrow forwarding methods
// below (what arenas, background threads and ctl need); statistics leave through read_stats.
// Layer: arena. Callers: the thread layer (tcache fill/flush, non-cached paths), api, ctl.
// Concurrency: one mutex per bin (kBin, leaf; a class has g_bin_geo[i].nshards bins: a thread
// allocates from its own shard and frees into the shard the slab belongs to, Edata::binshard);
// `large_mtx` (kArenaLarge) for the manual-arena list of large extents; the Pac's locks (see
// pac.h). Stats counters are relaxed atomics or are
// guarded by the bin lock; thread caches merge theirs through merge_*_tcache_stats. The Arena
// lives in its own Base and is never freed (except on `arena.<i>.destroy` of a manual arena,
// which also drops the Base).
// Invariants: nactive pages (Pac) == slabs + large extents (incl. pad) handed out; every slab
// is owned by exactly one bin of its arena.
// jemalloc mapping: arena_t (src/arena.c, src/large.c), bins, large list; stats.arenas.<i>.*
// (internal: arena_internal_add/sub; large.nflushes: arena_stats_large_flush_nrequests_add;
// mutexes.large: large_mtx).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "arena/bin.h"
#include "arena/bin_info.h"
#include "extent/pac.h"
#include "meta/base.h"
#include "meta/sc.h"

namespace je {

/// One small class's bins, merged over its shards (stats.arenas.<i>.bins.<j>.*).
struct BinStatsSnap {
  uint64_t nmalloc;
  uint64_t ndalloc;
  uint64_t nrequests;
  size_t curregs;
  uint64_t nfills;
  uint64_t nflushes;
  uint64_t nslabs;
  uint64_t nreslabs;
  size_t curslabs;
  size_t nonfull_slabs;
  MutexStats mutex;
  /// Adds `s` (a class's shards, or arenas into a merged view); the current-state gauges only
  /// when `current` (a destroyed arena's are history).
  void add(const BinStatsSnap& s, bool current);
};

/// One large class (stats.arenas.<i>.lextents.<j>.*, and the flushes behind large.nflushes).
struct LargeStatsSnap {
  uint64_t nmalloc;
  uint64_t ndalloc;
  uint64_t nrequests;
  uint64_t nflushes;
  size_t curlextents;
};

/// Everything an arena reports, as plain values (Arena::read_stats): its own counters, its
/// metadata allocator's, and its page allocator's.
struct ArenaStatsSnap {
  unsigned nthreads;  // application threads bound
  uint64_t create_ns;
  size_t internal;  // bytes of internal allocations served (see internal_add)
  Base::Stats base;
  MutexStats mutex_large;
  MutexStats mutex_base;
  PacStatsSnap pac;
  BinStatsSnap bins[sc::kNBins];
  LargeStatsSnap lextents[sc::kNLExtents];
};

struct LargeStats {
  std::atomic<uint64_t> nmalloc{0};
  std::atomic<uint64_t> ndalloc{0};
  std::atomic<uint64_t> nrequests{0};  // includes tcache hits, merged at flush
  std::atomic<uint64_t> nflushes{0};   // thread-cache stats merges (flushes) of the class
  std::atomic<size_t> curlextents{0};
};

class Arena {
 public:
  /// Builds an arena with index `ind` in a new Base. `hooks` nullptr = default extent hooks.
  /// `manual` arenas (arenas.create) track their large extents and full slabs for reset.
  /// `metadata_use_hooks` (experimental.arenas_create_ext): the arena's Base maps its blocks
  /// through `hooks` too.
  static Arena* create(unsigned ind, extent_hooks_t* hooks, bool manual,
                       bool metadata_use_hooks = false);

  unsigned ind() const { return ind_; }
  bool manual() const { return manual_; }

  /// arena.<i>.name (jemalloc 5.3.1): room for a name, its NUL included; longer names are cut.
  static constexpr size_t kNameLen = 32;
  /// The name, NUL-terminated (at most kNameLen bytes). Starts as "auto_<i>", "manual_<i>" or,
  /// for the huge arena, "auto_oversize", as 5.3.1 names them. Not synchronized: ctl reads and
  /// writes it under its mutex; nothing else touches it after create.
  const char* name() const { return name_; }
  void set_name(const char* s);

  // ---- small ------------------------------------------------------------------------------
  /// One region of small class `binind` (no tcache). nullptr on OOM.
  void* malloc_small(szind_t binind, bool zero);
  /// Fill up to `n` regions of `binind` into out[] for a thread cache; returns how many (0 only
  /// on OOM). Counts one fill and `nrequests` requests served since the last fill.
  unsigned fill_small(szind_t binind, void** out, unsigned n, uint64_t nrequests);
  /// Free one region of `slab` (which belongs to this arena).
  void dalloc_small(Edata* slab, szind_t binind, void* ptr);
  /// opt.safety_checks: whether the region at `ptr` (a region start of `slab`) is allocated
  /// as its slab's bitmap says, read under the bin lock.
  bool small_region_in_use(const Edata* slab, szind_t binind, const void* ptr);
  /// Free n regions of class `binind`, all from slabs of this arena and of one shard
  /// (thread-cache flush); the bin lock is taken once. With `merge_stats` (this is the flushing
  /// cache's own arena) it also counts the flush and the cache's `nrequests`, under that lock.
  void dalloc_small_batch(szind_t binind, void* const* ptrs, Edata* const* slabs, unsigned n,
                          bool merge_stats, uint64_t nrequests);
  /// A thread cache bound to this arena merges its counters of class `binind`: `nrequests`
  /// cache hits and, when `flush`, one flush (a flush whose regions all went to other arenas,
  /// or found nothing to flush; 5.3.0 counts those too).
  void merge_small_tcache_stats(szind_t binind, uint64_t nrequests, bool flush);

  // ---- large ------------------------------------------------------------------------------
  /// A large allocation of usable size `usize` (a large class) aligned to `alignment`. With
  /// `may_borrow` (automatic arena selection) and opt.borrow_dirty, when this arena would have
  /// to grow, another automatic arena with a fitting cached extent serves it instead (the
  /// block belongs to that arena and counts in its stats).
  void* malloc_large(size_t usize, size_t alignment, bool zero, bool may_borrow = false);
  /// Whether this arena may take part in opt.borrow_dirty: automatic, default extent hooks, no
  /// percpu_arena.
  bool may_share_pages() const;
  void dalloc_large(Edata* e);
  /// Resize a large allocation in place to a usable size in [usize_min, usize_max] (both
  /// large classes), preferring the largest that works. True on success.
  bool ralloc_large_no_move(Edata* e, size_t usize_min, size_t usize_max, bool zero);
  /// A thread cache bound to this arena merges its counters of large class `szind`: `n`
  /// requests it served, and one flush (5.3.0 counts a flush on every such merge, including
  /// the one made when the cache leaves the arena).
  void merge_large_tcache_stats(szind_t szind, uint64_t n);

  // ---- internal allocations ---------------------------------------------------------------
  /// Bytes (usable size) of internal allocations this arena served: thread-cache slot arrays
  /// and explicit caches (stats.arenas.<i>.internal; part of stats.metadata).
  void internal_add(size_t usize) { internal_.fetch_add(usize, std::memory_order_relaxed); }
  void internal_sub(size_t usize) { internal_.fetch_sub(usize, std::memory_order_relaxed); }
  size_t internal_bytes() const { return internal_.load(std::memory_order_relaxed); }

  // ---- decay ------------------------------------------------------------------------------
  /// Advance decay on both pipelines (and purge to the limits); `all` purges everything
  /// (arena.<i>.purge). Non-`all` calls never wait for another purger.
  void decay(bool is_background_thread, bool all);
  /// One allocation event for decay pacing: every ~1000 events (geometric), decay(false,false).
  void decay_tick();

  // ---- policy -----------------------------------------------------------------------------
  /// Ours (arena.<i>.bounded_coalesce): whether frees into the dirty cache merge only up to
  /// the coalescing bound. Switchable at any time; a switch applies to the frees after it
  /// (extents merged before stay as they are).
  bool bounded_coalesce() const { return pac_.bounded_coalesce(); }
  void set_bounded_coalesce(bool on) { pac_.set_bounded_coalesce(on); }

  // ---- lifecycle (manual arenas) ----------------------------------------------------------
  /// Free every allocation of the arena (caller guarantees no concurrent use and that thread
  /// caches holding its regions were flushed); the pages stay dirty, as in 5.3.0.
  void reset();
  /// reset() then give all memory, retained included, back to the OS and drop the Base.
  void destroy();

  // ---- page allocator, as far as other modules need it ----------------------------------
  size_t nactive() const { return pac_.nactive(); }
  size_t ndirty() const { return pac_.ndirty(); }
  size_t nmuzzy() const { return pac_.nmuzzy(); }
  /// One page-allocator event counter, live (stats.arenas.<i>.<name> as of now).
  uint64_t counter(PacCounter c) const { return pac_.counter(c); }
  /// A cached (dirty or muzzy) extent of `size` bytes from this arena's page allocator, never
  /// new memory (opt.borrow_dirty's lender side); nullptr if none fits.
  Edata* alloc_cached_extent(size_t size, size_t alignment, bool zero) {
    return pac_.alloc(size, alignment, zero, Pac::Reach::kCached);
  }
  /// The same for another arena's slab: the extent leaves this arena (Pac::lend; adopt_extent
  /// in the borrower makes it that arena's). nullptr if none fits.
  Edata* lend_cached_extent(size_t size, ExtentState* was) { return pac_.lend(size, was); }
  void adopt_extent(Edata* e, ExtentState was) { pac_.adopt(e, was); }
  /// Decay times (arena.<i>.{dirty,muzzy}_decay_ms); setting restarts that backlog and may purge.
  int64_t decay_ms(ExtentState which) const { return pac_.decay_ms_get(which); }
  bool set_decay_ms(ExtentState which, int64_t ms, uint64_t now_ns) {
    return pac_.decay_ms_set(which, ms, now_ns);
  }
  /// For background threads: see Pac::decay_ns_until_purge (the hold capped as in decay()).
  uint64_t decay_ns_until_purge(ExtentState which, uint64_t now_ns, uint64_t npages_threshold);
  /// opt.decay_hold_peak: dirty pages this arena's hold would keep now (Pac::hold_estimate).
  size_t hold_estimate() const { return pac_.hold_estimate(); }
  /// opt.oversize_hold: dirty decay is 0 and frees are held (the huge arena; Pac::immediate_hold).
  bool immediate_hold() const { return pac_.immediate_hold(); }
  size_t oversize_threshold() const { return pac_.oversize_threshold(); }
  void set_oversize_threshold(size_t v) { pac_.set_oversize_threshold(v); }
  extent_hooks_t* extent_hooks() const { return pac_.hooks(); }
  extent_hooks_t* exchange_extent_hooks(extent_hooks_t* h) { return pac_.exchange_hooks(h); }
  size_t retain_grow_limit() { return pac_.retain_grow_limit(); }
  bool set_retain_grow_limit(size_t limit, size_t* old_limit) {
    return pac_.set_retain_grow_limit(limit, old_limit);
  }

  // ---- threads ----------------------------------------------------------------------------
  /// Application threads bound to the arena (stats.arenas.<i>.nthreads, arena choice).
  unsigned nthreads() const { return nthreads_[0].load(std::memory_order_relaxed); }
  void thread_bound() { nthreads_[0].fetch_add(1, std::memory_order_relaxed); }
  void thread_unbound() { nthreads_[0].fetch_sub(1, std::memory_order_release); }
  /// Internal holds (arena_hold: an exiting thread still flushing into the arena).
  void hold() { nthreads_[1].fetch_add(1, std::memory_order_relaxed); }
  void unhold() { nthreads_[1].fetch_sub(1, std::memory_order_relaxed); }
  /// Whether a thread is bound or a hold is taken (destroy must wait for neither).
  bool in_use() const {
    return nthreads_[0].load(std::memory_order_acquire) != 0 ||
           nthreads_[1].load(std::memory_order_acquire) != 0;
  }
  /// fork child: only the forking thread exists; it is bound here or not.
  void reset_threads_after_fork(bool own) {
    nthreads_[0].store(own ? 1 : 0, std::memory_order_relaxed);
    nthreads_[1].store(0, std::memory_order_relaxed);
  }
  /// percpu_arena: the thread (its Tsd) that last checked its CPU while on this arena.
  const void* last_thread() const { return last_thd_.load(std::memory_order_relaxed); }
  void set_last_thread(const void* t) { last_thd_.store(t, std::memory_order_relaxed); }

  // ---- bins -------------------------------------------------------------------------------
  /// Shard `shard` of class `binind`'s bins.
  Bin& bin(szind_t binind, unsigned shard) { return bins_[g_bin_geo[binind].shard_base + shard]; }
  /// The calling thread's shard of class `binind`.
  Bin& thread_bin(szind_t binind) { return bin(binind, t_bin_shards.shard[binind]); }
  /// Every bin of every class (g_nbins_total of them).
  Bin* bins_begin() { return bins_; }
  Bin* bins_end() { return bins_ + g_nbins_total; }
  /// Ticket for a thread binding here: picks its shards (bin_shards_bind).
  unsigned next_binshard_ticket() { return binshard_next_.fetch_add(1, std::memory_order_relaxed); }

  // ---- statistics -------------------------------------------------------------------------
  Base* base() const { return base_; }
  uint64_t create_ns() const { return create_ns_; }
  /// Everything this arena reports (stats.arenas.<i>.*), each lock taken once and briefly.
  void read_stats(ArenaStatsSnap* out);
  /// Zero the counters of every mutex read_stats reports (stats.mutexes.reset).
  void reset_mutex_stats();

  /// fork(): lock everything in rank order, one stage at a time across all arenas (decay,
  /// grow, ecaches + edata cache, base, large list, bins); unlock or reinitialize after.
  static constexpr unsigned kPreforkStages = 6;
  void prefork(unsigned stage);
  void postfork_parent();
  void postfork_child();

 private:
  /// Sets the name an arena starts with (see name()).
  void set_default_name(bool huge);
  Edata* slab_alloc(szind_t binind, unsigned shard);
  /// Up to `k` new slabs of the class into out[] (fewer only on OOM), their pages taken from
  /// the page allocator in one batch (Pac::alloc_batch). Returns how many.
  unsigned slab_alloc_batch(szind_t binind, unsigned shard, Edata** out, unsigned k);
  /// Make `slab` (active pages from the page allocator) a slab of the class: emap, bitmap,
  /// shard. False (the pages returned) when the emap cannot take it.
  bool init_slab(Edata* slab, szind_t binind, unsigned shard);
  /// The most slabs fill_small gets in one trip with the bin lock dropped, and the most
  /// emptied slabs dalloc_small_batch returns to the page allocator in one batch.
  static constexpr unsigned kSlabBatch = 16;
  /// Pages just went to the dirty cache (free, emptied slab, shrink).
  void dirty_added();
  void randomize_offset(Edata* e, size_t alignment);

  Pac pac_;
  LargeStats lstats_[sc::kNLExtents];
  // [0] application threads bound; [1] internal holds. Destroy needs both at 0.
  std::atomic<unsigned> nthreads_[2] = {};
  std::atomic<const void*> last_thd_{nullptr};
  unsigned ind_ = 0;
  bool manual_ = false;
  Base* base_ = nullptr;
  Bin* bins_ = nullptr;  // g_nbins_total bins, class by class (see bin())
  std::atomic<unsigned> binshard_next_{0};
  uint64_t create_ns_ = 0;
  char name_[kNameLen] = {};
  Mutex large_mtx_{LockRank::kArenaLarge, "arena_large"};
  EdataList large_;  // manual arenas only
  std::atomic<size_t> internal_{0};
};

}  // namespace je
