// bin_info.h: the run-time geometry of the small bins, and each thread's bin shard.
//
// Purpose: sc::kBinInfo is the default geometry (slabs of LCM(page, region) bytes, one bin per
// class). Two options change it at boot, before the first arena exists: `slab_sizes` (pages per
// slab of a class: more regions per slab, possibly a tail no region uses) and `bin_shards` (how
// many independent bins, each with its own lock, every arena keeps for a class). From then on
// every slab, bin and thread-cache computation reads this table, never sc::kBinInfo.
// A thread picks one shard per class when it first binds to an arena (a per-arena ticket modulo
// the class's shard count, so the threads of an arena spread evenly over the shards); it keeps
// those choices for every arena it later allocates from. A thread that never bound uses shard 0.
// Layer: arena. Callers: init (bin_info_boot), slab/bin/arena code, arenas (binding), the thread
// cache geometry, ctl (arenas.bin.<j>.*, per-shard stats merging).
// Concurrency: g_bin_geo is written once by bin_info_boot during single-threaded library init and
// only read afterwards; t_bin_shards is thread-local.
// Invariants: 1 <= nregs <= kSlabMaxRegs; nregs * reg_size <= slab_size; slab_size is a page
// multiple; 1 <= nshards <= kOptBinShardsMax; shard_base is the prefix sum of nshards and
// g_nbins_total their sum; t_bin_shards.shard[i] < g_bin_geo[i].nshards.
// jemalloc mapping: bin_info_t / bin_infos[] and bin_info_boot (src/bin_info.c),
// sc_data_update_slab_size (src/sc.c), bin_update_shard_size (src/bin.c), tsd_binshards and the
// shard choice in arena_bind (src/jemalloc.c); arenas.bin.<j>.{nregs,slab_size,nshards}.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "extent/edata.h"
#include "meta/sc.h"
#include "support/compiler.h"

namespace je {

struct BinGeometry {
  uint32_t reg_size;
  uint32_t nregs;
  uint32_t slab_size;
  uint32_t nshards;
  uint32_t shard_base;  // where this class's shard 0 sits in an arena's bin array
  uint64_t div_magic;   // ceil(2^kDivShift / reg_size): region index by one multiplication
};

/// regind = (offset * div_magic) >> kDivShift is exact for every byte of every region while
/// offset * (div_magic * reg_size - 2^kDivShift) < 2^kDivShift, i.e. offset * reg_size <
/// 2^kDivShift: slabs reach 7 pages of 64 KiB (< 2^19) and regions 2^18, so 2^40 leaves room,
/// and offset * div_magic < 2^19 * 2^37 fits 64 bits. (2^32, enough with 4 KiB pages, is not
/// with 64 KiB pages.)
inline constexpr unsigned kDivShift = 40;

/// Indexed by szind_t < sc::kNBins. Holds the default geometry until bin_info_boot runs.
extern std::array<BinGeometry, sc::kNBins> g_bin_geo;
/// Bins an arena has: the sum of every class's shard count.
extern unsigned g_nbins_total;

/// Once, at library init, before any arena or thread cache exists. `slab_pages[i]` is class i's
/// slab size in pages (0 keeps the default), already clamped to what the class can use (see
/// bin_slab_pages_clamp); `nshards[i]` its shard count (1..64).
void bin_info_boot(const uint16_t* slab_pages, const uint8_t* nshards);

/// The page count `slab_sizes` gives class `binind` for a requested `pages`: at least one
/// region's worth, at most kSlabMaxRegs regions (sc_data_update_slab_size's clamp).
size_t bin_slab_pages_clamp(szind_t binind, size_t pages);

/// The calling thread's shard of every class.
struct ThreadBinShards {
  bool assigned;
  uint8_t shard[sc::kNBins];
};
extern constinit thread_local ThreadBinShards t_bin_shards JE_TLS_IE;

/// First binding of the calling thread to an arena: shard[i] = ticket % nshards(i). Later
/// bindings (thread.arena, percpu migration) keep the first choice, as 5.3.0 does.
inline void bin_shards_bind(unsigned ticket) {
  ThreadBinShards& t = t_bin_shards;
  if (t.assigned) return;
  for (unsigned i = 0; i < sc::kNBins; i++) {
    t.shard[i] = static_cast<uint8_t>(ticket % g_bin_geo[i].nshards);
  }
  t.assigned = true;
}

}  // namespace je
