// lock_rank.h: the global lock order.
//
// Purpose: every je::Mutex carries one LockRank. A thread may acquire a mutex only when its rank
// is strictly greater than the rank of every mutex the thread already holds; debug builds check
// this on each lock (the witness in src/support/mutex.cc) and abort on a violation, so a lock
// order inversion shows up in any test that exercises the path, not only under a lucky race.
// Layer: support. Used by every module that owns a mutex (it picks its rank here) and by the
// fork handlers in src/api (prefork acquires the allocator's mutexes in increasing rank).
// Concurrency: constants only.
// Invariants: enumerators are listed outermost first and are dense from 0; two mutexes of the
// same rank are never held together by one thread (outside the fork protocol, which bypasses the
// check). Adding a rank means deciding what it nests inside, and writing that down below.
// jemalloc mapping: witness.h's WITNESS_RANK_* list (a subset: no HPA, SEC or hook ranks,
// which we do not implement; the dss mutex is a kLeaf).
#pragma once

#include <cstdint>

namespace je {

enum class LockRank : uint8_t {
  // Held across the whole of lazy initialization (malloc_init), which creates the first arena,
  // base and tcache machinery and so takes almost every other lock.
  kInit,
  // The mallctl tree's mutex: a ctl call may create arenas, read every mutex's stats, purge or
  // reset arenas, so it nests outside all allocator-internal locks.
  kCtl,
  // Dumps of the profiler's recent-allocation records (experimental.prof_recent.alloc_dump,
  // src/prof): held while the client's write callback runs, whose own allocations may be
  // sampled and may trigger an interval heap dump (kProfDump, inside).
  kProfRecentDump,
  // Heap profile dumps (src/prof): one at a time; a dump takes the registry below and the
  // context table's mutex, each briefly, and base memory.
  kProfDump,
  // The heap profiler's registry of thread data and its dump prefix (src/prof): held for short
  // list and buffer updates, which may take base memory.
  kProf,
  // The tcache registry (explicit tcaches created via tcache.create): creating one allocates
  // from an arena, and flushing takes bin locks.
  kTcaches,
  // Arena creation and the arenas array: creating an arena allocates its base, its bins and
  // its ecaches and may start background threads.
  kArenas,
  // The set of background threads as a whole (enable/disable, max_background_threads); held
  // while the per-thread state of each background thread is changed.
  kBackgroundThreadGlobal,
  // One background thread's state; the thread drives decay (and hence purging) of its arenas.
  kBackgroundThread,
  // One decay object (dirty or muzzy of an arena): held while deciding how much to purge and
  // while purging, which extracts extents from the ecaches (taking ecache locks briefly) and
  // then returns them to the OS with no ecache lock held.
  kDecay,
  // The arena's list of attached tcaches, walked under this lock to merge tcache stats or to
  // flush them at arena reset; flushing takes bin and large locks.
  kTcacheQl,
  // The grow mutex serializing address-space growth for retain: held while mapping a new
  // extent and recording the unused part into the retained ecache (ecache lock inside).
  kExtentGrow,
  // One ecache (dirty, muzzy or retained). Held while taking edata descriptors from the edata
  // cache and while registering/splitting/merging extents in the radix tree, whose new leaves
  // come from base memory.
  kEcache,
  // The edata descriptor cache; refilling it allocates a block from base.
  kEdataCache,
  // Radix-tree interior node creation; new nodes and leaves are allocated from base.
  kRtree,
  // A base allocator: obtains blocks straight from the extent hooks / OS, takes nothing inside
  // except hook-provided code that must not re-enter the allocator.
  kBase,
  // The arena's list of live large extents (for arena reset/destroy); held only for list
  // insertion and removal.
  kArenaLarge,
  // A bin (one size class of one arena or shard): slab handling under it never takes another
  // lock except stats, so it is a leaf in practice.
  kBin,
  // Stats accumulation mutexes (where counters are not atomic); innermost by construction.
  kStats,
  // Generic leaf: short critical sections that take no other allocator lock.
  kLeaf,
};

/// Number of ranks; ranks are dense in [0, kNumLockRanks).
inline constexpr unsigned kNumLockRanks = static_cast<unsigned>(LockRank::kLeaf) + 1;

/// Short lowercase name of a rank ("ecache", "bin"...), for witness messages; "?" if invalid.
constexpr const char* lock_rank_name(LockRank rank) {
  switch (rank) {
    case LockRank::kInit: return "init";
    case LockRank::kCtl: return "ctl";
    case LockRank::kProfRecentDump: return "prof_recent_dump";
    case LockRank::kProfDump: return "prof_dump";
    case LockRank::kProf: return "prof";
    case LockRank::kTcaches: return "tcaches";
    case LockRank::kArenas: return "arenas";
    case LockRank::kBackgroundThreadGlobal: return "background_thread_global";
    case LockRank::kBackgroundThread: return "background_thread";
    case LockRank::kDecay: return "decay";
    case LockRank::kTcacheQl: return "tcache_ql";
    case LockRank::kExtentGrow: return "extent_grow";
    case LockRank::kEcache: return "ecache";
    case LockRank::kEdataCache: return "edata_cache";
    case LockRank::kRtree: return "rtree";
    case LockRank::kBase: return "base";
    case LockRank::kArenaLarge: return "arena_large";
    case LockRank::kBin: return "bin";
    case LockRank::kStats: return "stats";
    case LockRank::kLeaf: return "leaf";
  }
  return "?";
}

}  // namespace je
