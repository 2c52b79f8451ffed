// pac_stats.h: the page allocator's statistics -- one table of event counters, and the plain
// snapshot that Pac::read_stats fills.
//
// Purpose: every event counter of a Pac is one row of JE_PAC_COUNTERS_530 / _OURS below. The row
// gives the counter its live slot (PacCounters, relaxed atomics), its snapshot slot (PacStatsSnap),
// its merge into the merged and destroyed views (summed), its mallctl leaf
// (stats.arenas.<i>.<name>, uint64_t) and, for our own counters, its row in malloc_stats_print --
// ctl generates those from the same rows. Adding a counter is one row plus its increment. 5.3.0's
// decay counters come first and print in 5.3.0's decay table; ours follow, in leaf order after
// 5.3.0's names (their MIBs are documented in doc/mallctl.md).
// Gauges (pages per state, mapped bytes) are not counters: they are read directly into the
// snapshot.
// Layer: extent. Callers: pac (increments, read_stats), extent.cc (increments), arena (read_stats),
// ctl (leaves, merge, printer rows).
// Concurrency: counters are relaxed atomics; a snapshot is a plain copy, consistent per counter,
// not across counters.
// Invariants: the three decay counters of the dirty pipeline are followed by the muzzy pipeline's
// in the same order, and the per-source allocation counters follow PacSource's order
// (static_asserts below), so the increments can index them.
// jemalloc mapping: pac_stats_t / pac_decay_stats_t (decay_dirty, decay_muzzy), and
// stats.arenas.<i>.{dirty,muzzy}_{npurge,nmadvise,purged}.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "meta/sc.h"
#include "support/mutex.h"

namespace je {

// X(name, meaning): uint64_t event counters. 5.3.0's first, in its leaf order; then ours.
#define JE_PAC_COUNTERS_530(X)                           \
  X(dirty_npurge, "dirty purge runs")                    \
  X(dirty_nmadvise, "madvise calls purging dirty pages") \
  X(dirty_purged, "dirty pages purged")                  \
  X(muzzy_npurge, "muzzy purge runs")                    \
  X(muzzy_nmadvise, "madvise calls purging muzzy pages") \
  X(muzzy_purged, "muzzy pages purged")
#define JE_PAC_COUNTERS_OURS(X)                                                      \
  X(dirty_merges, "eager merges of a freed extent with a free dirty neighbour")      \
  X(dirty_merges_refused, "such merges refused by the coalescing bound")             \
  X(evict_merges, "delayed merges done when dirty extents were evicted for purging") \
  X(dirty_allocs, "extents served from the dirty cache")                             \
  X(muzzy_allocs, "extents served from the muzzy cache")                             \
  X(retained_allocs, "extents served from retained address space")                   \
  X(fresh_allocs, "extents served from new mappings")                                \
  X(dirty_alloc_pages, "pages served from the dirty cache")                          \
  X(muzzy_alloc_pages, "pages served from the muzzy cache")                          \
  X(retained_alloc_pages, "pages served from retained address space")                \
  X(fresh_alloc_pages, "pages served from new mappings")                             \
  X(oversize_purged, "pages purged when freed: extents at or above oversize_threshold")
#define JE_PAC_COUNTERS(X) JE_PAC_COUNTERS_530(X) JE_PAC_COUNTERS_OURS(X)

/// One enumerator per row, named as its leaf.
enum class PacCounter : unsigned {
#define JE_PAC_COUNTER_ENUM(name, meaning) name,
  JE_PAC_COUNTERS(JE_PAC_COUNTER_ENUM)
#undef JE_PAC_COUNTER_ENUM
};
inline constexpr unsigned kNPacCounters = 0
#define JE_PAC_COUNTER_ONE(name, meaning) +1
    JE_PAC_COUNTERS(JE_PAC_COUNTER_ONE);
#undef JE_PAC_COUNTER_ONE

/// Where an allocation's pages came from; the last two cost a page fault per touched page.
enum class PacSource : uint8_t { kDirty = 0, kMuzzy = 1, kRetained = 2, kFresh = 3 };

/// The counters of one decay pipeline, relative to its first (npurge).
enum class PacDecayCounter : unsigned { kNpurge = 0, kNmadvise = 1, kPurged = 2 };

constexpr unsigned pac_counter_index(PacCounter c) { return static_cast<unsigned>(c); }
static_assert(pac_counter_index(PacCounter::muzzy_npurge) ==
              pac_counter_index(PacCounter::dirty_npurge) + 3);
static_assert(pac_counter_index(PacCounter::dirty_purged) ==
              pac_counter_index(PacCounter::dirty_npurge) + 2);
static_assert(pac_counter_index(PacCounter::fresh_allocs) ==
              pac_counter_index(PacCounter::dirty_allocs) + 3);
static_assert(pac_counter_index(PacCounter::fresh_alloc_pages) ==
              pac_counter_index(PacCounter::dirty_alloc_pages) + 3);

/// The live counters of one Pac.
class PacCounters {
 public:
  void add(PacCounter c, uint64_t n = 1) {
    v_[pac_counter_index(c)].fetch_add(n, std::memory_order_relaxed);
  }
  /// A decay pipeline's counter: `dirty` picks the dirty pipeline, else the muzzy one.
  void add_decay(bool dirty, PacDecayCounter k, uint64_t n) {
    unsigned first = pac_counter_index(dirty ? PacCounter::dirty_npurge : PacCounter::muzzy_npurge);
    v_[first + static_cast<unsigned>(k)].fetch_add(n, std::memory_order_relaxed);
  }
  /// One allocation of `npages` pages served from `src`.
  void add_alloc(PacSource src, uint64_t npages, uint64_t count = 1) {
    unsigned s = static_cast<unsigned>(src);
    v_[pac_counter_index(PacCounter::dirty_allocs) + s].fetch_add(count,
                                                                  std::memory_order_relaxed);
    v_[pac_counter_index(PacCounter::dirty_alloc_pages) + s].fetch_add(npages,
                                                                       std::memory_order_relaxed);
  }
  uint64_t get(PacCounter c) const {
    return v_[pac_counter_index(c)].load(std::memory_order_relaxed);
  }
  void read(uint64_t out[kNPacCounters]) const {
    for (unsigned i = 0; i < kNPacCounters; i++) out[i] = v_[i].load(std::memory_order_relaxed);
  }

 private:
  std::atomic<uint64_t> v_[kNPacCounters] = {};
};

/// Free extents of one page-size class (stats.arenas.<i>.extents.<j>.*).
struct PacExtentStats {
  size_t ndirty;
  size_t nmuzzy;
  size_t nretained;
  size_t dirty_bytes;
  size_t muzzy_bytes;
  size_t retained_bytes;
};

/// The page allocator's mutexes, in the order of 5.3.0's stats.arenas.<i>.mutexes names.
enum PacMutex : unsigned {
  kPacMtxExtentAvail,
  kPacMtxExtentsDirty,
  kPacMtxExtentsMuzzy,
  kPacMtxExtentsRetained,
  kPacMtxDecayDirty,
  kPacMtxDecayMuzzy,
  kNPacMutexes
};

/// Everything a Pac reports, as plain values (Pac::read_stats).
struct PacStatsSnap {
  int64_t dirty_decay_ms;
  int64_t muzzy_decay_ms;
  size_t nactive;       // pages handed out
  size_t ndirty;        // pages in the dirty cache
  size_t nmuzzy;        // pages in the muzzy cache
  size_t nretained;     // pages of retained address space
  size_t mapped;        // bytes: active + dirty + muzzy
  size_t abandoned_vm;  // bytes leaked after a failed split (OOM only)
  size_t extent_avail;  // spare extent descriptors
  uint64_t counters[kNPacCounters];
  MutexStats mutexes[kNPacMutexes];
  PacExtentStats extents[sc::kNPSizes];
};

}  // namespace je
