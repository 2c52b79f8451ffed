// core_boot.h: the one boot sequence of the allocator core (everything below the ctl layer).
//
// Purpose: brings up, in their dependency order, the OS page layer (its probes and
// trust_madvise), the user-memory THP policy of the default extent hooks, the global metadata
// base, the small-bin geometry (slab_sizes, bin_shards: fixed before the first arena exists),
// the arena registry with arena 0, the background-thread slots, the thread-cache geometry and
// the per-thread state (exit hook, event intervals, the stats_interval report). The library's
// init and the unit tests both call this, so the order lives in one place only.
// Every run-time option the core depends on comes in the CoreConfig: a few scalars for the
// os/meta/support modules, and one option struct per layer that keeps its options for the life
// of the process (ArenaOptions -> g_arena_opt, ThreadOptions -> g_thread_opt). Nothing at or
// below this layer reads the option table (src/ctl/opt.h). The member defaults equal the
// table's defaults -- src/api/init.cc, which fills a CoreConfig from the table, checks that at
// compile time -- so `CoreConfig{}` boots the library's default configuration.
// Layer: thread (the lowest layer that sees every module booted here). Callers: src/api/init
// (after MALLOC_CONF parsing, with values from g_opt; afterwards conf_adopt_boot_values copies
// the values boot settles -- narenas, oversize_threshold, max_background_threads -- back into
// g_opt for opt.*), unit tests.
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

#include "arena/arena_options.h"
#include "extent/dss.h"
#include "meta/sc.h"
#include "thread/thread_options.h"
#include "thread/tsd.h"

namespace je {

/// opt.thp: the huge page advice the default extent hooks give user memory.
enum class CoreThp : uint8_t { kDefault, kAlways, kNever };

/// opt.bin_shards' default: one bin per small class.
inline constexpr std::array<uint8_t, sc::kNBins> kCoreBinShardsDefault = [] {
  std::array<uint8_t, sc::kNBins> a{};
  for (auto& s : a) s = 1;
  return a;
}();

struct CoreConfig {
  /// opt.abort: abort after reporting a failed OS call (the os layer's only option).
  bool abort = false;
  /// opt.trust_madvise: believe MADV_DONTNEED zeroes pages, skipping the boot probe.
  bool trust_madvise = false;
  /// opt.thp: user-memory huge page advice of the default extent hooks.
  CoreThp thp = CoreThp::kDefault;
  /// opt.slab_sizes: pages per slab of each small class, 0 = the class's default; already
  /// clamped (bin_slab_pages_clamp).
  std::array<uint16_t, sc::kNBins> slab_pages = {};
  /// opt.bin_shards: bins per class in every arena (1..64).
  std::array<uint8_t, sc::kNBins> bin_shards = kCoreBinShardsDefault;
  /// opt.dss: the sbrk precedence of arenas (dss_boot; arena 0 and later ones take it).
  DssPrec dss = DssPrec::kSecondary;
  /// opt.mutex_max_spin, applied only when the machine has more than one CPU (0 otherwise).
  int64_t mutex_max_spin = 600;
  /// The arena layer's options (stored in g_arena_opt); `arena.metadata_thp` also applies to
  /// the global base.
  ArenaOptions arena = {};
  /// The thread layer's options (stored in g_thread_opt).
  ThreadOptions thread = {};
  /// The opt.stats_interval report (the api layer can reach it); nullptr: no report. It only
  /// fires when thread.stats_interval >= 0.
  StatsIntervalHook stats_interval_hook = nullptr;

  bool operator==(const CoreConfig&) const = default;
};

/// Boots the core with `cfg` (see the header comment). True on success; false when the OS
/// refuses memory or a probe fails, leaving the core unusable.
bool core_boot(const CoreConfig& cfg);

/// Whether core_boot has succeeded in this process.
bool core_booted();

}  // namespace je
