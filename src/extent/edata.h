// edata.h: the extent descriptor.
//
// Purpose: one Edata describes one contiguous, page-aligned run of virtual memory owned by an
// arena: an active allocation (a large block or a slab of small regions), or a free extent
// sitting in one of the arena's ecaches (dirty, muzzy, retained).
// Layer: extent. Callers: every module of the page allocator, arena (large/bin) code.
// Concurrency: an Edata is owned by whoever took it out of an ecache (state kActive or
// kTransition), or by the ecache whose lock guards it (kDirty/kMuzzy/kRetained). A neighbour found
// through the emap may only be dereferenced after its rtree entry shows the expected state (see
// emap.h); claiming it flips the state to kMerging.
// Invariants: addr/size are page multiples except that an active large extent's `addr` may carry
// the cache-oblivious offset (< one page) -- `base()` strips it. Descriptors come from the
// EdataCache (metadata from base) and are never freed to the OS while the arena lives.
// jemalloc mapping: edata_t (include/jemalloc/internal/edata.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "meta/sc.h"
#include "support/ph.h"
#include "support/ql.h"
#include "support/util.h"

namespace je {

/// Where an extent is. Values fit in 3 bits (they are packed into emap entries).
enum class ExtentState : uint8_t {
  kActive = 0,      // owned by an allocation (or by a thread operating on it)
  kDirty = 1,       // free, pages still hold data (resident)
  kMuzzy = 2,       // free, MADV_FREE'd: the kernel may reclaim the pages lazily
  kRetained = 3,    // free, purged (MADV_DONTNEED): address space kept, no RSS
  kTransition = 4,  // being moved between states by the thread that took it
  kMerging = 5,     // claimed as a neighbour by a coalescing thread
};

const char* extent_state_name(ExtentState s);

/// Slab metadata: one bit per region (set = free) for slabs of up to sc::kSlabMaxRegs regions
/// (a page of 8-byte regions: 512 with 4 KiB pages, 8192 with 64 KiB pages).
inline constexpr size_t kSlabMaxRegs = sc::kSlabMaxRegs;
inline constexpr size_t kSlabBitmapWords = kSlabMaxRegs / 64;

struct Edata {
  void* addr = nullptr;  // start; for active large extents the (randomized) user address
  size_t size = 0;       // bytes, a page multiple
  uint64_t sn = 0;       // serial number: lower = older mapping; split keeps it, merge takes min
  uint16_t arena_ind = 0;
  uint8_t szind = sc::kNSizes;  // size class of an active allocation; kNSizes when none
  ExtentState state = ExtentState::kActive;
  bool slab = false;      // a slab of small regions (all pages registered in the emap)
  bool committed = true;  // backed by commit charge (always true where the OS overcommits)
  bool zeroed = false;    // known to be all zero (fresh mapping or purged with DONTNEED)
  bool is_head = false;   // first extent of a region obtained from the OS: merges never cross it
  uint16_t nfree = 0;     // slab: free regions
  uint8_t binshard = 0;
  bool cached = false;  // in its arena's small extent cache (Sec, ours); read via atomic_ref

  PhLink<Edata> ph_link;  // eset size-class heap, or a bin's non-full slab heap
  QlLink<Edata> ql_link;  // eset LRU, edata cache free list, purge stash, large/slab lists

  uint64_t slab_bitmap[kSlabBitmapWords] = {};

  // Heap profiling: the sample record of a sampled allocation (a large extent, possibly
  // promoted from a small class, see src/api/alloc_path.cc); nullptr for every other extent.
  void* prof_rec = nullptr;

  void* base() const { return ptr_of(page_floor(addr_of(addr))); }
  uintptr_t base_addr() const { return page_floor(addr_of(addr)); }
  uintptr_t past_addr() const { return base_addr() + size; }
  void* past() const { return ptr_of(past_addr()); }
  uintptr_t last_page_addr() const { return past_addr() - config::kPage; }
  size_t npages() const { return size >> config::kLgPage; }

  /// Reset all fields for a freshly described extent.
  void init(unsigned arena, void* a, size_t sz, bool is_slab, szind_t ind, uint64_t serial,
            ExtentState st, bool is_zeroed, bool is_committed, bool head) {
    addr = a;
    size = sz;
    sn = serial;
    arena_ind = static_cast<uint16_t>(arena);
    szind = static_cast<uint8_t>(ind);
    state = st;
    slab = is_slab;
    committed = is_committed;
    zeroed = is_zeroed;
    is_head = head;
    nfree = 0;
    binshard = 0;
    prof_rec = nullptr;
    ph_link = {};
    ql_link = {};
  }
};

/// Order used by esets and slab heaps: serial number (age), then address. Lower is preferred:
/// it keeps allocations packed into the oldest, most likely resident memory.
struct EdataSnAddrLess {
  bool operator()(const Edata* a, const Edata* b) const {
    if (a->sn != b->sn) return a->sn < b->sn;
    return a->base_addr() < b->base_addr();
  }
};

using EdataHeap = PairingHeap<Edata, &Edata::ph_link, EdataSnAddrLess>;
using EdataList = IntrusiveList<Edata, &Edata::ql_link>;

}  // namespace je
