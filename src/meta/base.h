// base.h: the metadata allocator (a per-arena bump allocator that never frees).
//
// Purpose: every allocator-internal structure that outlives a single call (arenas, bins' slab
// heaps, edata descriptors, radix-tree nodes, tcaches' bin arrays) is carved from a Base, so the
// allocator never calls malloc for itself and metadata stays apart from user data. Memory is
// obtained in large hugepage-aligned blocks straight from the OS and handed out by bumping a
// pointer; it is returned only when the whole Base is destroyed (a destroyed manual arena).
//
// Layer: meta. Callers: src/extent (edata cache, emap/rtree nodes), src/arena (arena and bin
// structures, one Base per arena), src/thread (tcache storage), src/ctl (stats). Uses src/os/pages
// for blocks and THP advice, src/support/mutex.
//
// Concurrency: one Mutex per Base, rank LockRank::kBase; held for the whole of alloc() (including
// mapping a new block, which calls only the kernel) and stats(). base_global() is lock-free
// (compare-and-swap of a constinit pointer) and safe before main and from several threads.
// destroy() must not race with any other use of the same Base.
//
// Invariants:
//   * Blocks are hugepage-aligned multiples of the hugepage (>= 2 MiB), each larger than the one
//     before (x1.25, rounded up to 2 MiB, or what a large request needs). The Base object sits at
//     the start of its first block; every later block starts with a small Block header.
//   * Handed-out memory is never reused within a Base, so it is always zero-filled (fresh pages).
//   * stats: allocated <= resident <= mapped; all three only grow until destroy().
//
// Reuse of block tails: the Base keeps up to kOpenBlocks (3) blocks "open" and serves each request
// best-fit from them (the one whose remaining room after the request is smallest), so the tails of
// the previous blocks absorb the small requests that follow a block switch. When a new block must
// be mapped it takes the slot of the open block with the least room left; that block's remainder
// is abandoned (counted in mapped, never handed out). jemalloc instead keeps every tail in
// per-size-class heaps; for the allocation mix seen here (mostly small, regular requests) a few
// open blocks recover almost all of it at a fraction of the bookkeeping.
//
// jemalloc mapping: src/base.c (base_t, base_new, base_alloc, base_delete, base_stats_get,
// base_prefork/postfork_*; b0get()). Feeds stats.metadata / stats.arenas.<i>.base (allocated),
// stats.resident and stats.arenas.<i>.resident (resident), stats.mapped (mapped) and
// stats.metadata_thp / stats.arenas.<i>.metadata_thp (n_thp x hugepage), and its mutex
// stats.arenas.<i>.mutexes.base (arena 0: with the global base's). opt.metadata_thp selects
// MetadataThp. Documented difference: blocks come from pages::map directly, not through the
// arena's extent hooks (5.3.0's arenas.create calls the hooks), so custom extent hooks never see
// metadata blocks -- except for an arena made by experimental.arenas_create_ext with
// metadata_use_hooks, whose Base maps and unmaps its blocks through the given hooks (called with
// the thread marked reentrant, under the Base mutex, as 5.3.0 calls them).
#pragma once

#include <cstddef>
#include <cstdint>

#include "support/mutex.h"

struct extent_hooks_s;  // <jemalloc/jemalloc.h>'s extent_hooks_t

namespace je {

/// opt.metadata_thp. MADV_HUGEPAGE is only ever given when the system THP mode is "madvise"
/// (pages::ThpMode::kDefault), as in jemalloc: under "always" the kernel already uses hugepages
/// and under "never" the advice would be ignored.
///   kDisabled: never advise.
///   kAuto: advise from the 2nd block on (the 5th for the global base, ind 0); at the switch the
///          earlier blocks are advised too.
///   kAlways: advise every block.
enum class MetadataThp : uint8_t { kDisabled, kAuto, kAlways };

class Base {
 public:
  /// Counters reported to stats (bytes, except n_thp).
  struct Stats {
    size_t allocated;  // bytes handed out, including the Base object and block headers
    size_t resident;   // estimate: page-ceiling of each block's used prefix
    size_t mapped;     // total size of all blocks
    size_t n_thp;      // estimate: hugepages touched in blocks advised MADV_HUGEPAGE
  };

  /// Maps a first block (2 MiB) and builds the Base at its start. `ind` is the owning arena's
  /// index (0 = the global base). `hooks` non-null: every block comes from (and goes back to)
  /// these extent hooks instead of the OS. Returns nullptr when no memory is given.
  static Base* create(unsigned ind, MetadataThp thp, extent_hooks_s* hooks = nullptr);

  /// Returns `size` zero-filled bytes aligned to `alignment` (a power of two; values below the
  /// quantum are raised to it; at most config::kPage is supported by contract, larger powers of
  /// two up to the hugepage work too). Never freed. nullptr on OOM or a nonsensical size.
  /// Thread-safe.
  void* alloc(size_t size, size_t alignment);

  /// A consistent snapshot of the counters. Thread-safe.
  Stats stats();
  /// Counters of this Base's mutex (stats.arenas.<i>.mutexes.base), read under it;
  /// reset_mutex_stats zeroes them (stats.mutexes.reset). Thread-safe.
  MutexStats mutex_stats();
  void reset_mutex_stats();

  /// Unmaps every block, including the one holding this object: the Base is gone afterwards.
  /// The caller guarantees no other thread uses it any more.
  void destroy();

  /// The owning arena's index (0 for the global base).
  unsigned ind() const { return ind_; }

  /// Fork protocol (see Mutex): called by the atfork handlers in rank order.
  void prefork();
  void postfork_parent();
  void postfork_child();

  Base(const Base&) = delete;
  Base& operator=(const Base&) = delete;

 private:
  // A mapped block: [start, end) with the used prefix [start, bump).
  struct Block {
    Block* next;  // older block (list is newest first, ending at the first block)
    uintptr_t start;
    uintptr_t bump;
    uintptr_t end;
    bool huge;  // advised MADV_HUGEPAGE
  };
  static constexpr unsigned kOpenBlocks = 3;

  Base(unsigned ind, MetadataThp thp, extent_hooks_s* hooks, uintptr_t start, size_t size);
  // A block of `size` bytes, hugepage aligned, committed and zero-filled: from the OS, or from
  // `hooks` when non-null. unmap_block gives one back the same way.
  static void* map_block(extent_hooks_s* hooks, unsigned ind, size_t size);
  static void unmap_block(extent_hooks_s* hooks, unsigned ind, void* addr, size_t size);
  bool thp_madvise_allowed() const;
  void advise_huge(Block* b);
  Block* new_block(size_t usize, size_t alignment);
  void* carve(Block* b, uintptr_t at, size_t usize);

  Mutex mtx_{LockRank::kBase, "base"};
  unsigned ind_;
  MetadataThp thp_;
  extent_hooks_s* hooks_;  // nullptr: blocks from the OS
  bool auto_thp_switched_ = false;
  unsigned n_blocks_ = 1;
  size_t last_block_size_;
  Block first_;    // the block this object lives in
  Block* blocks_;  // newest first
  Block* open_[kOpenBlocks] = {};
  Stats stats_{};
};

/// The global base "b0" (ind 0), backing metadata not owned by any one arena (the radix tree,
/// arena 0's bootstrap structures). Created on the first call with `thp_if_created` (later calls
/// ignore the argument); safe to call concurrently and before main. nullptr only if the very
/// first creation fails for lack of memory (a later call retries).
Base* base_global(MetadataThp thp_if_created = MetadataThp::kDisabled);

}  // namespace je
