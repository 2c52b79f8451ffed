// tsd.h: thread-specific data -- the per-thread state every allocation path starts from.
//
// Purpose: holds the thread's automatic cache, its allocation counters (thread.allocated /
// deallocated, also handed out by pointer through thread.allocatedp), the next thread-event
// thresholds (cache GC, thread.peak sampling, stats_interval), the thread.peak tracker, its
// bound arena and its life-cycle state. It is one constinit, initial-exec thread_local:
// zero-initialized, which the fast paths read as "empty cache, event due now", so a new
// thread's first call falls to the slow path and is set up there.
// Life cycle: uninitialized -> nominal (cache on) / nominal_slow (cache off) -> purgatory
// (entered at the start of the thread-exit destructor, which then unbinds the arena and tears
// the cache down -- the last thread of an arena purges it, see arena_decay_after_cache_teardown;
// later calls, e.g. from other TLS destructors, still work, without a cache, on arena 0).
// Layer: thread. Callers: api (fast and slow paths), ctl (thread.* names).
// Concurrency: thread-local; the counters are plain stores that other threads may read
// through thread.allocatedp (64-bit aligned stores are atomic on the supported platforms).
// jemalloc mapping: tsd_t (src/tsd.c), thread_event (src/thread_event.c), peak_event
// (src/peak_event.c: thread.peak.read / thread.peak.reset).
#pragma once

#include <cstdint>

#include "arena/arena.h"
#include "support/compiler.h"
#include "thread/tcache.h"

namespace je {

enum class TsdState : uint8_t { kUninitialized = 0, kNominal, kNominalSlow, kPurgatory };

struct Tsd {
  // Hot: the fast paths read these and the automatic cache's bins.
  uint64_t allocated;
  uint64_t allocated_next_event_fast;  // 0 sends every allocation to the slow path
  uint64_t deallocated;
  uint64_t deallocated_next_event_fast;
  Tcache tcache;
  // Cold.
  uint64_t allocated_next_event;    // min of the alloc-side events below
  uint64_t deallocated_next_event;  // min of the dalloc-side events below
  uint64_t gc_next_alloc;           // next cache GC step on the allocation side
  uint64_t gc_next_dalloc;          // ... and on the deallocation side
  uint64_t stats_last;              // allocated at the last stats_interval accounting
  uint64_t peak_next_alloc;         // next thread.peak sample (allocation side)
  uint64_t peak_next_dalloc;        // ... (deallocation side)
  uint64_t peak_alloc_base;         // thread.peak: allocated - deallocated at the last reset
  uint64_t peak_max;
  uint64_t prof_next_sample;  // heap profiling: the allocation crossing it is sampled
  uint64_t prof_prng;         // ... and the state that draws the distance to the next one
  uint64_t prof_counted;      // allocated when the last threshold was drawn (lg_prof_interval)
  uint64_t prof_epoch;  // prof.reset epoch the threshold was drawn in (redrawn when stale);
                        // kTsdProfUnarmed until the first draw
  Arena* arena;
  TsdState state;
  bool tcache_enabled;
  bool prof_armed;  // prof_next_sample drawn (the api layer arms it on the thread's first call)
};

/// Tsd::prof_epoch before the thread's first sample distance is drawn: no prof.reset epoch
/// (a counter from 0) ever equals it, so the allocation slow path's one epoch comparison also
/// catches a thread that is not armed yet.
inline constexpr uint64_t kTsdProfUnarmed = UINT64_MAX;

extern constinit thread_local Tsd t_tsd JE_TLS_IE;

/// Prints statistics for opt.stats_interval (installed by the api layer, which can reach the
/// report; the thread layer only counts bytes).
using StatsIntervalHook = void (*)();
/// Once at library init: the thread-exit hook and the event intervals.
bool tsd_boot(StatsIntervalHook stats_hook);
/// The calling thread's state, set up on first use (the library must be initialized).
Tsd& tsd_fetch();
/// Runs fn(arg) without the calling thread's allocation counters seeing what it allocates and
/// frees (allocations the library makes for itself through the public entry points).
void tsd_call_uncounted(void (*fn)(void*), void* arg);
/// The cache to use now, or nullptr (disabled, exiting thread, or inside a user hook).
Tcache* tsd_tcache(Tsd& tsd);
/// The thread's arena for automatic allocations (bound on first use).
Arena* tsd_arena(Tsd& tsd);
/// thread.arena write: rebind (counts move, the cache follows).
void tsd_set_arena(Tsd& tsd, Arena* arena);
/// thread.tcache.enabled write.
void tsd_set_tcache_enabled(Tsd& tsd, bool enabled);
/// Run due thread events (cache GC, thread.peak samples, stats_interval) after the counters
/// passed a threshold.
void tsd_alloc_event(Tsd& tsd);
void tsd_dalloc_event(Tsd& tsd);
/// thread.peak: fold the current net allocation (allocated - deallocated, counted from the
/// last reset) into the maximum. Runs on the events above every kPeakEventBytes of allocation
/// and of deallocation, and on each thread.peak.read.
void tsd_peak_update(Tsd& tsd);
/// thread.peak.reset: the maximum restarts at 0 from the current net allocation.
void tsd_peak_reset(Tsd& tsd);

/// Bytes between two thread.peak samples on each side (5.3.0's fixed 64 KiB peak event).
inline constexpr uint64_t kPeakEventBytes = 64 * 1024;
/// Called on each thread's exit, before its cache is torn down (the api layer installs the
/// heap profiler's; nullptr: none).
void tsd_set_exit_hook(void (*hook)());
/// Heap profiling: the next sample threshold (one of the allocation-side events).
void tsd_set_prof_next_sample(Tsd& tsd, uint64_t next);
/// Recompute the fast-path thresholds after a state change.
void tsd_recompute_fast(Tsd& tsd);

}  // namespace je
