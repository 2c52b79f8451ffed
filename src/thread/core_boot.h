// core_boot.h: the one boot sequence of the allocator core (everything below the ctl layer).
//
// Purpose: brings up, in their dependency order, the OS page layer (its probes and
// trust_madvise), the user-memory THP policy of the default extent hooks, the global metadata
// base, the small-bin geometry (slab_sizes, bin_shards: fixed before the first arena exists),
// the arena registry with arena 0, the background-thread slots, the thread-cache geometry and
// the per-thread state (exit hook, event intervals, the stats_interval report). The library's
// init and the unit tests both call this, so the order lives in one place only.
// The values that init passes explicitly come in a CoreConfig whose defaults are the option
// table's defaults; the modules read everything else (narenas, tcache_max, decay times, ...)
// from g_opt themselves, so callers that want other values there write g_opt first.
// Layer: thread (the lowest layer that sees every module booted here). Callers: src/api/init
// (after MALLOC_CONF parsing, with values from g_opt), unit tests (default config).
// Concurrency: not synchronized. The caller guarantees that no other thread calls into the core
// until this returns (init holds its init mutex; a test boots from its main thread).
// Invariants: idempotent per process -- after one successful call, later calls return true at
// once and ignore their config (the first config wins). A failed call is not recorded: a later
// call (a retried malloc_init) runs the sequence again, as init did before this module existed.
// jemalloc mapping: the boot part of malloc_init_hard (malloc_init_hard_a0_locked and
// malloc_init_hard_finish in src/jemalloc.c), without option parsing and fork handlers.
#pragma once

#include <array>
#include <cstdint>

#include "meta/sc.h"
#include "support/opt.h"
#include "thread/tsd.h"

namespace je {

static_assert(kOptNBins == sc::kNBins, "per-bin options must cover every small bin");

/// The option table's defaults, for CoreConfig's members.
inline constexpr Options kCoreOptDefaults{};

struct CoreConfig {
  /// opt.trust_madvise: believe MADV_DONTNEED zeroes pages, skipping the boot probe.
  bool trust_madvise = kCoreOptDefaults.trust_madvise;
  /// opt.thp: user-memory huge page advice of the default extent hooks.
  ThpOpt thp = kCoreOptDefaults.thp_mode;
  /// opt.metadata_thp for the global base (arena bases read g_opt when they are created).
  MetadataThpMode metadata_thp = kCoreOptDefaults.metadata_thp_mode;
  /// opt.slab_sizes: pages per slab of each small class, 0 = the class's default; already
  /// clamped (bin_slab_pages_clamp).
  std::array<uint16_t, kOptNBins> slab_pages = kCoreOptDefaults.slab_sizes;
  /// opt.bin_shards: bins per class in every arena (1..kOptBinShardsMax).
  std::array<uint8_t, kOptNBins> bin_shards = kCoreOptDefaults.bin_shards;
  /// opt.mutex_max_spin, applied only when the machine has more than one CPU (0 otherwise).
  int64_t mutex_max_spin = kCoreOptDefaults.mutex_max_spin;
  /// The opt.stats_interval report (the api layer can reach it); nullptr: no report. It only
  /// fires when g_opt.stats_interval >= 0.
  StatsIntervalHook stats_interval_hook = nullptr;
};

/// Boots the core with `cfg` (see the header comment). True on success; false when the OS
/// refuses memory or a probe fails, leaving the core unusable.
bool core_boot(const CoreConfig& cfg);

/// Whether core_boot has succeeded in this process.
bool core_booted();

}  // namespace je
