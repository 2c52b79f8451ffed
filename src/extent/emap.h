// emap.h: the extent map -- which extent owns a page, and in what state.
//
// Purpose: maps pages to their Edata plus packed metadata (size class, slab bit, extent state,
// head bit), so that `free(p)` finds the size class without touching the Edata, and so that
// coalescing can find and claim free neighbours without holding any lock but its own ecache's.
// Layer: extent. Callers: extent (register, split, merge, neighbours), pac, arena (lookups).
// Concurrency: lookups are lock-free. Writers own the extent: it is active and theirs, or they
// hold the lock of the ecache whose state the extent is in. A neighbour is claimed by a thread
// holding the ecache lock for the expected state: it checks the packed entry alone (state, head
// bit), and only then reads the neighbour's Edata and flips its state to kMerging.
// Invariants: (1) the first and last page of every registered extent map to it; (2) every page
// of a slab maps to it; (3) no other page of an extent has an entry; (4) an entry's state bits
// equal its Edata's `state`.
// jemalloc mapping: emap (src/emap.c) on the rtree; `arena_emap_global`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "extent/edata.h"
#include "extent/rtree.h"

namespace je {

/// Unpacked emap entry.
struct EmapEntry {
  Edata* edata = nullptr;
  szind_t szind = sc::kNSizes;
  ExtentState state = ExtentState::kActive;
  bool is_head = false;
  bool slab = false;
};

class Emap {
 public:
  // Entry layout: bits 0..47 Edata pointer, 48..55 szind, 56..58 state, 59 head, 60 slab.
  static constexpr unsigned kSzindShift = 48;
  static constexpr unsigned kStateShift = 56;
  static constexpr unsigned kHeadShift = 59;
  static constexpr unsigned kSlabShift = 60;
  static constexpr uint64_t kPtrMask = (uint64_t{1} << 48) - 1;

  /// Entry value for `e` from its own fields (szind, state, is_head, slab).
  static uint64_t pack(const Edata* e) {
    return (addr_of(e) & kPtrMask) | (uint64_t{e->szind} << kSzindShift) |
           (uint64_t(e->state) << kStateShift) | (uint64_t{e->is_head} << kHeadShift) |
           (uint64_t{e->slab} << kSlabShift);
  }
  static EmapEntry unpack(uint64_t v) {
    EmapEntry r;
    r.edata = static_cast<Edata*>(ptr_of(v & kPtrMask));
    r.szind = static_cast<szind_t>((v >> kSzindShift) & 0xff);
    r.state = static_cast<ExtentState>((v >> kStateShift) & 0x7);
    r.is_head = (v >> kHeadShift) & 1;
    r.slab = (v >> kSlabShift) & 1;
    return r;
  }

  constexpr Emap() = default;

  /// Edata owning the page of `ptr`, or nullptr (lock-free).
  Edata* lookup(const void* ptr) { return unpack(rtree_.read(addr_of(ptr))).edata; }
  /// Full entry for the page of `ptr` (edata == nullptr when unmapped).
  EmapEntry lookup_entry(const void* ptr) { return unpack(rtree_.read(addr_of(ptr))); }

  /// Map the first and last page of `e` (entries packed from e's fields). False only on
  /// metadata OOM, and then nothing was written.
  bool register_boundary(Edata* e);
  /// Map the interior pages of a slab (all but first and last).
  bool register_interior(Edata* e);
  void deregister_boundary(Edata* e);
  void deregister_interior(Edata* e);
  /// Set e's size class and slab bit and rewrite its boundary entries.
  void remap(Edata* e, szind_t szind, bool slab);
  /// Set `e->state` and the state bits of its boundary entries.
  void update_state(Edata* e, ExtentState state);

  /// Claim the free neighbour after (`forward`) or before `e` if its entry shows `expected`,
  /// it is not separated by a head boundary, and it belongs to the same arena with the same
  /// commit state (unless `expanding`). The caller holds the lock of the `expected` ecache. On
  /// success the neighbour is in state kMerging and belongs to the caller until released.
  Edata* try_acquire_neighbor(Edata* e, ExtentState expected, bool forward, bool expanding);
  /// Give a claimed neighbour back to its ecache state (it never left the eset).
  void release(Edata* e, ExtentState state) { update_state(e, state); }

  /// Split bookkeeping: `lead` (already resized to size_a) keeps its Edata; `trail` describes
  /// the rest. `prepare` creates any missing leaves and may fail (OOM); `commit` cannot fail.
  struct SplitPlan {
    Rtree::Entry* lead_last;
    Rtree::Entry* trail_first;
    Rtree::Entry* trail_last;
  };
  bool split_prepare(SplitPlan* plan, Edata* lead, size_t size_a, Edata* trail, size_t size_b);
  void split_commit(const SplitPlan& plan, Edata* lead, Edata* trail);

  /// Merge bookkeeping: `lead` (lower address) absorbs the adjacent `trail`. Call before
  /// lead->size is updated; it clears the entries that become interior and maps the new end.
  void merge_commit(Edata* lead, Edata* trail);

  Rtree& rtree() { return rtree_; }

 private:
  void write(Rtree::Entry* entry, uint64_t v) { entry->store(v, std::memory_order_release); }

  Rtree rtree_;
};

/// The process-wide extent map (jemalloc's arena_emap_global).
extern constinit Emap g_emap;

}  // namespace je
