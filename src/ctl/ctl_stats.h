// ctl_stats.h: the statistics snapshot behind `stats.*`, refreshed by writing `epoch`.
//
// Purpose: jemalloc reports statistics from a cached snapshot, not from live counters, so that
// all values read between two `epoch` writes are mutually consistent (a client reads
// stats.allocated and stats.active and may compare them). This module owns that snapshot: one
// ArenaSnap per arena index (allocated from the global base on first use, never freed), a merged
// view of all live arenas (MALLCTL_ARENAS_ALL, also reached through the deprecated index
// `arenas.narenas`), an accumulated view of destroyed arenas (MALLCTL_ARENAS_DESTROYED) and the
// global totals. refresh() rebuilds everything from the arenas, each read through
// Arena::read_stats (ctl reaches no arena or page-allocator state directly); the page
// allocator's event counters are one table (extent/pac_stats.h) from which the snapshot slots,
// the merge, the leaves and the printer's rows are generated.
// Definitions (jemalloc's meaning; doc/mallctl.md states them for users):
//   allocated = Σ small curregs × class size + Σ large curlextents × class size (bytes);
//   active    = pactive × page (pages handed out: slabs and large extents with their pad);
//   metadata  = base allocated + internal (the thread caches' slot arrays and explicit caches,
//               ordinary arena-0 allocations counted apart: 5.3.0 counts them in both);
//   resident  = base resident + (pactive + pdirty) × page (muzzy pages may already be gone);
//   mapped    = base mapped + the page allocator's mapped bytes (active + dirty + muzzy);
//   retained  = pretained × page (address space kept without physical pages).
// These give allocated <= active <= resident and active <= mapped after every refresh. The
// global base (radix tree, this snapshot) is counted with arena 0's base, where jemalloc keeps
// it too (its arena 0 base is b0).
// Layer: ctl (internal). Callers: the stats handlers (ctl_stats.cc), ctl.cc (epoch,
// arena.<i>.initialized, arena.<i>.destroy).
// Concurrency: everything here is guarded by the ctl mutex (LockRank::kCtl); refresh takes bin,
// ecache, decay, edata-cache, large-list, base and tcache-registry locks (one at a time, to read
// counters and mutex stats), all of higher rank.
// Invariants: a snapshot slot, once allocated, stays allocated (handlers may keep a pointer
// across an unlock); `initialized` of slot i says arena i existed at the last refresh.
// jemalloc mapping: ctl_arena_t / ctl_arena_stats_t / ctl_stats_t, ctl_refresh,
// ctl_arena_stats_amerge / _sdmerge, arena_stats_merge, the stats_* nodes of ctl.c.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "arena/arena.h"
#include "extent/pac_stats.h"
#include "meta/sc.h"
#include "support/mutex.h"

namespace je {

namespace ctl {

/// The two special arena indices (jemalloc.h's MALLCTL_ARENAS_ALL / _DESTROYED).
inline constexpr size_t kArenasAll = 4096;
inline constexpr size_t kArenasDestroyed = 4097;

/// Per-arena mutexes of `stats.arenas.<i>.mutexes.<name>`, in 5.3.0's MIB order. tcache_list
/// is the one global registry mutex of the thread caches (5.3.0 has one per arena): every arena
/// and the merged view report it once, the destroyed view not at all. The HPA ones read 0, as in
/// 5.3.0 with hpa:false.
enum ArenaMutex : unsigned {
  kMtxLarge,
  kMtxExtentAvail,
  kMtxExtentsDirty,
  kMtxExtentsMuzzy,
  kMtxExtentsRetained,
  kMtxDecayDirty,
  kMtxDecayMuzzy,
  kMtxBase,
  kMtxTcacheList,
  kMtxHpaShard,
  kMtxHpaShardGrow,
  kMtxHpaSec,
  kNArenaMutexes
};

/// Global mutexes of `stats.mutexes.<name>`, in 5.3.0's MIB order.
enum GlobalMutex : unsigned {
  kMtxBackgroundThread,
  kMtxMaxPerBgThd,
  kMtxCtl,
  kMtxProf,
  kMtxProfThdsData,
  kMtxProfDump,
  kMtxProfRecentAlloc,
  kMtxProfRecentDump,
  kMtxProfStats,
  kNGlobalMutexes
};

/// stats.arenas.<i>.bins.<j>.*, .lextents.<j>.*, .extents.<j>.*: as the arena reports them.
using BinSnap = BinStatsSnap;
using LextentSnap = LargeStatsSnap;
using ExtentSnap = PacExtentStats;

/// Everything under stats.arenas.<i>, with the C types 5.3.0 reports.
struct ArenaSnap {
  bool initialized;
  unsigned nthreads;
  uint64_t uptime_ns;
  const char* dss;
  ssize_t dirty_decay_ms;
  ssize_t muzzy_decay_ms;
  size_t pactive;
  size_t pdirty;
  size_t pmuzzy;
  size_t mapped;
  size_t retained;
  size_t extent_avail;
  size_t base;
  size_t internal;
  size_t metadata_thp;
  size_t tcache_bytes;
  size_t tcache_stashed_bytes;  // always 0: nothing is stashed (no use-after-free sanitizer)
  size_t resident;
  size_t abandoned_vm;
  size_t hpa_sec_bytes;  // always 0: no HPA/SEC (as 5.3.0 with hpa:false)
  size_t small_allocated;
  uint64_t small_nmalloc;
  uint64_t small_ndalloc;
  uint64_t small_nrequests;
  uint64_t small_nfills;
  uint64_t small_nflushes;
  size_t large_allocated;
  uint64_t large_nmalloc;
  uint64_t large_ndalloc;
  uint64_t large_nrequests;
  uint64_t large_nfills;  // = large_nmalloc, jemalloc's definition
  uint64_t large_nflushes;
  // The page allocator's event counters (extent/pac_stats.h's table): 5.3.0's decay counters
  // and ours, summed in the merged and destroyed views.
  uint64_t counters[kNPacCounters];
  MutexStats mutexes[kNArenaMutexes];
  BinSnap bins[sc::kNBins];
  LextentSnap lextents[sc::kNLExtents];
  ExtentSnap extents[sc::kNPSizes];
};

/// The global part of the snapshot (stats.{allocated,...}, stats.mutexes.*).
struct GlobalSnap {
  uint64_t epoch;
  size_t allocated;
  size_t active;
  size_t metadata;
  size_t metadata_thp;
  size_t resident;
  size_t mapped;
  size_t retained;
  // stats.background_thread.* (0 while background threads are off).
  size_t bg_num_threads;
  uint64_t bg_num_runs;
  uint64_t bg_run_interval;
  MutexStats mutexes[kNGlobalMutexes];
};

// All functions below: call with the ctl mutex held.

/// First use: allocates the merged and destroyed views and takes the first snapshot (epoch 1).
/// False on metadata OOM (the caller answers EAGAIN).
bool stats_boot();
/// Rebuilds the snapshot from the live arenas and bumps the epoch (an `epoch` write).
void stats_refresh();
/// The snapshot of stats.arenas.<i>: an arena index, kArenasAll (or the current
/// arenas.narenas, the deprecated alias), or kArenasDestroyed. nullptr when that view does not
/// exist.
const ArenaSnap* stats_arena(size_t i);
/// Whether stats.arenas.<i> resolves: the view exists and was initialized at the last refresh
/// (the merged view always; the destroyed one once an arena was destroyed).
bool stats_arena_valid(size_t i);
/// arena.<i>.initialized: as of the last refresh, with the same index mapping.
bool stats_arena_initialized(size_t i);
const GlobalSnap& stats_global();
/// arena.<i>.destroy, after the arena was reset and before it is destroyed: folds its counters
/// into the destroyed view and marks slot `ind` uninitialized.
void stats_arena_destroying(unsigned ind, Arena* a);
/// stats.mutexes.reset: zero the counters of every mutex reported under stats.*.
void stats_mutexes_reset();

}  // namespace ctl
}  // namespace je
