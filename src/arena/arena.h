// arena.h: an arena -- a self-contained heap of small bins, large extents and a page allocator.
//
// Purpose: serves small regions from per-class bins (slabs from the arena's Pac) and large
// allocations as one extent each (usable size + the cache-oblivious pad page, the returned
// pointer offset by a random cache line inside the first page). Frees and in-place resizes
// come back here. Decay (purging) of the arena's dirty/muzzy memory is driven by allocation
// ticks, by explicit `arena.<i>.decay/purge`, or by a background thread.
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
  static Arena* create(unsigned ind, extent_hooks_t* hooks, bool manual);

  unsigned ind() const { return ind_; }
  bool manual() const { return manual_; }

  // ---- small ------------------------------------------------------------------------------
  /// One region of small class `binind` (no tcache). nullptr on OOM.
  void* malloc_small(szind_t binind, bool zero);
  /// Fill up to `n` regions of `binind` into out[] for a thread cache; returns how many (0 only
  /// on OOM). Counts one fill and `nrequests` requests served since the last fill.
  unsigned fill_small(szind_t binind, void** out, unsigned n, uint64_t nrequests);
  /// Free one region of `slab` (which belongs to this arena).
  void dalloc_small(Edata* slab, szind_t binind, void* ptr);
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
  bool bounded_coalesce() const { return pac.bounded_coalesce(); }
  void set_bounded_coalesce(bool on) { pac.set_bounded_coalesce(on); }

  // ---- lifecycle (manual arenas) ----------------------------------------------------------
  /// Free every allocation of the arena (caller guarantees no concurrent use and that thread
  /// caches holding its regions were flushed); the pages stay dirty, as in 5.3.0.
  void reset();
  /// reset() then give all memory, retained included, back to the OS and drop the Base.
  void destroy();

  // ---- state ------------------------------------------------------------------------------
  Pac pac;
  /// Shard `shard` of class `binind`'s bins.
  Bin& bin(szind_t binind, unsigned shard) {
    return bins_[g_bin_geo[binind].shard_base + shard];
  }
  /// The calling thread's shard of class `binind`.
  Bin& thread_bin(szind_t binind) { return bin(binind, t_bin_shards.shard[binind]); }
  /// Every bin of every class (g_nbins_total of them).
  Bin* bins_begin() { return bins_; }
  Bin* bins_end() { return bins_ + g_nbins_total; }
  /// Ticket for a thread binding here: picks its shards (bin_shards_bind).
  unsigned next_binshard_ticket() {
    return binshard_next_.fetch_add(1, std::memory_order_relaxed);
  }
  LargeStats lstats[sc::kNLExtents];
  // [0] application threads bound (stats.arenas.<i>.nthreads); [1] internal holds
  // (arena_hold: an exiting thread still flushing into the arena). Destroy needs both at 0.
  std::atomic<unsigned> nthreads[2] = {};
  /// percpu_arena: the thread (its Tsd) that last checked its CPU while on this arena.
  std::atomic<const void*> last_thd{nullptr};
  Base* base() const { return base_; }
  uint64_t create_ns() const { return create_ns_; }
  /// Counters of the large-list mutex (stats.arenas.<i>.mutexes.large), read under it; only
  /// manual arenas take it for allocations. reset_large_mutex_stats: stats.mutexes.reset.
  MutexStats large_mutex_stats();
  void reset_large_mutex_stats();

  /// fork(): lock everything in rank order, one stage at a time across all arenas (decay,
  /// grow, ecaches + edata cache, base, large list, bins); unlock or reinitialize after.
  static constexpr unsigned kPreforkStages = 6;
  void prefork(unsigned stage);
  void postfork_parent();
  void postfork_child();

 private:
  Edata* slab_alloc(szind_t binind, unsigned shard);
  /// Pages just went to the dirty cache (free, emptied slab, shrink).
  void dirty_added();
  void randomize_offset(Edata* e, size_t alignment);

  unsigned ind_ = 0;
  bool manual_ = false;
  Base* base_ = nullptr;
  Bin* bins_ = nullptr;  // g_nbins_total bins, class by class (see bin())
  std::atomic<unsigned> binshard_next_{0};
  uint64_t create_ns_ = 0;
  Mutex large_mtx_{LockRank::kArenaLarge, "arena_large"};
  EdataList large_;  // manual arenas only
  std::atomic<size_t> internal_{0};
};

}  // namespace je
