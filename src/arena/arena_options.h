// arena_options.h: the run-time options of the arena layer, fixed once per process at boot.
//
// Purpose: every MALLOC_CONF value the arena layer (arenas, Arena, the allocation policy of
// large.h, background threads) and the page allocators it creates depend on, in one struct. The ctl
// layer owns the option table (src/ctl/opt.h); src/api/init fills an ArenaOptions from it and hands
// it down through core_boot (CoreConfig::arena), so nothing at or below this layer reads the table.
// The member defaults equal the table's defaults (api/init.cc checks that at compile time), so a
// unit test booting with `CoreConfig{}` gets the library's defaults.
// Layer: arena. Writers: arenas_boot (copies the boot value in, then settles `narenas` and
// `oversize_threshold`), background_thread_boot (settles `max_background_threads`). Readers: the
// arena layer (large.h's fills on the allocation paths), the thread layer (percpu, and zero/junk
// for the fast-path decision), ctl (the settled values, for `opt.*`).
// Concurrency: none needed. `g_arena_opt` is written only by core_boot, before any other thread can
// call into the allocator; afterwards it is read-only, so plain loads are race-free and exactly as
// cheap as reading the option table was.
// Defaults that change at run time (arenas.dirty_decay_ms, arenas.muzzy_decay_ms, ours
// arenas.bounded_coalesce, seeded by placement.bounded_coalesce) are not read from here after
// boot: arenas_boot seeds atomics in
// arenas.cc with these values, and ctl writes those atomics.
// jemalloc mapping: opt_narenas, opt_percpu_arena, opt_oversize_threshold, opt_retain,
// opt_lg_extent_max_active_fit, opt_{dirty,muzzy}_decay_ms, opt_metadata_thp,
// opt_max_background_threads, opt_zero, opt_junk_alloc / opt_junk_free (arena.c, jemalloc.c, pa.c,
// extent.c, base.c, background_thread.c).
#pragma once

#include <cstddef>
#include <cstdint>

#include "extent/hold.h"
#include "extent/placement.h"
#include "meta/base.h"
#include "support/config.h"

namespace je {

/// percpu_arena: how threads are spread over the automatic arenas.
enum class PercpuArena : uint8_t {
  kDisabled,  ///< least loaded arena, bound for the thread's life
  kPercpu,    ///< the arena of the CPU the thread runs on
  kPhycpu,    ///< the same, hyperthread pairs sharing one arena
};

/// `max_background_threads` above this means "not set": background_thread_boot then uses
/// kMaxBackgroundThreadsDefault (opt.max_background_threads shows the result).
inline constexpr size_t kMaxBackgroundThreadsLimit = 4095;
inline constexpr size_t kMaxBackgroundThreadsDefault = 4;

struct ArenaOptions {
  // ---- The registry (arenas.cc) ----
  /// opt.narenas: automatic arenas; 0 = narenas_ratio x CPUs (arenas_boot stores the result).
  unsigned narenas = 0;
  /// opt.narenas_ratio: automatic arenas per CPU, 16.16 fixed point.
  uint32_t narenas_ratio = uint32_t{4} << 16;
  /// opt.percpu_arena.
  PercpuArena percpu = PercpuArena::kDisabled;
  /// opt.oversize_threshold: large requests from this size on go to the huge arena; arenas_boot
  /// stores 0 when the value names no large size class (no huge arena).
  size_t oversize_threshold = size_t{8} << 20;
  /// opt.dirty_decay_ms / opt.muzzy_decay_ms: the initial values of the run-time defaults
  /// arenas.dirty_decay_ms, arenas.muzzy_decay_ms.
  int64_t dirty_decay_ms = 10000;
  int64_t muzzy_decay_ms = 0;
  /// Ours: where every arena carves extents (extent/placement.h; placement.bounded_coalesce
  /// seeds the run-time default arenas.bounded_coalesce) and when freed pages go back
  /// (extent/hold.h, doc/design/memory-return.md). Read here, whole, by every arena.
  Placement placement;
  ReturnPolicy policy;
  // ---- Every arena's page allocator (PacOptions) and metadata ----
  /// opt.retain: keep unused virtual memory instead of unmapping it.
  bool retain = true;
  /// opt.lg_extent_max_active_fit.
  size_t lg_extent_max_active_fit = 6;
  /// opt.metadata_thp: huge pages for metadata, of the global base and of every arena's base.
  MetadataThp metadata_thp = MetadataThp::kDisabled;
  // ---- Fills (large.h) ----
  /// opt.zero: every new block zeroed; opt.junk, allocation and free halves. Any of them also
  /// sends every call of every thread to the slow path (tsd_recompute_fast).
  bool zero = false;
  bool junk_alloc = config::kDebug;  // opt.junk: "true" by default in debug builds, as 5.3.0
  bool junk_free = config::kDebug;
  // ---- Misuse checks (src/api/alloc_path, bin.h) ----
  /// Ours, opt.safety_checks (always on in debug builds): detect double, size-mismatched,
  /// invalid and interior frees and, with junk_free, writes to freed small blocks; report with
  /// one line and abort. Like junk, sends every call of every thread to the slow path.
  bool safety_checks = config::kDebug;
  // ---- Background threads (background_thread.cc) ----
  /// opt.max_background_threads; above kMaxBackgroundThreadsLimit = not set (boot stores 4).
  size_t max_background_threads = kMaxBackgroundThreadsLimit + 1;

  bool operator==(const ArenaOptions&) const = default;
};

/// The arena layer's options: written by core_boot (arenas_boot, background_thread_boot) before
/// any other thread runs, read-only afterwards (see the header comment).
extern constinit ArenaOptions g_arena_opt;

}  // namespace je
