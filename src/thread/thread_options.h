// thread_options.h: the run-time options of the thread layer, fixed once per process at boot.
//
// Purpose: every MALLOC_CONF value the thread caches (tcache) and the per-thread state (tsd)
// depend on, in one struct. The ctl layer owns the option table (src/ctl/opt.h); src/api/init
// fills a ThreadOptions from it and hands it down through core_boot (CoreConfig::thread), so
// nothing at or below this layer reads the table. The member defaults equal the table's
// defaults (api/init.cc checks that at compile time), so a unit test booting with
// `CoreConfig{}` gets the library's defaults. The thread layer reads percpu_arena, zero and junk
// from the arena layer's options (g_arena_opt), not from copies of its own.
// Layer: thread. Writer: core_boot, once, before tcache_boot and tsd_boot. Readers: tcache.cc
// (geometry at boot; flush and GC sizes on slow paths), tsd.cc (boot, a thread's first call).
// Concurrency: none needed. `g_thread_opt` is written only by core_boot, before any other thread
// can call into the allocator; afterwards it is read-only, so plain loads are race-free and
// exactly as cheap as reading the option table was. No fast path reads it.
// jemalloc mapping: opt_tcache, opt_tcache_max, opt_tcache_nslots_*, opt_lg_tcache_nslots_mul,
// opt_tcache_gc_{incr,delay}_bytes, opt_lg_tcache_flush_{small,large}_div (tcache.c),
// opt_stats_interval (jemalloc.c).
#pragma once

#include <cstddef>
#include <cstdint>

namespace je {

struct ThreadOptions {
  // ---- Thread caches (tcache.cc) ----
  /// opt.tcache: new threads start with their automatic cache on.
  bool tcache = true;
  /// opt.tcache_max: largest cached size (tcache_boot clamps it to kTcacheMaxClassLimit).
  size_t tcache_max = size_t{32} << 10;
  /// opt.tcache_nslots_small_min / _max: bounds of a small bin's capacity.
  unsigned tcache_nslots_small_min = 20;
  unsigned tcache_nslots_small_max = 200;
  /// opt.lg_tcache_nslots_mul: small bin capacity = regions per slab << this (>> if negative).
  int64_t lg_tcache_nslots_mul = 1;
  /// opt.tcache_nslots_large: capacity of each large bin.
  unsigned tcache_nslots_large = 20;
  /// opt.tcache_gc_incr_bytes: bytes between cache GC steps (0 = 64 KiB).
  size_t tcache_gc_incr_bytes = size_t{65536};
  /// opt.tcache_gc_delay_bytes: GC leaves a bin alone until this many bytes would have gone.
  size_t tcache_gc_delay_bytes = 0;
  /// opt.lg_tcache_flush_small_div / _large_div: a full bin keeps ncached_max >> this.
  unsigned lg_tcache_flush_small_div = 1;
  unsigned lg_tcache_flush_large_div = 1;
  /// Ours, opt.tcache_grow_bytes: how far the bins of one automatic cache may grow, in bytes of
  /// capacity beyond 5.3.0's, when bursts outgrow them; 0 = 5.3.0's fixed capacities.
  size_t tcache_grow_bytes = size_t{8} << 20;
  // ---- Per-thread state (tsd.cc) ----
  /// opt.stats_interval: bytes allocated between reports; -1 = no report.
  int64_t stats_interval = -1;

  bool operator==(const ThreadOptions&) const = default;
};

/// The thread layer's options: written by core_boot before any other thread runs, read-only
/// afterwards (see the header comment).
extern constinit ThreadOptions g_thread_opt;

}  // namespace je
