// tcache.h: thread caches -- per-thread stacks of free regions for small and cached large
// classes, filled from and flushed to arenas in batches.
//
// Purpose: most allocations and frees touch only the calling thread's cache. A miss fills half
// (adaptively: ncached_max >> lg_fill_div) of a small bin from the arena bin under one lock; a
// full bin flushes its oldest half to the owning arenas (a cache may hold regions of several
// arenas). Every 64 KiB of allocation (tcache_gc_incr_bytes) one bin is garbage-collected: 3/4
// of what stayed unused since the last visit is flushed and the fill size adapts.
// Explicit caches (tcache.create / MALLOCX_TCACHE(tc)) are the same structure, addressed by
// index. Statistics follow 5.3.0: each flush of a bin counts once (bins.<j>.nflushes,
// large.nflushes) in the cache's own arena with the requests served since the last flush,
// whichever arenas took the regions back; leaving an arena (thread.arena, destruction) merges
// the pending request counts there (and counts a flush per large class, as 5.3.0 does).
// Layout: a Tcache holds the small bins (the only ones the fast paths index) and a pointer to
// its TcacheCold -- the cached large classes' bins and the cold state -- kept out of line (see
// TcacheCold). The automatic cache sits in the thread's initial-exec TLS (t_tsd), which must fit
// glibc's static TLS surplus for the library to be dlopen()able (doc/design/threads.md).
// Layer: thread. Callers: tsd, api, ctl (tcache.*, thread.tcache.*).
// Concurrency: a Tcache is used by one thread at a time (explicit ones by contract). The
// explicit-cache registry and the list of live caches (for stats) take `tcaches_mtx` (rank
// kTcaches). 5.3.0 keeps one such list per arena (tcache_ql_mtx); this one global mutex is
// what stats.arenas.<i>.mutexes.tcache_list reports, for every arena.
// Capacity (ncached_max): small classes 2 x regions per slab (opt.lg_tcache_nslots_mul),
// clamped to [tcache_nslots_small_min, tcache_nslots_small_max] = [20, 200] and made even;
// large classes up to tcache_max (32 KiB: 41 bins) get tcache_nslots_large = 20. Ours: a bin
// of an automatic cache whose bursts outgrow that capacity grows, within opt.tcache_grow_bytes
// per cache (TcacheGrow); tcache_grow_bytes:0 keeps 5.3.0's fixed capacities.
// jemalloc mapping: tcache_t/tcache_slow_t (src/tcache.c); arenas.tcache_max, arenas.nhbins,
// tcache.{create,flush,destroy}, thread.tcache.flush, stats.arenas.<i>.tcache_bytes,
// .internal, .large.nflushes, .mutexes.tcache_list.
#pragma once

#include <cstddef>
#include <cstdint>

#include "arena/arena.h"
#include "meta/sc.h"
#include "meta/sz.h"
#include "support/mutex.h"
#include "support/ql.h"
#include "thread/cache_bin.h"

namespace je {

/// Largest tcache_max allowed (8 MiB), hence the most bins a cache can have.
inline constexpr size_t kTcacheMaxClassLimit = size_t{8} << 20;
inline constexpr unsigned kTcacheMaxBins = sz::size2index(kTcacheMaxClassLimit) + 1;
/// MALLOCX_TCACHE indices are 12 bits with two reserved values.
inline constexpr unsigned kTcachesMax = 4093;

/// Set once by tcache_boot from the options.
struct TcacheGeometry {
  unsigned nhbins = 0;  // bins in use: classes up to tcache_max
  size_t maxclass = 0;  // largest cached size
  uint16_t ncached_max[kTcacheMaxBins] = {};
  size_t stack_bytes = 0;  // bytes of pointer slots per cache
  /// Ours (opt.tcache_grow_bytes): the capacity a bin of an automatic cache may grow to, 0 where
  /// it may not grow (the option is 0, or not even two more items fit in the budget).
  uint16_t grow_max[kTcacheMaxBins] = {};
  size_t grow_bytes = 0;  // opt.tcache_grow_bytes
};
extern constinit TcacheGeometry g_tcache_geo;

struct Tcache;

/// Ours (opt.tcache_grow_bytes): the grown bins of an automatic cache. A bin that overflows
/// (flushes because full) after it ran dry since its last GC visit holds a burst larger than its
/// 5.3.0 capacity; instead of flushing it doubles that capacity, within the cache's byte budget,
/// moving to slots of its own here (`slots[i]`, grow_max[i] pointers, allocated on first
/// growth). GC shrinks a grown bin only after kGrowIdleVisits visits in a row found it unused
/// (5.3.0's per-visit rule would flush a burst's blocks between two bursts). Pages are never
/// faulted in while grown bins sit on freed blocks: when any arena took retained or new pages
/// (g_pac_growths moved), the cache's next GC step or overflow returns every grown bin to its
/// 5.3.0 capacity, and bins grow only in a cache that has seen no such growth since it last
/// looked. Metadata of the global base, allocated at tcache_init and kept with the cold part
/// (recycled with it).
struct TcacheGrow {
  void** slots[kTcacheMaxBins] = {};
  bool in_grown[kTcacheMaxBins] = {};  // the bin lives in slots[i]
  bool ran_dry[kTcacheMaxBins] = {};   // missed since its last GC visit that found items unused
  uint8_t idle_visits[kTcacheMaxBins] = {};
  size_t grown_bytes = 0;     // sum over bins of (capacity - 5.3.0 capacity) * size
  uint64_t seen_growths = 0;  // g_pac_growths when last looked at
};

/// Cold per-cache state.
struct TcacheSlow {
  Arena* arena = nullptr;  // where fills come from (and stats are merged)
  unsigned next_gc_bin = 0;
  uint8_t lg_fill_div[sc::kNBins] = {};
  bool bin_refilled[sc::kNBins] = {};
  uint8_t flush_delay_items[sc::kNBins] = {};  // opt.tcache_gc_delay_bytes, in items
  void** stack = nullptr;                      // backing memory of all bins' slots
  bool stack_owned = true;                     // false: carved from the explicit cache's own block
  Tcache* owner = nullptr;
  TcacheGrow* grow = nullptr;  // ours: automatic caches only (tcache_grow_bytes != 0)
  bool any_grown = false;      // ours: grow->grown_bytes != 0 (one test for the GC step)
  QlLink<TcacheSlow> link;     // list of live caches (stats.arenas.<i>.tcache_bytes)
};

/// The out-of-line part of a cache: the bins of the cached large classes and the cold state, so
/// an automatic cache keeps only its small bins in the thread's initial-exec TLS
/// (doc/design/threads.md). An explicit cache's sits in its block; an automatic cache's is
/// metadata (global base), recycled through a free list when threads exit, so the slot block
/// keeps 5.3.0's size and every arena statistic stays 5.3.0's.
struct TcacheCold {
  CacheBin large[kTcacheMaxBins - sc::kNBins];
  TcacheSlow slow;
  TcacheCold* next_free = nullptr;  // list of the automatic caches' spare ones (tcache.cc)
};

struct Tcache {
  /// The small bins: what the fast paths index (by class, below sc::kNBins).
  CacheBin bins[sc::kNBins];
  /// nullptr until tcache_init (the cache then reads as empty and full: every call is slow).
  TcacheCold* cold = nullptr;

  /// Bin of any cached class (< g_tcache_geo.nhbins) of a set-up cache.
  CacheBin& bin(szind_t ind) {
    return ind < sc::kNBins ? bins[ind] : cold->large[ind - sc::kNBins];
  }
  const CacheBin& bin(szind_t ind) const {
    return ind < sc::kNBins ? bins[ind] : cold->large[ind - sc::kNBins];
  }
  TcacheSlow& slow() { return cold->slow; }
};

/// Computes the geometry from opt.tcache_max and the nslots options. Called once at init.
void tcache_boot();

/// Sets up a cache bound to `arena`: its slot memory is `stack` (g_tcache_geo.stack_bytes) and
/// its cold part `cold`, both owned by the caller, or, when `stack` is null, both taken here
/// (slots internal, from arena 0; cold part from the free list or the global base) and given
/// back by tcache_destroy. False on OOM (the cache stays a zeroed, always-missing cache).
bool tcache_init(Tcache* t, Arena* arena, void** stack = nullptr, TcacheCold* cold = nullptr);
/// Flushes everything and frees the slot memory; the cache becomes zeroed again. Then, as
/// 5.3.0, the decay pass of arena_decay_after_cache_teardown (arena 0, and the cache's arena:
/// purged entirely when no thread is bound to it any more). No-op on a cache never set up.
void tcache_destroy(Tcache* t);
/// Re-associates the cache with another arena (thread.arena writes).
void tcache_set_arena(Tcache* t, Arena* arena);

/// Miss on small bin `binind`: fill from `arena` (the request's arena) and pop one. nullptr on
/// OOM.
void* tcache_alloc_small_hard(Tcache* t, Arena* arena, szind_t binind);
/// Ours: a large request missed bin `binind` (the arena serves it); marks the bin as run dry.
void tcache_large_miss(Tcache* t, szind_t binind);
/// Full bin: flush the oldest half (or, with opt.tcache_grow_bytes, grow the bin), then push
/// `ptr`.
void tcache_dalloc_small_hard(Tcache* t, szind_t binind, void* ptr);
void tcache_dalloc_large_hard(Tcache* t, szind_t binind, void* ptr);
/// Flush bin `binind` down to `rem` items (oldest first).
void tcache_flush_small(Tcache* t, szind_t binind, unsigned rem);
void tcache_flush_large(Tcache* t, szind_t binind, unsigned rem);
/// Ours (opt.tcache_grow_bytes; arena.<i>.purge): `t`'s grown bins (the calling thread's cache,
/// or nullptr) go back to 5.3.0's capacities at once, flushing what no longer fits; every other
/// automatic cache gives its grown bins back at its next GC step or growth attempt (a thread
/// blocked meanwhile keeps them: nothing may touch its bins but itself).
void tcache_release_grown(Tcache* t);
/// Flush every bin completely (thread.tcache.flush, tcache.flush, thread exit).
void tcache_flush_all(Tcache* t);
/// Incremental GC of one bin (the allocation-bytes event).
void tcache_gc_step(Tcache* t);
/// Bytes cached in all live caches whose arena is `arena` (stats).
size_t tcache_bytes(const Arena* arena);
/// Ours (opt.tcache_grow_bytes): adds to `items[i]`, for each cached class i, the blocks the
/// automatic caches bound to `arena` hold beyond 5.3.0's capacity of the bin -- blocks 5.3.0
/// would have flushed to their arena when the bin overflowed. The statistics count them as that
/// flush would (not allocated: doc/compat.md#tcache-grow), so handing them back when pages are
/// faulted in does not move stats.allocated. Read as tcache_bytes reads: other threads' bins,
/// without their owners' cooperation (a racing read is off by the blocks in flight).
void tcache_grown_items(const Arena* arena, size_t items[kTcacheMaxBins]);

// ---- explicit caches ------------------------------------------------------------------------
/// tcache.create: index of a new explicit cache bound to arena 0's peers per jemalloc (the
/// creating thread's arena). False on OOM or when all indices are taken.
bool tcaches_create(Arena* arena, unsigned* ind);
/// The explicit cache `ind`, or nullptr if not created / destroyed.
Tcache* tcaches_get(unsigned ind);
/// tcache.flush: flushes the cache (it stays usable) and runs the decay pass 5.3.0 runs there.
bool tcaches_flush(unsigned ind);
bool tcaches_destroy(unsigned ind);

/// Internal allocations (cache slot arrays, explicit caches): arena 0, page aligned, never
/// cached. Their usable size is counted in the serving arena's internal bytes
/// (stats.arenas.<i>.internal).
void* internal_alloc(size_t size);
void internal_free(void* ptr);

/// Counters of the registry mutex, read under it (reported as every arena's
/// stats.arenas.<i>.mutexes.tcache_list); tcaches_reset_mutex_stats zeroes them.
MutexStats tcaches_mutex_stats();
void tcaches_reset_mutex_stats();

void tcaches_prefork();
void tcaches_postfork_parent();
/// In a fork child only the forking thread exists: the list of live caches keeps its cache
/// (`own`, nullptr if it has none) and the explicit caches; the other threads' caches are gone
/// (their memory may be reused for new threads' TLS) and their blocks are leaked, as in 5.3.0.
void tcaches_postfork_child(Tcache* own);

}  // namespace je
